// ContextManager (the agent loop) and Session (transcripts) from Node: passes happen,
// every request fits, tool pairs stay whole, the event loop turns while a pass runs,
// handles expand to the originals, and each failure is its typed error.
// Run by scripts/node-package.sh (node --test).
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { mkdtempSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')
const { ContextManager, Session, SessionError, BusyError, ConfigError, ContextExhaustedError, CompactorError } = require('..')

const dir = mkdtempSync(join(tmpdir(), 'llm-compactor-node-'))
let n = 0
const fresh = () => join(dir, `t${n++}.jsonl`)

const TOOLS = [{ type: 'function', function: { name: 'shell', description: 'Run a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } } }]

/** Round `i` of a scripted agent: a shell call and its long output. */
function round(i) {
  return [
    { role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'shell', arguments: `{"cmd":"cat src/f${i}.py"}` } }] },
    { role: 'tool', tool_call_id: `c${i}`, content: `line ${i} of src/f${i}.py\n`.repeat(60) },
  ]
}

/** The tool results of `messages` whose call is not among them. */
function orphans(messages) {
  const calls = new Set(messages.flatMap((m) => (m.tool_calls || []).map((c) => c.id)))
  return messages.filter((m) => m.role === 'tool' && !calls.has(m.tool_call_id)).map((m) => m.tool_call_id)
}

test('ContextManager: a 60-round tool loop stays in budget, passes run, no orphan', async () => {
  const budget = 6000
  const manager = new ContextManager({ path: fresh(), budget, expand: true })
  assert.equal(manager.prepares, false, 'the ledger needs no background preparation')
  manager.push([
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Make the build green. Always run pytest -x before committing.' },
  ])
  manager.beginRun()
  const passes = []
  for (let i = 0; i < 60; i++) {
    const sent = await manager.prepare({ tools: TOOLS })
    assert.ok(sent.requestTokens <= budget, `round ${i}: ${sent.requestTokens} tokens over ${budget}`)
    assert.deepEqual(orphans(sent.messages), [], `round ${i}`)
    if (sent.result) passes.push(sent)
    manager.recordResponse(round(i), { usage: { inputTokens: sent.requestTokens, outputTokens: 20 }, model: 'scripted' })
  }
  assert.ok(passes.length >= 2, `${passes.length} passes`)
  assert.ok(passes.every((p) => p.reason === 'threshold' && p.result.summary.includes('Always run pytest -x')))
  assert.ok(manager.messages.length < 120, 'the conversation was compacted')
  // Nothing is lost: the transcript keeps every original, and a handle the summary names
  // expands to its message.
  assert.equal(manager.originals().length, 122)
  const handle = passes.at(-1).result.summary.match(/#[0-9a-f]{10}/)
  assert.ok(handle, 'the summary names handles')
  const expansion = manager.expand(handle[0])
  assert.ok(expansion && expansion.messages.length >= 1, JSON.stringify(expansion))
  assert.equal(manager.expand('#0000000000'), null)
  assert.equal(manager.expandTool().function.name, 'compactor_expand')
  assert.ok(manager.answerExpand({ handles: [handle[0]] }).length > 0)
})

test('ContextManager: the event loop keeps turning while an inline pass awaits a JS summarizer', { timeout: 30_000 }, async () => {
  let ticks = 0
  const timer = setInterval(() => ticks++, 1)
  let calls = 0
  // The summarizer answers only once the timer has fired 5 more times: were the pass
  // blocking the event loop, it could never answer (the test would time out).
  const summarizer = async () => {
    calls++
    const start = ticks
    while (ticks < start + 5) await new Promise((resolve) => setImmediate(resolve))
    return `The agent read the sources (timer at ${ticks}).`
  }
  const manager = new ContextManager({ path: fresh(), budget: 4000, summarizer, prepare: false })
  assert.equal(manager.prepares, false)
  manager.push([{ role: 'user', content: 'Fix it.' }])
  for (let i = 0; i < 30; i++) manager.recordResponse(round(i))
  const sent = await manager.prepare()
  clearInterval(timer)
  assert.ok(calls >= 1)
  assert.equal(sent.reason, 'threshold')
  assert.match(sent.result.summary, /The agent read the sources/)
  assert.equal(sent.result.summarizer, 'js')
  assert.ok(sent.requestTokens <= 4000)
})

test('ContextManager: a JS summarizer is prepared in the background by default, every request fits', { timeout: 60_000 }, async () => {
  const budget = 6000
  let calls = 0
  const summarizer = async ({ transcript }) => {
    calls++
    await new Promise((resolve) => setTimeout(resolve, 5))
    return `Model summary: the agent read ${transcript.split('src/f').length - 1} file mentions.`
  }
  const manager = new ContextManager({ path: fresh(), budget, summarizer })
  assert.equal(manager.prepares, true, 'preparation is on by default with a model summarizer')
  manager.push([{ role: 'user', content: 'Read every file.' }])
  const reasons = []
  for (let i = 0; i < 60; i++) {
    const sent = await manager.prepare({ tools: TOOLS })
    assert.ok(sent.requestTokens <= budget, `round ${i}: ${sent.requestTokens}`)
    assert.deepEqual(orphans(sent.messages), [])
    if (sent.result) {
      reasons.push(sent.reason)
      assert.match(sent.result.summary, /Model summary/)
    }
    manager.recordResponse(round(i))
  }
  await manager.shutdown()
  assert.ok(calls >= 1 && reasons.length >= 1, `${calls} calls, passes: ${reasons}`)
})

test('ContextManager: typed errors', async () => {
  assert.throws(() => new ContextManager({ path: fresh(), budgett: 1 }), (e) => e instanceof ConfigError && e.field === 'budgett')
  assert.throws(() => new ContextManager({ path: fresh(), format: 'auto' }), (e) => e instanceof ConfigError && e.field === 'format')
  assert.throws(() => new ContextManager({ budget: 100 }), TypeError)
  const path = fresh()
  const first = new ContextManager({ path })
  assert.throws(() => new ContextManager({ path }), (e) => e instanceof SessionError && e.code === 'ERR_SESSION' && /locked/.test(e.message))
  assert.throws(() => first.push([{ role: 'user', content: 'ok' }, 7]), (e) => e instanceof CompactorError && e.code === 'ERR_INVALID_INPUT' && e.index === 1)
  // One message alone over the budget: nothing can make it fit.
  const tight = new ContextManager({ path: fresh(), budget: 300, summarizer: 'none' })
  tight.push([{ role: 'user', content: 'word '.repeat(2000) }])
  await assert.rejects(tight.prepare(), (e) => e instanceof ContextExhaustedError && e.code === 'ERR_CONTEXT_EXHAUSTED')
})

test('Session: append, compact, replay, originals, expand; closed and busy are errors', async () => {
  const path = fresh()
  const session = Session.open(path)
  assert.equal(session.format, 'openai')
  assert.equal(session.append([{ role: 'user', content: 'Make the build green.' }]), 1)
  for (let i = 0; i < 30; i++) session.append(round(i))
  const result = await session.compact({ budget: 4000, expand: true })
  assert.ok(result.tokensAfter <= 4000 && result.summary.length > 0)
  const replayed = session.replay()
  assert.equal(replayed.length, result.messages.length)
  assert.deepEqual(orphans(replayed), [])
  assert.equal(session.originals().length, 61, 'the file keeps every original')
  const handle = result.summary.match(/#[0-9a-f]{10}/)[0]
  assert.ok(session.expand(handle).messages.length >= 1)
  // A pass awaiting a slow summarizer holds the session: a synchronous call is refused.
  for (let i = 30; i < 60; i++) session.append(round(i))
  let release
  const gate = new Promise((resolve) => (release = resolve))
  const running = session.compact({ budget: 4000, summarizer: async () => (await gate, 'Later.') })
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.throws(() => session.replay(), (e) => e instanceof BusyError && e.code === 'ERR_BUSY')
  release()
  assert.match((await running).summary, /Later\./)
  session.close()
  assert.throws(() => session.replay(), (e) => e instanceof SessionError && /closed/.test(e.message))
  // Closed, the file is free again: it reopens with the recorded passes.
  const reopened = Session.open(path)
  assert.ok(reopened.replay().length < 121, 'the recorded passes replay')
  assert.equal(reopened.originals().length, 121)
  reopened.close()
})

test('ContextManager: staleThinking counts the thinking a pass moved onto a new prefix', async () => {
  const manager = new ContextManager({ path: fresh(), budget: 3000, format: 'anthropic' })
  manager.push([{ role: 'user', content: 'Read the log.' }])
  const seen = []
  for (let i = 0; i < 30; i++) {
    const sent = await manager.prepare({})
    seen.push(sent.staleThinking)
    const turn = [
      { type: 'thinking', thinking: `round ${i}`, signature: `sig-${i}` },
      { type: 'tool_use', id: `t${i}`, name: 'bash', input: { n: i } },
    ]
    manager.recordResponse([
      { role: 'assistant', content: turn },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: `part ${i} `.repeat(120) }] },
    ], { model: 'claude-opus-5-5' })
  }
  assert.equal(seen[0], 0, 'nothing moved before the first pass')
  assert.ok(Math.max(...seen) > 0, `a pass moved kept turns' thinking: ${seen}`)
})
