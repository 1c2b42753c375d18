// The OpenAI Agents SDK (JS) session with the real SDK (`@openai/agents`, installed from
// the committed lock file; its Runner and its chat-completions model) against a scripted
// OpenAI-compatible server on 127.0.0.1: 10 turns of 6 tool rounds each (60 rounds) in
// which no request is over the budget, no tool result is orphaned, summaries reach the
// model, and the session keeps the summary it wrote.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
// Required, not optional: a missing SDK fails the test (scripts/node-package.sh installs it).
const { Agent, Runner, tool, MemorySession, OpenAIProvider, setTracingDisabled } = require('@openai/agents')
const { countTokens } = require('..')
const { CompactingSession } = require('../agents')
const { toResponses, fromResponses } = require('../agents-items')
const { scriptedServer, orphans } = require('./scripted-server')

const TURNS = 10
const ROUNDS_PER_TURN = 6
const SUMMARY = '[Summary of the earlier conversation'

setTracingDisabled(true)

const shell = tool({
  name: 'shell',
  description: 'Run a shell command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false },
  strict: true,
  execute: async ({ cmd }) => `$ ${cmd}\n` + `${cmd}: a line of output that the agent read\n`.repeat(40),
})

/** Tool results among the SDK's items whose call no earlier item made. */
function itemOrphans(items) {
  const calls = new Set()
  const out = []
  for (const item of items) {
    if (item.type === 'function_call') calls.add(item.callId)
    if (item.type === 'function_call_result' && !calls.has(item.callId)) out.push(item.callId)
  }
  return out
}

test('Agents SDK items convert to Responses items and back; unchanged ones are the originals', () => {
  const items = [
    { role: 'system', content: 'You are a coding agent.' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the build' }] },
    { type: 'function_call', callId: 'c1', name: 'shell', arguments: '{"cmd":"ls"}', status: 'completed', id: 'fc_1' },
    { type: 'function_call_result', callId: 'c1', name: 'shell', status: 'completed', output: { type: 'text', text: 'a.py' } },
    { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done.' }] },
  ]
  const wire = toResponses(items)
  assert.deepEqual(wire[2], { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"cmd":"ls"}', x_agents: 2 })
  assert.deepEqual(wire[3], { type: 'function_call_output', call_id: 'c1', output: 'a.py', x_agents: 3 })
  fromResponses(wire, items).forEach((item, i) => assert.equal(item, items[i]))
  // A stubbed result keeps its call; the summary is a user message.
  const [stub, summary] = fromResponses([{ ...wire[3], output: '[stubbed]' }, { role: 'user', content: `${SUMMARY}]` }], items)
  assert.deepEqual(stub, { ...items[3], output: { type: 'text', text: '[stubbed]' } })
  assert.deepEqual(summary, { type: 'message', role: 'user', content: `${SUMMARY}]` })
  assert.throws(() => toResponses([{ type: 'hosted_tool_call', name: 'web_search' }]), { code: 'ERR_UNSUPPORTED_INPUT' })
})

test('CompactingSession: compacts on read, stores the pass, honours limit; unread kinds pass as they are', async () => {
  const big = (i) => [
    { type: 'function_call', callId: `c${i}`, name: 'shell', arguments: '{}', status: 'completed' },
    { type: 'function_call_result', callId: `c${i}`, name: 'shell', status: 'completed', output: { type: 'text', text: `line ${i}\n`.repeat(400) } },
  ]
  const items = [{ role: 'user', content: 'Fix the build.' }, ...Array.from({ length: 6 }, (_, i) => big(i)).flat()]
  const inner = new MemorySession()
  await inner.addItems(items)
  const session = new CompactingSession(inner, { budget: 4000 })
  const read = await session.getItems()
  assert.equal(session.compactions, 1)
  assert.ok(read.length < items.length && JSON.stringify(read[0]).includes(SUMMARY))
  assert.deepEqual(itemOrphans(read), [])
  assert.deepEqual(await inner.getItems(), read, 'the pass replaced the stored items')
  assert.deepEqual(await session.getItems(2), read.slice(-2))
  assert.equal(session.compactions, 1, 'a history in budget is not compacted again')
  // A kind the compactor does not read: the items come back as they are.
  const hosted = new MemorySession()
  await hosted.addItems([...items, { type: 'hosted_tool_call', name: 'web_search_call', status: 'completed' }])
  const other = new CompactingSession(hosted, { budget: 4000 })
  assert.equal((await other.getItems()).length, items.length + 1)
  assert.equal(other.compactions, 0)
})

test('Runner + CompactingSession: 10 turns of 6 tool rounds inside the budget', { timeout: 180_000 }, async (t) => {
  // Each turn: ROUNDS_PER_TURN tool calls, then the answer.
  const server = await scriptedServer((n) => n % (ROUNDS_PER_TURN + 1) !== 0)
  const budget = 6000
  try {
    // The SDK's chat-completions model, pointed at the scripted server.
    const modelProvider = new OpenAIProvider({ apiKey: 'test', baseURL: server.url, useResponses: false })
    const runner = new Runner({ modelProvider })
    const agent = new Agent({ name: 'coder', instructions: 'You are a coding agent.', model: 'scripted-model', tools: [shell] })
    const inner = new MemorySession()
    const session = new CompactingSession(inner, { budget })
    for (let turn = 0; turn < TURNS; turn++) {
      const input = turn === 0 ? 'Make the build green. Always run pytest -x before committing.' : `Next: fix module ${turn}.`
      const result = await runner.run(agent, input, { session, maxTurns: 20, callModelInputFilter: session.modelInputFilter })
      assert.equal(result.finalOutput, 'The build is green.')
      const stored = await inner.getItems()
      assert.deepEqual(itemOrphans(stored), [], `turn ${turn}: the session holds no orphaned result`)
    }
    assert.equal(server.requests.length, TURNS * (ROUNDS_PER_TURN + 1), 'every turn ran its tool rounds and its answer')
    const tokens = server.requests.map((r) => countTokens(r.messages))
    assert.deepEqual(tokens.filter((n) => n > budget), [], 'no request over the budget')
    assert.ok(Math.max(...tokens) > budget * 0.5, 'the budget was reached (the test can fail)')
    for (const r of server.requests) assert.deepEqual(orphans(r.messages), [])
    const summarized = server.requests.filter((r) => r.messages.some((m) => JSON.stringify(m.content || '').includes(SUMMARY)))
    assert.ok(summarized.length >= server.requests.length / 2, `${summarized.length} requests carried a summary`)
    assert.ok(summarized.at(-1).messages.some((m) => JSON.stringify(m.content || '').includes('Always run pytest -x')))
    assert.ok(session.compactions >= 2, `${session.compactions} passes`)
    assert.ok(session.lastResult.receipt && typeof session.lastResult.receipt.netCost === 'number')
    // Between passes the summary is the same text (a stable prefix for the prompt cache).
    const texts = new Set(summarized.map((r) => JSON.stringify(r.messages.find((m) => JSON.stringify(m.content || '').includes(SUMMARY)))))
    assert.ok(texts.size <= session.compactions, `${texts.size} distinct summaries for ${session.compactions} passes`)
    assert.ok(session.compactions < server.requests.length / 3, `${session.compactions} passes for ${server.requests.length} requests`)
    // The session kept what a pass wrote: the stored history starts from a summary.
    const stored = await inner.getItems()
    assert.ok(stored.some((item) => JSON.stringify(item.content || '').includes(SUMMARY)), 'the session holds the summary')
    t.diagnostic(JSON.stringify({ requests: server.requests.length, maxTokens: Math.max(...tokens), passes: session.compactions, stored: stored.length }))
  } finally {
    await server.close()
  }
})
