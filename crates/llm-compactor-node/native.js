// The llm-compactor package's native side: loads the addon built for this platform,
// and the helpers every wrapper shares.
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

/**
 * `options` split for the addon: the JSON text of every option but `summarizer`, and the
 * wrapped function when `summarizer` is one (a name stays among the options).
 */
function splitSummarizer(options) {
  const summarizer = options && options.summarizer
  if (summarizer === undefined || summarizer === null || typeof summarizer === 'string') {
    return [text(options), undefined]
  }
  const { summarizer: _, ...rest } = options
  return [JSON.stringify(rest), wrapSummarizer(summarizer)]
}

module.exports = { native, text, splitSummarizer }
