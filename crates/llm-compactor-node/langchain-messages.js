// LangChain.js messages (`@langchain/core`'s `BaseMessage`s: human, ai with tool calls,
// tool, system) read as OpenAI chat messages for the core, and written back as LangChain
// messages.
//
// Each OpenAI message carries its input's index under the wire extra `x_langchain`, which
// the core keeps verbatim and never counts. Writing back, a message the pass left as it
// was is returned as the original object (its id, metadata and usage intact); a message
// the pass wrote (the summary) or changed (a stubbed tool result) is built anew with the
// classes of the caller's `@langchain/core` (passed in, so that this file requires no
// framework). A message of another type is refused with an `UnsupportedInputError`: the
// middleware then leaves the messages as they are.
'use strict'

const { isDeepStrictEqual } = require('node:util')
const { UnsupportedInputError } = require('./errors')

const EXTRA = 'x_langchain'
const ROLES = { human: 'user', ai: 'assistant', tool: 'tool', system: 'system', developer: 'system' }

/** A message's type: `human`, `ai`, `tool`, `system` (a class instance or a plain object). */
function typeOf(message) {
  if (typeof message.getType === 'function') return message.getType()
  if (typeof message._getType === 'function') return message._getType()
  return message.type
}

/** Content as OpenAI's: text, or parts (text parts kept, others passed as they are). */
function content(value) {
  if (value === undefined || value === null) return ''
  return value
}

/** One LangChain message as the OpenAI chat message the core reads. */
function convert(message) {
  if (message && typeof message.role === 'string' && typeOf(message) === undefined) return { ...message }
  const type = typeOf(message)
  const role = ROLES[type]
  if (!role) throw new UnsupportedInputError(`a LangChain message of type ${JSON.stringify(type)} is not read by the compactor`)
  const out = { role, content: content(message.content) }
  if (type === 'ai' && message.tool_calls && message.tool_calls.length > 0) {
    out.tool_calls = message.tool_calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
    }))
  }
  if (type === 'tool') out.tool_call_id = message.tool_call_id
  // The sender's name (`createAgent` names its answers `model`), sent as OpenAI's `name`.
  if (message.name) out.name = message.name
  return out
}

/** LangChain messages as OpenAI chat messages, each tagged with its index. */
function toOpenAI(messages) {
  return messages.map((m, index) => ({ ...convert(m), [EXTRA]: index }))
}

/** Arguments text as an object (`{}` when it is not JSON). */
function parseArgs(text) {
  try {
    const value = JSON.parse(text || '{}')
    return value && typeof value === 'object' ? value : {}
  } catch {
    return {}
  }
}

/** An OpenAI chat message as a new LangChain message. */
function fromWire(message, lc) {
  const text = message.content ?? ''
  const name = message.name ? { name: message.name } : {}
  switch (message.role) {
    case 'assistant':
      return new lc.AIMessage({
        content: text,
        ...name,
        tool_calls: (message.tool_calls || []).map((c) => ({ id: c.id, name: c.function.name, args: parseArgs(c.function.arguments), type: 'tool_call' })),
      })
    case 'tool':
      return new lc.ToolMessage({ content: text, tool_call_id: message.tool_call_id, ...name })
    case 'system':
    case 'developer':
      return new lc.SystemMessage({ content: text, ...name })
    default:
      return new lc.HumanMessage({ content: text, ...name })
  }
}

/**
 * The core's OpenAI messages as LangChain messages: an unchanged one as the original in
 * `originals`, the others built with `lc` (`{ HumanMessage, AIMessage, ToolMessage, SystemMessage }`).
 */
function fromOpenAI(messages, originals, lc) {
  return messages.map((message) => {
    const { [EXTRA]: index, ...bare } = message
    const original = typeof index === 'number' ? originals[index] : undefined
    if (original !== undefined && isDeepStrictEqual(convert(original), bare)) return original
    return fromWire(bare, lc)
  })
}

module.exports = { toOpenAI, fromOpenAI, EXTRA }
