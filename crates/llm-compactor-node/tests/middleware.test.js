// The Vercel AI SDK middleware with the real SDK (`ai`, `@ai-sdk/openai-compatible`,
// installed from the committed lock file) against a scripted OpenAI-compatible server on
// 127.0.0.1: a 60-round tool loop in which no request is over the budget, no tool result
// is orphaned, summaries reach the model and every pass's receipt is exposed.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
// Required, not optional: a missing SDK fails the test (scripts/node-package.sh installs it).
const { generateText, streamText, wrapLanguageModel, tool, jsonSchema, stepCountIs } = require('ai')
const { createOpenAICompatible } = require('@ai-sdk/openai-compatible')
const { compactorMiddleware, countTokens } = require('..')
const { scriptedServer, orphans } = require('./scripted-server')

const ROUNDS = 60
const SUMMARY = '[Summary of the earlier conversation'

const shell = tool({
  description: 'Run a shell command',
  inputSchema: jsonSchema({ type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] }),
  execute: async ({ cmd }) => `$ ${cmd}\n` + `${cmd}: a line of output that the agent read\n`.repeat(40),
})

async function run(stream, tools = { shell }) {
  const server = await scriptedServer(ROUNDS)
  const budget = 6000
  try {
    const provider = createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'test' })
    const model = wrapLanguageModel({ model: provider.chatModel('scripted-model'), middleware: compactorMiddleware({ budget }) })
    const prompt = {
      model,
      tools,
      stopWhen: stepCountIs(ROUNDS + 5),
      system: 'You are a coding agent.',
      prompt: 'Make the build green. Always run pytest -x before committing.',
    }
    let steps
    if (stream) {
      const result = streamText(prompt)
      steps = await result.steps
    } else {
      steps = (await generateText(prompt)).steps
    }
    assert.equal(server.requests.length, ROUNDS + 1, 'the loop ran its 60 tool rounds and the answer')
    assert.equal(steps.length, ROUNDS + 1)
    // What the window holds: the messages and the tool declarations sent with them.
    const declared = (r) => (r.tools && r.tools.length ? countTokens([{ role: 'system', content: JSON.stringify(r.tools) }]) : 0)
    const tokens = server.requests.map((r) => countTokens(r.messages) + declared(r))
    assert.deepEqual(tokens.filter((t) => t > budget), [], 'no request over the budget')
    assert.ok(Math.max(...tokens) > budget * 0.5, 'the budget was reached (the test can fail)')
    for (const r of server.requests) assert.deepEqual(orphans(r.messages), [])
    const summarized = server.requests.filter((r) => r.messages.some((m) => typeof m.content === 'string' ? m.content.includes(SUMMARY) : JSON.stringify(m.content || '').includes(SUMMARY)))
    assert.ok(summarized.length >= ROUNDS / 2, `${summarized.length} requests carried a summary`)
    assert.ok(summarized.at(-1).messages.some((m) => JSON.stringify(m.content || '').includes('Always run pytest -x')))
    // Every step says what was sent; the steps that ran a pass carry its receipt.
    const metas = steps.map((s) => s.providerMetadata && s.providerMetadata.compactor)
    assert.ok(metas.every((m) => m && m.requestTokens <= budget), JSON.stringify(metas.find((m) => !m || m.requestTokens > budget)))
    const toolRoom = declared(server.requests[0])
    const passes = metas.filter((m) => m.pass)
    assert.ok(passes.length >= 2, `${passes.length} passes`)
    for (const m of passes) {
      assert.ok(m.pass.receipt && typeof m.pass.receipt.netCost === 'number', JSON.stringify(m.pass))
      assert.ok(m.pass.tokensAfter < m.pass.tokensBefore, JSON.stringify({ ...m.pass, receipt: null }).slice(0, 400))
      // A pass summarizes, or (the cheaper one, first) stubs old tool results.
      assert.ok(m.pass.summary.startsWith(SUMMARY) || (m.pass.summary === '' && m.pass.elisions > 0))
    }
    assert.ok(passes.some((m) => m.pass.summary.startsWith(SUMMARY)), 'a pass summarized')
    // Between passes the summary is the same text (a stable prefix for the prompt cache).
    const texts = new Set(summarized.map((r) => JSON.stringify(r.messages.find((m) => JSON.stringify(m.content || '').includes(SUMMARY)))))
    assert.ok(texts.size <= passes.length, `${texts.size} distinct summaries for ${passes.length} passes`)
    return { requests: server.requests.length, maxTokens: Math.max(...tokens), passes: passes.length, toolTokens: toolRoom }
  } finally {
    await server.close()
  }
}

test('wrapLanguageModel + compactorMiddleware: generateText, 60 tool rounds', { timeout: 120_000 }, async (t) => {
  t.diagnostic(JSON.stringify(await run(false)))
})

test('wrapLanguageModel + compactorMiddleware: streamText, 60 tool rounds', { timeout: 120_000 }, async (t) => {
  t.diagnostic(JSON.stringify(await run(true)))
})

// Tool declarations take room in the window: with ~2,000 tokens of them, the prompt gets
// what they leave (messages alone under the budget was not enough: with them the requests
// went over).
test('compactorMiddleware leaves room for the tool declarations', { timeout: 120_000 }, async (t) => {
  const manual = 'Flags of the shell tool, in full: ' + Array.from({ length: 400 }, (_, i) => `--flag-${i} does thing ${i};`).join(' ')
  const verbose = tool({ ...shell, description: manual })
  const result = await run(false, { shell: verbose })
  assert.ok(result.toolTokens > 1500, `the declarations weigh ${result.toolTokens} tokens`)
  t.diagnostic(JSON.stringify(result))
})

// Declarations larger than the whole budget: the call still goes out, its prompt compacted
// to the smallest budget a pass accepts, never an error of ours.
test('compactorMiddleware: tool declarations over the budget do not break the call', async () => {
  const mw = compactorMiddleware({ budget: 1_000 })
  const tools = [{ type: 'function', name: 'shell', description: 'x '.repeat(4_000), inputSchema: { type: 'object' } }]
  const prompt = [{ role: 'system', content: 'You are a coding agent.' }]
  for (let i = 0; i < 30; i++) {
    prompt.push({ role: 'user', content: [{ type: 'text', text: `question ${i}: ` + 'some detail '.repeat(30) }] })
    prompt.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }] })
  }
  const out = await mw.transformParams({ params: { prompt, tools } })
  assert.ok(countTokens(out.prompt, { format: 'ai-sdk' }) < countTokens(prompt, { format: 'ai-sdk' }))
})
