// AI SDK messages (v5 ModelMessage, and the LanguageModelV2Prompt a middleware sees) in
// and out of compact, countTokens, Session and ContextManager: detected, counted as the
// OpenAI equivalent, returned in the SDK's shape with the untouched messages as given.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { mkdtempSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')
const { compact, countTokens, detectFormat, ContextManager, Session } = require('..')
const aisdk = require('../aisdk')

const dir = mkdtempSync(join(tmpdir(), 'llm-compactor-aisdk-'))

/** An AI SDK tool loop: each round one assistant turn with two calls, one tool message with both results. */
function sdkLoop(rounds) {
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: [{ type: 'text', text: 'Make the build green. Always run pytest -x before committing.' }] },
  ]
  for (let i = 0; i < rounds; i++) messages.push(...sdkRound(i))
  return messages
}

function sdkRound(i) {
  return [
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: `I should read f${i}.` },
        { type: 'tool-call', toolCallId: `r${i}`, toolName: 'read', input: { path: `src/f${i}.py` } },
        { type: 'tool-call', toolCallId: `s${i}`, toolName: 'shell', input: { cmd: `wc -l src/f${i}.py` } },
      ],
      providerOptions: { openai: { itemId: `item-${i}` } },
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: `r${i}`, toolName: 'read', output: { type: 'text', value: `line of src/f${i}.py\n`.repeat(60) } },
        { type: 'tool-result', toolCallId: `s${i}`, toolName: 'shell', output: { type: 'json', value: { lines: 60 + i } } },
      ],
    },
  ]
}

/** Tool results whose call is not in the conversation (AI SDK terms). */
function orphans(messages) {
  const calls = new Set(messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []).filter((p) => p.type === 'tool-call').map((p) => p.toolCallId)))
  return messages.flatMap((m) => (m.role === 'tool' ? m.content : [])).filter((p) => !calls.has(p.toolCallId)).map((p) => p.toolCallId)
}

/** Tool calls without their result. */
function unanswered(messages) {
  const results = new Set(messages.flatMap((m) => (m.role === 'tool' ? m.content : [])).map((p) => p.toolCallId))
  return messages.flatMap((m) => (m.role === 'assistant' && Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === 'tool-call' && !results.has(p.toolCallId)).map((p) => p.toolCallId)
}

test('AI SDK messages are detected and counted as their OpenAI equivalent', () => {
  const messages = sdkLoop(3)
  assert.equal(detectFormat(messages), 'ai-sdk')
  assert.equal(detectFormat([{ role: 'user', content: 'hi' }]), 'openai', 'text alone reads the same either way')
  const openai = aisdk.toOpenAI(messages).map(({ x_aisdk, ...m }) => m)
  assert.equal(openai.length, 2 + 3 * 3, 'a tool message of two results is two OpenAI tool messages')
  assert.equal(countTokens(messages), countTokens(openai))
  assert.equal(countTokens(messages, { format: 'ai-sdk' }), countTokens(openai))
})

test('compact: a 60-round AI SDK loop fits, pairs whole, untouched messages returned as given', async () => {
  const messages = sdkLoop(60)
  const result = await compact(messages, { budget: 8000 })
  assert.equal(result.format, 'ai-sdk')
  assert.ok(result.tokensAfter <= 8000 && result.exhausted === false, `${result.tokensAfter}`)
  assert.deepEqual(orphans(result.messages), [])
  assert.deepEqual(unanswered(result.messages), [])
  // The summary is an SDK user message with a text part; the instruction survives.
  const summary = result.messages.find((m) => m.role === 'user' && m.content[0].text.includes('Summary'))
  assert.ok(summary && summary.content[0].text.includes('Always run pytest -x'))
  assert.deepEqual(result.messages[0], messages[0])
  // The recent window comes back exactly as given (reasoning, provider options, json output).
  assert.deepEqual(result.messages.at(-1), messages.at(-1))
  assert.deepEqual(result.messages.at(-2), messages.at(-2))
  for (const m of result.messages) assert.ok(!('x_aisdk' in m), 'the carrier never leaks')
  // Every kept message is a valid SDK message: tool results keep their tool names.
  for (const p of result.messages.flatMap((m) => (m.role === 'tool' ? m.content : []))) {
    assert.ok(['read', 'shell'].includes(p.toolName) && p.output && typeof p.output.type === 'string')
  }
})

test('a result the pass changed comes back as a text output in its group; binary and URLs as text', async () => {
  const messages = [
    { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', image: new Uint8Array([1, 2, 3]), mediaType: 'image/png' }, { type: 'file', data: new URL('https://example.com/a.pdf'), mediaType: 'application/pdf' }] },
    ...sdkRound(0),
  ]
  const wire = aisdk.toOpenAI(messages)
  // What a pass does to an old result: its content replaced by a stub (the rest untouched).
  wire[2] = { ...wire[2], content: '[tool output elided: 1,260 chars]' }
  const back = aisdk.fromOpenAI(JSON.parse(JSON.stringify(wire)))
  assert.equal(back.length, 3, 'the two results regroup into their one tool message')
  assert.deepEqual(back[2].content[0], { type: 'tool-result', toolCallId: 'r0', toolName: 'read', output: { type: 'text', value: '[tool output elided: 1,260 chars]' } })
  assert.deepEqual(back[2].content[1], messages[2].content[1], 'the untouched result is as given')
  assert.deepEqual(back[1], messages[1])
  assert.equal(back[0].content[1].image, 'AQID')
  assert.equal(back[0].content[2].data, 'https://example.com/a.pdf')
  // Through the core: counted, compacted and returned without error.
  const result = await compact(messages, { budget: 100000 })
  assert.equal(result.format, 'ai-sdk')
  assert.equal(result.messages.flatMap((m) => (m.role === 'user' ? m.content : [])).find((p) => p.type === 'image').image, 'AQID')
})

test('Session and ContextManager in the AI SDK format: 60 rounds in budget, SDK shapes out', async () => {
  const budget = 8000
  const manager = new ContextManager({ path: join(dir, 'm.jsonl'), format: 'ai-sdk', budget })
  manager.push(sdkLoop(0))
  let passes = 0
  for (let i = 0; i < 60; i++) {
    const sent = await manager.prepare()
    assert.ok(sent.requestTokens <= budget)
    assert.deepEqual(orphans(sent.messages), [])
    assert.deepEqual(unanswered(sent.messages), [])
    if (sent.result) {
      passes++
      assert.equal(sent.result.format, 'ai-sdk')
    }
    manager.recordResponse(sdkRound(i))
  }
  assert.ok(passes >= 1)
  assert.deepEqual(manager.messages.at(-1), sdkRound(59)[1])
  assert.deepEqual(manager.originals().slice(2, 4), sdkRound(0), 'the transcript keeps the SDK originals')

  const session = Session.open(join(dir, 's.jsonl'), { format: 'ai-sdk' })
  assert.equal(session.append(sdkLoop(30)), 62)
  const pass = await session.compact({ budget: 6000 })
  assert.equal(pass.format, 'ai-sdk')
  assert.deepEqual(session.replay(), pass.messages)
  session.close()
})

test('an unknown SDK role names its message', async () => {
  await assert.rejects(compact([{ role: 'wizard', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'x', input: {} }] }]), /messages\[0\]: .*wizard/)
})
