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

module.exports = {
  compact: native.compact,
  countTokens: native.countTokens,
  detectFormat: native.detectFormat,
}
