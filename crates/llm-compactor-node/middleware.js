// The Vercel AI SDK adapter: a language-model middleware that keeps every request's
// prompt inside the budget.
//
//   const model = wrapLanguageModel({ model: openai('gpt-4.1'), middleware: compactorMiddleware({ budget: 32_000 }) })
//
// `transformParams` counts the prompt (the SDK's `LanguageModelV2Prompt`, read by
// aisdk.js) and, over the trigger, runs a pass (`compact`, off the event loop): the
// prompt the model gets keeps the SDK's tool-call / tool-result pairing, and the pass's
// result (tokens, summary, receipt) is exposed on that call's provider metadata under
// `compactor`. The SDK resends its whole, uncompacted history at every step; the
// middleware remembers its last output and, when a prompt extends the prompt it
// compacted, sends that output plus the new messages, so the summary stays the same
// (the prompt cache keeps its prefix) until the next pass is due. A prompt that does not
// extend it (another conversation) is taken as it comes: every call is correct alone.
'use strict'

const { compact, countTokens } = require('./core')

const DEFAULT_BUDGET = 128_000
const DEFAULT_TRIGGER = 0.7

/** What a call's provider metadata says: the request's tokens and the pass, if one ran. */
function metadata(tokens, result) {
  const pass = result
    ? {
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        dropped: result.dropped,
        summary: result.summary,
        fallback: result.fallback,
        exhausted: result.exhausted,
        summarizer: result.summarizer ?? null,
        elisions: result.elisions.length,
        receipt: result.receipt ?? null,
      }
    : null
  return { requestTokens: tokens, pass }
}

/**
 * A `LanguageModelV2Middleware` that compacts the prompt: options as `compact`'s (budget,
 * summarizer, ...), `format` excepted.
 */
function compactorMiddleware(options = {}) {
  const { format: _, ...compactOptions } = options
  const budget = compactOptions.budget ?? DEFAULT_BUDGET
  const ratio = compactOptions.triggerRatio ?? DEFAULT_TRIGGER
  const count = { format: 'ai-sdk', ...(compactOptions.counter ? { counter: compactOptions.counter } : {}) }
  // The request's tool declarations take room in the window too: the prompt gets what
  // they leave (counted as the JSON the provider receives, as a system text).
  const toolTokens = (tools) =>
    Array.isArray(tools) && tools.length > 0
      ? countTokens([{ role: 'system', content: JSON.stringify(tools) }], count)
      : 0
  // The last prompt compacted (its JSON and length) and what was sent for it.
  let last = null
  const passes = new WeakMap()

  return {
    middlewareVersion: 'v2',

    async transformParams({ params }) {
      const prompt = params.prompt
      let working = prompt
      if (last && prompt.length >= last.length && JSON.stringify(prompt.slice(0, last.length)) === last.json) {
        working = last.sent.concat(prompt.slice(last.length))
      }
      let tokens = countTokens(working, count)
      let result = null
      // Declarations over the whole budget leave nothing to fit: the prompt still gets the
      // smallest budget a pass accepts (256 tokens), and the provider says what it says.
      const room = Math.max(Math.min(256, budget), budget - toolTokens(params.tools))
      if (tokens > room * ratio) {
        result = await compact(working, { ...compactOptions, budget: room, format: 'ai-sdk' })
        working = result.messages
        tokens = result.tokensAfter
      }
      if (working !== prompt) last = { length: prompt.length, json: JSON.stringify(prompt), sent: working }
      const transformed = { ...params, prompt: working }
      passes.set(transformed, metadata(tokens, result))
      return transformed
    },

    async wrapGenerate({ doGenerate, params }) {
      const generated = await doGenerate()
      const compactor = passes.get(params)
      if (!compactor) return generated
      return { ...generated, providerMetadata: { ...(generated.providerMetadata || {}), compactor } }
    },

    async wrapStream({ doStream, params }) {
      const streamed = await doStream()
      const compactor = passes.get(params)
      if (!compactor) return streamed
      const stream = streamed.stream.pipeThrough(
        new TransformStream({
          transform(chunk, controller) {
            if (chunk.type === 'finish') {
              controller.enqueue({ ...chunk, providerMetadata: { ...(chunk.providerMetadata || {}), compactor } })
            } else {
              controller.enqueue(chunk)
            }
          },
        })
      )
      return { ...streamed, stream }
    },
  }
}

module.exports = { compactorMiddleware, metadata }
