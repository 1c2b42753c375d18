// The llm-compactor package: one compaction pass (`compact`), counting, the agent loop
// (`ContextManager`), transcripts (`Session`) and the typed errors.
'use strict'

const { native, text, splitSummarizer } = require('./native')
const errors = require('./errors')
const { Session, ContextManager } = require('./session')

/** One compaction pass; `options.summarizer` may be a function that writes the summary. */
async function compact(messages, options) {
  const [json, summarizer] = errors.call(() => splitSummarizer(options))
  const answer = await errors.settle(native.compact(JSON.stringify(messages), json, summarizer))
  return JSON.parse(answer)
}

/** The conversation's tokens. */
function countTokens(messages, options) {
  return errors.call(() => native.countTokens(JSON.stringify(messages), text(options)))
}

/** The format `messages` are read in when `format` is `auto`. */
function detectFormat(messages) {
  return errors.call(() => native.detectFormat(JSON.stringify(messages)))
}

module.exports = {
  compact,
  countTokens,
  detectFormat,
  Session,
  ContextManager,
  CompactorError: errors.CompactorError,
  InvalidInputError: errors.InvalidInputError,
  UnsupportedInputError: errors.UnsupportedInputError,
  ConfigError: errors.ConfigError,
  SessionError: errors.SessionError,
  ContextExhaustedError: errors.ContextExhaustedError,
  BusyError: errors.BusyError,
}
