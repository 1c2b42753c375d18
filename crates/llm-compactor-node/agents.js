// The OpenAI Agents SDK (JS) adapter: a `Session` that compacts on read, the JS
// counterpart of the Python `llm_compactor.agents.CompactingSession`.
//
//   const { CompactingSession } = require('llm-compactor/agents')
//   const session = new CompactingSession(new MemorySession(), { budget: 16_000 })
//   await run(agent, 'next step', { session, callModelInputFilter: session.modelInputFilter })
//
// `getItems` reads the wrapped session's items (read by agents-items.js) and, over the
// trigger, returns the compacted items: the middle replaced by one summary message, tool
// calls kept with their results, unchanged items as the same objects. With `rewrite`
// (the default) they also replace the wrapped session's, so the summary is kept and the
// next read starts from it. The runner reads the session once per run; a run with many
// tool rounds grows its input in memory, which `modelInputFilter` (for the run's
// `callModelInputFilter`) compacts before each model call. Items of a kind the compactor
// does not read (hosted tools, ...) are returned as they are.
'use strict'

const { compact, countTokens } = require('./core')
const { UnsupportedInputError } = require('./errors')
const { toResponses, fromResponses } = require('./agents-items')

const DEFAULT_BUDGET = 128_000
const DEFAULT_TRIGGER = 0.7

/** A `Session` wrapping `inner` that returns compacted items. */
class CompactingSession {
  /**
   * `options`: `compact`'s (budget, summarizer, ...), `format` and `system` excepted, and
   * `rewrite` (default true: a pass's items replace the wrapped session's).
   */
  constructor(inner, options = {}) {
    const { rewrite = true, format: _f, system: _s, ...compactOptions } = options
    this.inner = inner
    this.rewrite = rewrite
    this.options = compactOptions
    this.trigger = (compactOptions.budget ?? DEFAULT_BUDGET) * (compactOptions.triggerRatio ?? DEFAULT_TRIGGER)
    this.count = { format: 'responses', ...(compactOptions.counter ? { counter: compactOptions.counter } : {}) }
    /** The last pass's result (null before the first). */
    this.lastResult = null
    /** How many passes ran. */
    this.compactions = 0
    // The last model input the filter compacted (its JSON and length) and what it sent.
    this.lastInput = null
    this.modelInputFilter = this.modelInputFilter.bind(this)
  }

  /** `items` compacted when a pass is due (the instructions count, and are kept), else null. */
  async compacted(items, instructions) {
    if (items.length === 0) return null
    let wire
    try {
      wire = toResponses(items)
    } catch (e) {
      if (e instanceof UnsupportedInputError) return null
      throw e
    }
    const request = instructions ? { instructions, input: wire } : wire
    if (countTokens(request, this.count) <= this.trigger) return null
    const result = await compact(request, { ...this.options, format: 'responses' })
    if (result.tokensAfter >= result.tokensBefore) return null
    this.lastResult = result
    this.compactions += 1
    return fromResponses(result.messages, items)
  }

  getSessionId() {
    return this.inner.getSessionId()
  }

  /** The wrapped session's items, compacted when a pass is due; the last `limit` of them. */
  async getItems(limit) {
    let items = await this.inner.getItems()
    const out = await this.compacted(items)
    if (out) {
      items = out
      if (this.rewrite) {
        await this.inner.clearSession()
        await this.inner.addItems(items)
      }
    }
    if (limit === undefined || limit === null) return items
    return limit > 0 ? items.slice(-limit) : []
  }

  addItems(items) {
    return this.inner.addItems(items)
  }

  popItem() {
    return this.inner.popItem()
  }

  clearSession() {
    return this.inner.clearSession()
  }

  /**
   * For a run's `callModelInputFilter`: the model input, compacted when a pass is due. The
   * runner resends its whole input at every call; while an input extends the one the filter
   * compacted, what was sent for it plus the new items is what is counted and sent, so the
   * summary stays the same (the prompt cache keeps its prefix) until the next pass.
   */
  async modelInputFilter({ modelData }) {
    const input = modelData.input
    let working = input
    const last = this.lastInput
    if (last && input.length >= last.length && JSON.stringify(input.slice(0, last.length)) === last.json) {
      working = last.sent.concat(input.slice(last.length))
    }
    working = (await this.compacted(working, modelData.instructions)) || working
    if (working !== input) this.lastInput = { length: input.length, json: JSON.stringify(input), sent: working }
    return working === input ? modelData : { ...modelData, input: working }
  }
}

module.exports = { CompactingSession }
