// The LangChain.js agent middleware with the real packages (`langchain`, `@langchain/core`,
// `@langchain/openai`, installed from the committed lock file) against a scripted
// OpenAI-compatible server on 127.0.0.1: a 60-round tool loop of `createAgent` in which
// no request is over the budget, no tool result is orphaned, summaries reach the model
// and every pass's receipt is exposed on the answer that followed it.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
// Required, not optional: a missing package fails the test (scripts/node-package.sh installs it).
const { createAgent, tool, HumanMessage, AIMessage, ToolMessage, SystemMessage } = require('langchain')
const { ChatOpenAI } = require('@langchain/openai')
const { countTokens } = require('..')
const { compactorMiddleware } = require('../langchain')
const { toOpenAI, fromOpenAI } = require('../langchain-messages')
const { scriptedServer, orphans } = require('./scripted-server')

const ROUNDS = 60
const SUMMARY = '[Summary of the earlier conversation'

const shell = tool(async ({ cmd }) => `$ ${cmd}\n` + `${cmd}: a line of output that the agent read\n`.repeat(40), {
  name: 'shell',
  description: 'Run a shell command',
  schema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
})

test('LangChain messages convert to OpenAI and back; unchanged ones are the originals', () => {
  const messages = [
    new SystemMessage('You are a coding agent.'),
    new HumanMessage({ content: 'Fix the build', id: 'h1' }),
    new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'shell', args: { cmd: 'ls' }, type: 'tool_call' }] }),
    new ToolMessage({ content: 'a.py b.py', tool_call_id: 'c1', name: 'shell' }),
  ]
  const wire = toOpenAI(messages)
  assert.deepEqual(
    wire.map(({ x_langchain: _, ...m }) => m),
    [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the build' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls"}' } }] },
      { role: 'tool', content: 'a.py b.py', tool_call_id: 'c1', name: 'shell' },
    ]
  )
  const lc = { HumanMessage, AIMessage, ToolMessage, SystemMessage }
  const back = fromOpenAI(wire, messages, lc)
  back.forEach((m, i) => assert.equal(m, messages[i]))
  // A changed message (a stubbed result) is built anew, its tool call id kept.
  const changed = fromOpenAI([{ ...wire[3], content: '[stubbed]' }], messages, lc)[0]
  assert.ok(changed instanceof ToolMessage && changed !== messages[3])
  assert.equal(changed.tool_call_id, 'c1')
  assert.equal(changed.content, '[stubbed]')
  assert.throws(() => toOpenAI([{ type: 'remove', id: 'x' }]), { code: 'ERR_UNSUPPORTED_INPUT' })
  assert.deepEqual(fromOpenAI([wire[2]], [], lc)[0].tool_calls, [{ id: 'c1', name: 'shell', args: { cmd: 'ls' }, type: 'tool_call' }])
})

test('createAgent + compactorMiddleware: 60 tool rounds inside the budget', { timeout: 180_000 }, async (t) => {
  const server = await scriptedServer(ROUNDS)
  const budget = 6000
  try {
    const model = new ChatOpenAI({ model: 'scripted-model', apiKey: 'test', configuration: { baseURL: server.url }, maxRetries: 0 })
    const middleware = compactorMiddleware({ budget })
    const agent = createAgent({ model, tools: [shell], middleware: [middleware], systemPrompt: 'You are a coding agent.' })
    // Every answer the model node added, as it added it (passes later remove old ones from the state).
    const answers = []
    const stream = await agent.stream(
      { messages: [{ role: 'user', content: 'Make the build green. Always run pytest -x before committing.' }] },
      { streamMode: 'updates', recursionLimit: 10 * ROUNDS }
    )
    for await (const update of stream) {
      const node = update.model_request
      for (const m of (node && node.messages) || []) if (AIMessage.isInstance(m)) answers.push(m)
    }
    assert.equal(server.requests.length, ROUNDS + 1, 'the loop ran its 60 tool rounds and the answer')
    assert.equal(answers.length, ROUNDS + 1)
    assert.equal(answers.at(-1).content, 'The build is green.')
    const tokens = server.requests.map((r) => countTokens(r.messages))
    assert.deepEqual(tokens.filter((n) => n > budget), [], 'no request over the budget')
    assert.ok(Math.max(...tokens) > budget * 0.5, 'the budget was reached (the test can fail)')
    for (const r of server.requests) assert.deepEqual(orphans(r.messages), [])
    const summarized = server.requests.filter((r) => r.messages.some((m) => JSON.stringify(m.content || '').includes(SUMMARY)))
    assert.ok(summarized.length >= ROUNDS / 2, `${summarized.length} requests carried a summary`)
    assert.ok(summarized.at(-1).messages.some((m) => JSON.stringify(m.content || '').includes('Always run pytest -x')))
    // Every answer says what was sent; the answers that followed a pass carry its receipt.
    const metas = answers.map((m) => m.response_metadata && m.response_metadata.compactor)
    assert.ok(metas.every((m) => m && m.requestTokens <= budget), JSON.stringify(metas.find((m) => !m || m.requestTokens > budget)))
    // What the middleware counted is what the server got.
    metas.forEach((m, i) => assert.ok(m.requestTokens === tokens[i], `answer ${i}: ${m.requestTokens} counted, ${tokens[i]} sent`))
    const passes = metas.filter((m) => m.pass)
    assert.ok(passes.length >= 2, `${passes.length} passes`)
    assert.equal(passes.length, middleware.compactions)
    for (const m of passes) {
      assert.ok(m.pass.receipt && typeof m.pass.receipt.netCost === 'number', JSON.stringify(m.pass))
      assert.ok(m.pass.tokensAfter < m.pass.tokensBefore)
      assert.ok(m.pass.summary.startsWith(SUMMARY) || (m.pass.summary === '' && m.pass.elisions > 0))
    }
    assert.ok(passes.some((m) => m.pass.summary.startsWith(SUMMARY)), 'a pass summarized')
    assert.ok(middleware.lastResult && middleware.lastResult.tokensAfter <= budget)
    // Between passes the summary is the same text (it is kept in the agent's state).
    const texts = new Set(summarized.map((r) => JSON.stringify(r.messages.find((m) => JSON.stringify(m.content || '').includes(SUMMARY)))))
    assert.ok(texts.size <= passes.length, `${texts.size} distinct summaries for ${passes.length} passes`)
    t.diagnostic(JSON.stringify({ requests: server.requests.length, maxTokens: Math.max(...tokens), passes: passes.length }))
  } finally {
    await server.close()
  }
})
