// One compaction pass (`compact`), counting and format detection: the functions every
// entry point of the package (the index, the AI SDK middleware, the LangChain.js and
// Agents adapters) calls, kept apart from the index so that no adapter requires it back.
'use strict'

const { native, text, splitSummarizer } = require('./native')
const errors = require('./errors')
const aisdk = require('./aisdk')

/**
 * The messages and options as the addon reads them: AI SDK messages (`format: 'ai-sdk'`,
 * or detected under `auto`) as OpenAI's, with `sdk` true to write the result back.
 */
function input(messages, options) {
  const format = options && options.format
  const sdk = format === 'ai-sdk' || ((format === undefined || format === 'auto') && aisdk.isModelMessages(messages))
  if (!sdk) return { messages, options, sdk }
  const converted = errors.call(() => aisdk.toOpenAI(messages))
  return { messages: converted, options: { ...options, format: 'openai' }, sdk }
}

/** One compaction pass; `options.summarizer` may be a function that writes the summary. */
async function compact(messages, options) {
  const read = input(messages, options)
  const [json, summarizer] = errors.call(() => splitSummarizer(read.options))
  const result = JSON.parse(await errors.settle(native.compact(JSON.stringify(read.messages), json, summarizer)))
  if (read.sdk) {
    result.messages = aisdk.fromOpenAI(result.messages)
    result.format = 'ai-sdk'
  }
  return result
}

/** The conversation's tokens. */
function countTokens(messages, options) {
  const read = input(messages, options)
  return errors.call(() => native.countTokens(JSON.stringify(read.messages), text(read.options)))
}

/** The format `messages` are read in when `format` is `auto`. */
function detectFormat(messages) {
  if (aisdk.isModelMessages(messages)) return 'ai-sdk'
  return errors.call(() => native.detectFormat(JSON.stringify(messages)))
}

module.exports = { compact, countTokens, detectFormat }
