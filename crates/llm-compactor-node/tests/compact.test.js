// The Node package against the native addon: every entry point, each shape of input,
// and the errors a caller gets. Run by scripts/node-package.sh (node --test).
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { compact, countTokens, detectFormat, ConfigError, InvalidInputError, CompactorError } = require('..')

/** An OpenAI tool loop of `rounds` rounds with long outputs. */
function openaiLoop(rounds) {
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Make the build green. Always run pytest -x before committing.' },
  ]
  for (let i = 0; i < rounds; i++) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'shell', arguments: `{"cmd":"cat src/f${i}.py"}` } }],
    })
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: `line of src/f${i}.py\n`.repeat(80) })
  }
  return messages
}

test('compact: an OpenAI tool loop fits its budget, pairs kept, in the caller format', async () => {
  const messages = openaiLoop(30)
  const before = countTokens(messages)
  const result = await compact(messages, { budget: 4000 })
  assert.equal(result.format, 'openai')
  assert.ok(result.tokensBefore === before, `${result.tokensBefore} vs ${before}`)
  assert.ok(result.tokensAfter <= 4000, `${result.tokensAfter} tokens`)
  assert.equal(result.exhausted, false)
  assert.ok(result.summary.length > 0, 'the ledger wrote a summary')
  assert.ok(result.summary.includes('Always run pytest -x'), 'the user instruction survives verbatim')
  assert.equal(result.messages[0].role, 'system')
  // Every kept tool result answers a kept call.
  const calls = new Set(result.messages.flatMap((m) => (m.tool_calls || []).map((c) => c.id)))
  for (const m of result.messages.filter((m) => m.role === 'tool')) {
    assert.ok(calls.has(m.tool_call_id), `orphan ${m.tool_call_id}`)
  }
  assert.equal(countTokens(result.messages), result.tokensAfter)
})

test('compact: Anthropic turns with system, and a whole Responses request', async () => {
  const turns = []
  for (let i = 0; i < 20; i++) {
    turns.push({ role: 'user', content: `step ${i}: ` + 'the log says ok. '.repeat(60) })
    turns.push({ role: 'assistant', content: [{ type: 'text', text: `done ${i}` }] })
  }
  turns.push({ role: 'user', content: 'next' })
  const anthropic = await compact(turns, { budget: 3000, format: 'anthropic', system: 'Be brief.' })
  assert.equal(anthropic.format, 'anthropic')
  assert.ok(anthropic.tokensAfter <= 3000)
  assert.equal(anthropic.messages.at(-1).content, 'next', 'the last turn kept verbatim')

  const request = { model: 'm', instructions: 'Be brief.', input: turns.map((t) => ({ role: t.role, content: typeof t.content === 'string' ? t.content : t.content[0].text })) }
  assert.equal(detectFormat(request), 'responses')
  const responses = await compact(request, { budget: 3000 })
  assert.equal(responses.request.model, 'm')
  assert.equal(responses.request.instructions, 'Be brief.')
  assert.ok(responses.tokensAfter <= 3000)
})

test('compact runs off the event loop: timers fire while passes run', async () => {
  let ticks = 0
  const timer = setInterval(() => ticks++, 1)
  const passes = Array.from({ length: 8 }, () => compact(openaiLoop(200), { budget: 8000 }))
  const results = await Promise.all(passes)
  clearInterval(timer)
  assert.ok(results.every((r) => r.tokensAfter <= 8000))
  assert.ok(ticks > 0, 'the event loop turned while the passes ran')
})

test('errors name the option or the message', async () => {
  await assert.rejects(compact(openaiLoop(2), { budgett: 10 }), (e) => {
    assert.ok(e instanceof ConfigError && e instanceof CompactorError && e instanceof Error)
    assert.equal(e.code, 'ERR_CONFIG')
    assert.equal(e.field, 'budgett')
    assert.ok(!e.message.startsWith('llm-compactor:'), 'the tag never reaches the caller')
    return /budgett/.test(e.message)
  })
  await assert.rejects(compact(openaiLoop(2), { summarizer: 'gpt' }), (e) => e instanceof ConfigError && /unknown summarizer/.test(e.message))
  await assert.rejects(compact(openaiLoop(2), { format: 'xml' }), (e) => e.field === 'format' && /unknown format/.test(e.message))
  await assert.rejects(compact([{ role: 'user', content: 'a' }, 7], { format: 'openai' }), (e) => {
    assert.ok(e instanceof InvalidInputError)
    assert.equal(e.code, 'ERR_INVALID_INPUT')
    assert.equal(e.index, 1)
    return /messages\[1\]/.test(e.message)
  })
  assert.throws(() => countTokens([{ role: 'user', content: 'hi' }], { counter: 'nope' }), (e) => e.code === 'ERR_CONFIG' && /nope/.test(e.message))
})

test('counting agrees with itself across counters', () => {
  const messages = openaiLoop(3)
  const o200k = countTokens(messages)
  const heuristic = countTokens(messages, { counter: 'heuristic' })
  assert.ok(o200k > 100 && heuristic > 100)
  assert.notEqual(o200k, heuristic)
})

test('a JavaScript summarizer writes the summary, awaited off the event loop', async () => {
  const seen = []
  const summarizer = async ({ system, transcript, maxOutputTokens }) => {
    seen.push({ system, transcript, maxOutputTokens })
    // A real model call takes time on the event loop: the pass must not block it.
    await new Promise((resolve) => setTimeout(resolve, 20))
    return { text: 'The agent read src/f0.py to src/f29.py; the build is still red.', usage: { inputTokens: 1200, outputTokens: 30 } }
  }
  const result = await compact(openaiLoop(30), { budget: 4000, summarizer })
  assert.equal(seen.length >= 1, true)
  assert.ok(seen[0].transcript.includes('src/f0.py'), 'the transcript holds the replaced messages')
  assert.ok(seen[0].maxOutputTokens > 0)
  assert.ok(result.summary.includes('the build is still red'), result.summary)
  assert.equal(result.summarizer, 'js')
  assert.equal(result.usage.inputTokens, 1200)
  assert.equal(result.fallback, false)
  assert.ok(result.tokensAfter <= 4000)
})

test('a sync summarizer returning a string works; a throwing one is a failed attempt, not a crash', async () => {
  const sync = await compact(openaiLoop(30), { budget: 4000, summarizer: () => 'A plain summary of the read files src/f1.py.' })
  assert.ok(sync.summary.includes('A plain summary'), sync.summary)
  let calls = 0
  const failing = await compact(openaiLoop(30), {
    budget: 4000,
    summarizer: () => {
      calls++
      throw new Error('model down')
    },
  })
  assert.ok(calls >= 1)
  assert.ok(failing.attempts.length >= 1)
  const summaries = failing.attempts.filter((a) => a.kind === 'summary')
  assert.ok(summaries.length >= 1 && summaries.every((a) => a.outcome === 'failed'), JSON.stringify(failing.attempts))
  assert.ok(summaries[0].note.includes('model down'), 'the error is named')
  // The model's summary failed: the ledger stands in for it (no hard trim).
  assert.equal(failing.attempts.at(-1).kind, 'ledger')
  assert.equal(failing.fallback, false)
  assert.ok(failing.tokensAfter <= 4000, 'the pass still fits (ledger or hard trim)')
  await assert.rejects(compact(openaiLoop(2), { summarizer: 42 }), /must be "ledger", "none" or a function/)
})
