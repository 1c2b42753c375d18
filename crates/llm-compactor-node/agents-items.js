// The OpenAI Agents SDK's (JS) items (`AgentInputItem`: messages, `function_call`,
// `function_call_result`, `reasoning`) read as OpenAI Responses input items for the core,
// and written back as the SDK's items.
//
// Each Responses item carries its input's index under the wire extra `x_agents`, which
// the core keeps verbatim and never counts. Writing back, an item the pass left as it was
// is returned as the original object; the summary becomes a user message item, and a
// stubbed tool result the original result with the stub as its text output. An item of
// another kind (hosted tools, computer calls, ...) is refused with an `UnsupportedInputError`:
// the caller then sends the items unchanged. Images and files count as a placeholder.
'use strict'

const { isDeepStrictEqual } = require('node:util')
const { UnsupportedInputError } = require('./errors')

const EXTRA = 'x_agents'

/** Content parts as Responses parts: text kept, media as a placeholder text. */
function parts(content) {
  if (typeof content === 'string') return content
  return (content || []).map((p) => {
    switch (p.type) {
      case 'input_text':
      case 'output_text':
        return { type: p.type, text: p.text }
      case 'refusal':
        return { type: 'refusal', refusal: p.refusal }
      case 'audio':
        return { type: 'output_text', text: p.transcript || '[audio]' }
      default:
        return { type: 'input_text', text: `[${p.type}]` }
    }
  })
}

/** A tool result's output as text. */
function outputText(output) {
  if (typeof output === 'string') return output
  if (Array.isArray(output)) return output.map(outputText).join('\n')
  if (output && (output.type === 'text' || output.type === 'input_text')) return output.text
  return `[${(output && output.type) || 'output'}]`
}

/** One SDK item as the Responses item the core reads. */
function convert(item) {
  const type = item.type ?? 'message'
  switch (type) {
    case 'message':
      return { type: 'message', role: item.role, content: parts(item.content) }
    case 'function_call':
      return { type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments }
    case 'function_call_result':
      return { type: 'function_call_output', call_id: item.callId, output: outputText(item.output) }
    case 'reasoning':
      return { type: 'reasoning', summary: (item.content || []).map((p) => ({ type: 'summary_text', text: p.text || '' })) }
    default:
      throw new UnsupportedInputError(`an Agents SDK item of type ${JSON.stringify(type)} is not read by the compactor`)
  }
}

/** SDK items as Responses items, each tagged with its index. */
function toResponses(items) {
  return items.map((item, index) => ({ ...convert(item), [EXTRA]: index }))
}

/** A Responses content as text. */
function text(content) {
  if (typeof content === 'string') return content
  return (content || []).map((p) => p.text ?? p.refusal ?? '').join('\n')
}

/** A Responses item the pass wrote or changed, as an SDK item (`original`: the one it changed). */
function fromWire(item, original) {
  if (item.type === 'function_call_output') {
    const output = { type: 'text', text: String(item.output) }
    return original ? { ...original, output } : { type: 'function_call_result', callId: item.call_id, name: '', status: 'completed', output }
  }
  if (item.type === 'function_call') return { ...(original || {}), type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments }
  if (item.type === 'reasoning') return { type: 'reasoning', content: (item.summary || []).map((p) => ({ type: 'input_text', text: p.text })) }
  if (item.role === 'assistant') return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: text(item.content) }] }
  if (item.role === 'system' || item.role === 'developer') return { type: 'message', role: 'system', content: text(item.content) }
  return { type: 'message', role: 'user', content: text(item.content) }
}

/** The core's Responses items as SDK items: an unchanged one as the original in `originals`. */
function fromResponses(items, originals) {
  return items.map((item) => {
    const { [EXTRA]: index, ...bare } = item
    const original = typeof index === 'number' ? originals[index] : undefined
    if (original !== undefined && isDeepStrictEqual(convert(original), bare)) return original
    return fromWire(bare, original)
  })
}

module.exports = { toResponses, fromResponses, EXTRA }
