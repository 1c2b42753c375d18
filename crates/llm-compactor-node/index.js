// The llm-compactor package: loads the native addon built for this platform.
//
// Built here for linux-x64-gnu only (`scripts/node-package.sh`); other platforms get a
// clear error naming what is missing rather than a crash.
'use strict'

const { join } = require('node:path')
const { existsSync } = require('node:fs')

const triple = `${process.platform}-${process.arch}${process.platform === 'linux' ? '-gnu' : ''}`
const file = join(__dirname, `llm-compactor.${triple}.node`)
if (!existsSync(file)) {
  throw new Error(
    `llm-compactor: no native addon for ${triple} (looked for ${file}); build it with scripts/node-package.sh`
  )
}
const native = require(file)

/**
 * The caller's summarizer (sync or async; a string or {text, truncated?, usage?}) as the
 * async function the addon calls: it always resolves to the answer as JSON text.
 */
function wrapSummarizer(summarize) {
  if (typeof summarize !== 'function') {
    throw new TypeError('llm-compactor: options.summarizer must be "ledger", "none" or a function')
  }
  return async ({ system, transcript, maxOutputTokens }) => {
    const answer = await summarize({ system, transcript, maxOutputTokens })
    return JSON.stringify(typeof answer === 'string' ? { text: answer } : answer)
  }
}

// Messages and options cross as JSON text: V8's JSON.stringify / JSON.parse are several
// times faster than converting a large conversation object by object through N-API.
const text = (value) => (value === undefined || value === null ? value : JSON.stringify(value))

/** One compaction pass; `options.summarizer` may be a function that writes the summary. */
async function compact(messages, options) {
  const summarizer = options && options.summarizer
  if (summarizer === undefined || typeof summarizer === 'string') {
    return JSON.parse(await native.compact(JSON.stringify(messages), text(options)))
  }
  const { summarizer: _, ...rest } = options
  return JSON.parse(await native.compact(JSON.stringify(messages), JSON.stringify(rest), wrapSummarizer(summarizer)))
}

/** The conversation's tokens. */
function countTokens(messages, options) {
  return native.countTokens(JSON.stringify(messages), text(options))
}

/** The format `messages` are read in when `format` is `auto`. */
function detectFormat(messages) {
  return native.detectFormat(JSON.stringify(messages))
}

module.exports = { compact, countTokens, detectFormat }
