// The Vercel AI SDK's messages (v5 `ModelMessage`, and the `LanguageModelV2Prompt` a
// middleware sees) read as OpenAI chat messages for the core, and written back in the
// SDK's shape.
//
// The rule is the SDK's, not the wire's, so it lives here rather than in the library's
// codecs: each SDK message becomes the OpenAI message(s) the core counts and plans over
// (a `tool` message with several results becomes one OpenAI `tool` message per result),
// and carries its original under the wire extra `x_aisdk`, which the core keeps verbatim
// and never counts or shows a summarizer. Writing back, a message the pass left as it
// was is returned as the original object (provider options, images, reasoning intact); a
// message the pass wrote (the summary) or changed (a stubbed tool result) is converted.
// Binary data (`Uint8Array`, `ArrayBuffer`) comes back as base64 text and a `URL` as its
// text, which the SDK accepts in the same places.
'use strict'

const { isDeepStrictEqual } = require('node:util')

const EXTRA = 'x_aisdk'
const SDK_PARTS = new Set(['tool-call', 'tool-result', 'reasoning', 'image'])

/** True when `messages` are AI SDK messages (a part only the SDK writes is present). */
function isModelMessages(messages) {
  if (!Array.isArray(messages)) return false
  return messages.some(
    (m) =>
      m &&
      Array.isArray(m.content) &&
      m.content.some(
        (p) => p && (SDK_PARTS.has(p.type) || (p.type === 'file' && ('mediaType' in p || 'data' in p)))
      )
  )
}

/** `value` with binary data as base64 text and URLs as text (JSON-safe). */
function jsonSafe(value) {
  if (value instanceof URL) return value.href
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString('base64')
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')
  if (Array.isArray(value)) return value.map(jsonSafe)
  if (value && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = jsonSafe(v)
    return out
  }
  return value
}

/** A tool result's output as the text the core counts and a summarizer reads. */
function outputText(output) {
  if (output === undefined || output === null) return ''
  if (typeof output === 'string') return output
  switch (output.type) {
    case 'text':
    case 'error-text':
      return String(output.value)
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value)
    case 'content':
      return output.value.map((p) => (p.type === 'text' ? p.text : `[${p.mediaType || 'media'} data]`)).join('\n')
    default:
      return JSON.stringify(output)
  }
}

/** A data URL for an SDK file or image payload (text, base64, URL or bytes). */
function dataUrl(data, mediaType) {
  if (typeof data === 'string' && /^(https?|data):/.test(data)) return data
  return `data:${mediaType || 'application/octet-stream'};base64,${data}`
}

/** A user content part as OpenAI's. */
function userPart(part) {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text }
    case 'image':
      return { type: 'image_url', image_url: { url: dataUrl(part.image, part.mediaType || 'image/*') } }
    case 'file':
      if (String(part.mediaType || '').startsWith('image/')) {
        return { type: 'image_url', image_url: { url: dataUrl(part.data, part.mediaType) } }
      }
      return { type: 'file', file: { filename: part.filename || 'file', file_data: dataUrl(part.data, part.mediaType) } }
    default:
      return { type: 'text', text: JSON.stringify(part) }
  }
}

/** One SDK message (JSON-safe) as its OpenAI message(s), without the extra. */
function convert(message) {
  const { role, content } = message
  if (role === 'system') return [{ role: 'system', content: String(content) }]
  if (role === 'user') {
    return [{ role: 'user', content: typeof content === 'string' ? content : content.map(userPart) }]
  }
  if (role === 'assistant') {
    if (typeof content === 'string') return [{ role: 'assistant', content }]
    const text = content.filter((p) => p.type === 'text').map((p) => p.text).join('')
    const reasoning = content.filter((p) => p.type === 'reasoning').map((p) => p.text).join('\n')
    const calls = content
      .filter((p) => p.type === 'tool-call')
      .map((p) => ({
        id: p.toolCallId,
        type: 'function',
        function: { name: p.toolName, arguments: typeof p.input === 'string' ? p.input : JSON.stringify(p.input ?? {}) },
      }))
    const out = { role: 'assistant', content: text.length > 0 || calls.length === 0 ? text : null }
    if (calls.length > 0) out.tool_calls = calls
    if (reasoning.length > 0) out.reasoning_content = reasoning
    return [out]
  }
  if (role === 'tool') {
    return content.map((p) => ({ role: 'tool', tool_call_id: p.toolCallId, content: outputText(p.output) }))
  }
  throw new TypeError(`llm-compactor: unknown AI SDK message role ${JSON.stringify(role)}`)
}

/** AI SDK messages as OpenAI chat messages, each carrying its original under `x_aisdk`. */
function toOpenAI(messages) {
  const out = []
  messages.forEach((message, index) => {
    const original = jsonSafe(message)
    let converted
    try {
      converted = convert(original)
    } catch (e) {
      e.message = `messages[${index}]: ${e.message}`
      throw e
    }
    if (original.role === 'tool') {
      // One OpenAI message per result; the group (the first call id) regroups them.
      const group = original.content.length > 0 ? original.content[0].toolCallId : ''
      const rest = { ...original, content: undefined }
      converted.forEach((m, k) => out.push({ ...m, [EXTRA]: { group, part: original.content[k], message: k === 0 ? jsonSafe(rest) : undefined } }))
    } else {
      out.push({ ...converted[0], [EXTRA]: { message: original } })
    }
  })
  return out
}

/** `message` without the extra. */
function bare(message) {
  const { [EXTRA]: _, ...rest } = message
  return rest
}

/** An OpenAI message the core wrote or changed, as an SDK message. */
function fromWire(message, toolNames) {
  const text = typeof message.content === 'string' ? message.content : Array.isArray(message.content)
    ? message.content.map((p) => (p.type === 'text' ? p.text : '')).join('')
    : ''
  switch (message.role) {
    case 'system':
      return { role: 'system', content: text }
    case 'user':
      return { role: 'user', content: [{ type: 'text', text }] }
    case 'assistant': {
      const parts = []
      if (text.length > 0) parts.push({ type: 'text', text })
      for (const call of message.tool_calls || []) {
        let input
        try {
          input = JSON.parse(call.function.arguments)
        } catch {
          input = call.function.arguments
        }
        parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.function.name, input })
      }
      return { role: 'assistant', content: parts }
    }
    case 'tool':
      return {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: message.tool_call_id, toolName: toolNames.get(message.tool_call_id) || 'unknown', output: { type: 'text', value: text } }],
      }
    default:
      return { role: 'user', content: [{ type: 'text', text }] }
  }
}

/** OpenAI chat messages (from `toOpenAI`, through a pass) back as AI SDK messages. */
function fromOpenAI(messages) {
  const toolNames = new Map()
  for (const m of messages) for (const c of m.tool_calls || []) toolNames.set(c.id, c.function.name)
  const out = []
  for (const message of messages) {
    const extra = message[EXTRA]
    if (message.role === 'tool') {
      const part = extra && extra.part
      const unchanged = part && isDeepStrictEqual(convert({ role: 'tool', content: [part] })[0], bare(message))
      const sdkPart = unchanged ? part : fromWire(message, toolNames).content[0]
      if (part && !unchanged) sdkPart.toolName = part.toolName
      const last = out.at(-1)
      // Results of one original tool message are regrouped into it.
      if (extra && last && last.role === 'tool' && last[EXTRA] === extra.group) {
        last.content.push(sdkPart)
      } else {
        const head = extra && extra.message ? extra.message : { role: 'tool' }
        out.push({ ...head, content: [sdkPart], [EXTRA]: extra ? extra.group : undefined })
      }
      continue
    }
    const original = extra && extra.message
    if (original && isDeepStrictEqual(convert(original)[0], bare(message))) {
      out.push(original)
      continue
    }
    const written = fromWire(message, toolNames)
    if (original && original.providerOptions) written.providerOptions = original.providerOptions
    out.push(written)
  }
  for (const m of out) if (m.role === 'tool') delete m[EXTRA]
  return out
}

module.exports = { isModelMessages, toOpenAI, fromOpenAI, EXTRA }
