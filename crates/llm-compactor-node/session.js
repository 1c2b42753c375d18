// `Session` (a transcript) and `ContextManager` (the agent loop) over the addon's
// NativeSession / NativeContextManager: messages cross as JSON text in the session's
// format, errors come out as the package's classes (errors.js).
'use strict'

const { native, text, splitSummarizer } = require('./native')
const { call, settle } = require('./errors')
const aisdk = require('./aisdk')

/**
 * How a session or manager of `format` speaks to the addon: the addon's format and the
 * conversions of messages in and out (AI SDK messages are kept as OpenAI's).
 */
function codec(format) {
  if (format !== 'ai-sdk') return { native: format, write: JSON.stringify, read: (messages) => messages }
  return {
    native: 'openai',
    write: (messages) => JSON.stringify(call(() => aisdk.toOpenAI(messages))),
    read: (messages) => aisdk.fromOpenAI(messages),
  }
}

/** An expansion's JSON text, its messages read by `codec`. */
function expansion(json, codec) {
  const raw = JSON.parse(json)
  if (raw === null) return null
  return { handle: raw.handle, messages: codec.read(raw.messages) }
}

/** A pass's result (parsed), its messages read by `codec`. */
function result(raw, codec, format) {
  if (format === 'ai-sdk') {
    raw.messages = codec.read(raw.messages)
    raw.format = format
  }
  return raw
}

/** The JSON text of billed usage as the library reads it (camelCase or snake_case in). */
function usageJson(usage) {
  if (usage === undefined || usage === null) return undefined
  const pick = (camel, snake) => usage[camel] ?? usage[snake] ?? 0
  return JSON.stringify({
    input_tokens: pick('inputTokens', 'input_tokens'),
    output_tokens: pick('outputTokens', 'output_tokens'),
    cache_read_tokens: pick('cacheReadTokens', 'cache_read_tokens'),
    cache_write_tokens: pick('cacheWriteTokens', 'cache_write_tokens'),
  })
}

/**
 * A session transcript: an append-only JSONL file that replays byte-identically (every
 * pass recorded by id, every original message kept). One writer at a time (locked).
 */
class Session {
  constructor(core, format) {
    this._core = core
    this._codec = codec(format)
    this.format = format
  }

  /** Opens the transcript at `path` (created when absent; a torn last line repaired). */
  static open(path, { format = 'openai' } = {}) {
    return new Session(call(() => new native.NativeSession(path, codec(format).native)), format)
  }

  get path() {
    return this._core.path
  }

  /** Appends messages (one write; nothing is written when one is refused); how many. */
  append(messages) {
    const json = this._codec.write(messages)
    call(() => this._core.append(json))
    return messages.length
  }

  /** The conversation the transcript replays to (passes applied). */
  replay() {
    return this._codec.read(JSON.parse(call(() => this._core.replay())))
  }

  /** Every message ever appended, as recorded (no pass removes one from the file). */
  originals() {
    return this._codec.read(JSON.parse(call(() => this._core.originals())))
  }

  /** The original messages behind a handle a summary or stub names; null when none. */
  expand(handle) {
    return expansion(call(() => this._core.expand(handle)), this._codec)
  }

  /** One pass over the conversation (options as `compact`'s), recorded in the transcript. */
  async compact(options) {
    const [json, summarizer] = call(() => splitSummarizer(options))
    return result(JSON.parse(await settle(this._core.compact(json, summarizer))), this._codec, this.format)
  }

  /** Releases the transcript's lock. */
  close() {
    call(() => this._core.close())
  }
}

const SETTINGS = ['window', 'completionReserve', 'safetyMargin', 'maxForcedCompactions', 'prepare']

/** The prepared request as returned to the caller, its messages read by `codec`. */
function prepared(json, codec, format) {
  const raw = JSON.parse(json)
  return {
    messages: codec.read(raw.messages),
    requestTokens: raw.requestTokens,
    staleThinking: raw.staleThinking || 0,
    reason: raw.pass ? raw.pass.reason : null,
    result: raw.pass ? result(raw.pass.result, codec, format) : null,
  }
}

/**
 * The agent-loop glue: before each request `prepare` (counts it, compacts when needed,
 * records the pass); after each response `recordResponse`. With a summarizer function
 * (a model call) passes are prepared in the background by default (`prepare: false`
 * runs them inline).
 */
class ContextManager {
  constructor({ path, format = 'openai', ...options } = {}) {
    if (typeof path !== 'string') throw new TypeError('llm-compactor: ContextManager needs options.path (the transcript)')
    const settings = {}
    const compactor = {}
    for (const [key, value] of Object.entries(options)) {
      if (value === undefined) continue
      if (SETTINGS.includes(key)) settings[key] = value
      else compactor[key] = value
    }
    const [json, summarizer] = call(() => splitSummarizer(compactor))
    this._codec = codec(format)
    this._core = call(() => new native.NativeContextManager(path, this._codec.native, json, JSON.stringify(settings), summarizer))
    this.format = format
  }

  get path() {
    return this._core.path
  }

  /** True when passes are prepared in the background. */
  get prepares() {
    return call(() => this._core.prepares)
  }

  /** Appends messages (the user's, the harness's). */
  push(messages) {
    const json = this._codec.write(messages)
    call(() => this._core.push(json))
  }

  /** Starts a run: the forced-pass allowance is renewed. */
  beginRun() {
    call(() => this._core.beginRun())
  }

  /** The conversation to send (compacted first when needed). */
  async prepare({ tools, context } = {}) {
    return prepared(await settle(this._core.prepare(text(tools), context)), this._codec, this.format)
  }

  /** After the provider refused the request as too long: a forced pass. */
  async onContextLengthExceeded({ tools, context } = {}) {
    return prepared(await settle(this._core.onContextLengthExceeded(text(tools), context)), this._codec, this.format)
  }

  /** Records the response's billed usage and appends its messages. */
  recordResponse(messages, { usage, model } = {}) {
    const json = this._codec.write(messages)
    call(() => this._core.recordResponse(json, usageJson(usage), model))
  }

  /** The conversation as it stands. */
  get messages() {
    return this._codec.read(JSON.parse(call(() => this._core.messages())))
  }

  /** Every message ever appended to the transcript, as recorded. */
  originals() {
    return this._codec.read(JSON.parse(call(() => this._core.originals())))
  }

  /** The original messages behind a handle; null when none. */
  expand(handle) {
    return expansion(call(() => this._core.expand(handle)), this._codec)
  }

  /** The `compactor_expand` tool to offer the model (OpenAI chat shape). */
  expandTool() {
    return JSON.parse(call(() => this._core.expandTool()))
  }

  /** The answer to a `compactor_expand` call (its arguments, as text or an object). */
  answerExpand(args, maxChars) {
    const json = typeof args === 'string' ? args : JSON.stringify(args)
    return call(() => this._core.answerExpand(json, maxChars))
  }

  /** Stops a background preparation and waits for it to end. */
  async shutdown() {
    await settle(this._core.shutdown())
  }
}

module.exports = { Session, ContextManager }
