// The LangChain.js adapter: an agent middleware (langchain v1's `createMiddleware`), the
// JS counterpart of the Python `llm_compactor.langchain.CompactorMiddleware`.
//
//   const { compactorMiddleware } = require('llm-compactor/langchain')
//   const agent = createAgent({ model, tools, middleware: [compactorMiddleware({ budget: 16_000 })] })
//
// `beforeModel`: over the trigger, the state's messages (read by langchain-messages.js)
// are compacted by the core (off the event loop) and replace the state's: unchanged
// messages are kept as they were (ids, metadata), the middle becomes one summary message
// (a `HumanMessage` starting with the summary header), no tool call is separated from
// its result. The summary stays in the state, so later calls extend it until the next
// pass is due. `wrapModelCall`: the model's answer carries, in its
// `response_metadata.compactor`, the request's tokens and the pass (with its receipt)
// that the call follows, as the AI SDK middleware's provider metadata does. Messages of a
// type the compactor does not read leave the state as it is.
'use strict'

const { randomUUID } = require('node:crypto')
const { compact, countTokens } = require('./core')
const { UnsupportedInputError } = require('./errors')
const { toOpenAI, fromOpenAI } = require('./langchain-messages')
const { metadata } = require('./middleware')

const DEFAULT_BUDGET = 128_000
const DEFAULT_TRIGGER = 0.7
const REMOVE_ALL_MESSAGES = '__remove_all__'

/** LangGraph's "remove every message" marker (its own constant when it resolves). */
function removeAllId() {
  try {
    return require('@langchain/langgraph').REMOVE_ALL_MESSAGES || REMOVE_ALL_MESSAGES
  } catch {
    return REMOVE_ALL_MESSAGES
  }
}

/** `f()`, or null when it refuses a message the compactor does not read. */
function unsupported(f) {
  try {
    return f()
  } catch (e) {
    if (e instanceof UnsupportedInputError) return null
    throw e
  }
}

/** The request's messages with its system prompt first, as the model gets them. */
function requestMessages(request) {
  const system = request.systemMessage ?? (request.systemPrompt ? { role: 'system', content: request.systemPrompt } : null)
  return system ? [system, ...request.messages] : request.messages
}

/**
 * A langchain v1 agent middleware that keeps the agent's messages inside `budget`:
 * options as `compact`'s (budget, summarizer, ...), `format` and `system` excepted.
 * `lastResult` is the last pass's result and `compactions` how many passes ran.
 */
function compactorMiddleware(options = {}) {
  const { createMiddleware, HumanMessage, AIMessage, ToolMessage, SystemMessage } = require('langchain')
  const { RemoveMessage } = require('@langchain/core/messages')
  const lc = { HumanMessage, AIMessage, ToolMessage, SystemMessage }
  const { format: _f, system: _s, ...compactOptions } = options
  const budget = compactOptions.budget ?? DEFAULT_BUDGET
  const trigger = budget * (compactOptions.triggerRatio ?? DEFAULT_TRIGGER)
  const count = { format: 'openai', ...(compactOptions.counter ? { counter: compactOptions.counter } : {}) }
  const removeAll = removeAllId()
  // Each pass's metadata, by the id of a message it wrote, until a model call sends it.
  const pending = new Map()
  const stats = { lastResult: null, compactions: 0 }

  const middleware = createMiddleware({
    name: 'CompactorMiddleware',

    beforeModel: async (state) => {
      const messages = state.messages
      const wire = unsupported(() => toOpenAI(messages))
      if (!wire || countTokens(wire, count) <= trigger) return undefined
      const result = await compact(wire, { ...compactOptions, format: 'openai' })
      if (result.tokensAfter >= result.tokensBefore) return undefined
      const out = fromOpenAI(result.messages, messages, lc)
      const id = `compactor-${randomUUID()}`
      const written = out.map((m, k) => {
        if (messages.includes(m)) return m
        m.id = `${id}-${k}`
        return m
      })
      const tag = written.find((m) => typeof m.id === 'string' && m.id.startsWith(id))
      if (tag) pending.set(tag.id, result)
      stats.lastResult = result
      stats.compactions += 1
      return { messages: [new RemoveMessage({ id: removeAll }), ...written] }
    },

    wrapModelCall: async (request, handler) => {
      const response = await handler(request)
      let pass = null
      for (const m of request.messages) {
        if (m && typeof m.id === 'string' && pending.has(m.id)) {
          pass = pending.get(m.id)
          pending.delete(m.id)
          break
        }
      }
      const wire = unsupported(() => toOpenAI(requestMessages(request)))
      if (wire && response && typeof response === 'object' && 'response_metadata' in response) {
        const tokens = countTokens(wire, count)
        response.response_metadata = { ...(response.response_metadata || {}), compactor: metadata(tokens, pass) }
      }
      return response
    },
  })
  Object.defineProperties(middleware, {
    lastResult: { get: () => stats.lastResult, enumerable: false },
    compactions: { get: () => stats.compactions, enumerable: false },
  })
  return middleware
}

module.exports = { compactorMiddleware }
