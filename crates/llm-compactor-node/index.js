// The llm-compactor package: one compaction pass (`compact`), counting, the agent loop
// (`ContextManager`), transcripts (`Session`), the AI SDK middleware and the typed errors.
'use strict'

const errors = require('./errors')
const { compact, countTokens, detectFormat } = require('./core')
const { Session, ContextManager } = require('./session')
const { compactorMiddleware } = require('./middleware')

module.exports = {
  compact,
  countTokens,
  detectFormat,
  Session,
  ContextManager,
  compactorMiddleware,
  CompactorError: errors.CompactorError,
  InvalidInputError: errors.InvalidInputError,
  UnsupportedInputError: errors.UnsupportedInputError,
  ConfigError: errors.ConfigError,
  SessionError: errors.SessionError,
  ContextExhaustedError: errors.ContextExhaustedError,
  BusyError: errors.BusyError,
}
