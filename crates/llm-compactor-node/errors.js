// The package's errors: one class per kind of failure, each with a stable `code`.
//
// The addon rejects with a plain Error whose message starts with a one-line tag naming
// the class, the message index and the option at fault (src/errors.rs); `translate`
// turns it into an instance of the class below, without the tag.
'use strict'

/** The root of the package's errors. */
class CompactorError extends Error {
  constructor(message, { index = null, field = null, code = 'ERR_COMPACTOR' } = {}) {
    super(message)
    this.name = new.target.name
    /** A stable code to branch on. */
    this.code = code
    /** The index of the message at fault, when one is. */
    this.index = index
    /** The option at fault, when one is. */
    this.field = field
  }
}

/** The conversation cannot be read, or is malformed at `index`. */
class InvalidInputError extends CompactorError {
  constructor(message, meta = {}) {
    super(message, { code: 'ERR_INVALID_INPUT', ...meta })
  }
}

/** A well-formed request with parts the codec does not model: send it unchanged. */
class UnsupportedInputError extends InvalidInputError {
  constructor(message, meta = {}) {
    super(message, { ...meta, code: 'ERR_UNSUPPORTED_INPUT' })
  }
}

/** An invalid option; `field` names it. */
class ConfigError extends CompactorError {
  constructor(message, meta = {}) {
    super(message, { code: 'ERR_CONFIG', ...meta })
  }
}

/** A session transcript could not be created, read or appended to (or is closed). */
class SessionError extends CompactorError {
  constructor(message, meta = {}) {
    super(message, { code: 'ERR_SESSION', ...meta })
  }
}

/** Even the best pass does not fit; the transcript holds the best conversation. */
class ContextExhaustedError extends CompactorError {
  constructor(message, meta = {}) {
    super(message, { code: 'ERR_CONTEXT_EXHAUSTED', ...meta })
  }
}

/** A synchronous call on an object whose `prepare` / `compact` is still running. */
class BusyError extends CompactorError {
  constructor(message, meta = {}) {
    super(message, { code: 'ERR_BUSY', ...meta })
  }
}

const classes = { CompactorError, InvalidInputError, UnsupportedInputError, ConfigError, SessionError, ContextExhaustedError, BusyError }
const TAG = 'llm-compactor:'

/** The addon's error as the package's class (any other error unchanged). */
function translate(error) {
  if (!error || typeof error.message !== 'string' || !error.message.startsWith(TAG)) return error
  const newline = error.message.indexOf('\n')
  let meta
  try {
    meta = JSON.parse(error.message.slice(TAG.length, newline))
  } catch {
    return error
  }
  const Class = classes[meta.class] || CompactorError
  const translated = new Class(error.message.slice(newline + 1), { index: meta.index, field: meta.field })
  return translated
}

/** `f()`, its error translated. */
function call(f) {
  try {
    return f()
  } catch (e) {
    throw translate(e)
  }
}

/** `promise`, its rejection translated. */
async function settle(promise) {
  try {
    return await promise
  } catch (e) {
    throw translate(e)
  }
}

module.exports = { ...classes, translate, call, settle }
