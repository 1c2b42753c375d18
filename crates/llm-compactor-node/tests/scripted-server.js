// A scripted OpenAI-compatible chat-completions server on 127.0.0.1, shared by the
// adapters' tests: it calls `shell` for `rounds` requests, then answers; it records what
// each request carried. Also the orphan check the tests apply to what it received.
'use strict'

const http = require('node:http')
const { countTokens } = require('..')

/**
 * A scripted chat-completions server: calls `shell` for the first `rounds` requests (or
 * while `rounds(n, request)` says so), then answers;
 * records what each request carried. Streams when asked to.
 */
async function scriptedServer(rounds) {
  const requests = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const request = JSON.parse(body)
      requests.push({ messages: request.messages, tools: request.tools })
      const n = requests.length
      const call = typeof rounds === 'function' ? rounds(n, request) : n <= rounds
      const message = call
        ? { role: 'assistant', content: null, tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: 'shell', arguments: JSON.stringify({ cmd: `cat src/f${n}.py` }) } }] }
        : { role: 'assistant', content: 'The build is green.' }
      const usage = { prompt_tokens: countTokens(request.messages), completion_tokens: 12, total_tokens: 0 }
      if (request.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        const delta = call ? { role: 'assistant', tool_calls: [{ index: 0, ...message.tool_calls[0] }] } : { role: 'assistant', content: message.content }
        res.write(`data: ${JSON.stringify({ id: `r${n}`, object: 'chat.completion.chunk', created: 0, model: request.model, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`)
        res.write(`data: ${JSON.stringify({ id: `r${n}`, object: 'chat.completion.chunk', created: 0, model: request.model, choices: [{ index: 0, delta: {}, finish_reason: call ? 'tool_calls' : 'stop' }], usage })}\n\n`)
        res.end('data: [DONE]\n\n')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: `r${n}`, object: 'chat.completion', created: 0, model: request.model, choices: [{ index: 0, message, finish_reason: call ? 'tool_calls' : 'stop' }], usage }))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return { requests, url: `http://127.0.0.1:${port}/v1`, close: () => new Promise((resolve) => server.close(resolve)) }
}

/** Tool results (OpenAI wire) whose call no earlier assistant message made. */
function orphans(messages) {
  const calls = new Set()
  const out = []
  for (const m of messages) {
    for (const c of m.tool_calls || []) calls.add(c.id)
    if (m.role === 'tool' && !calls.has(m.tool_call_id)) out.push(m.tool_call_id)
  }
  return out
}

module.exports = { scriptedServer, orphans }
