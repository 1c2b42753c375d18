// The Node package's benchmark (BENCHMARKS.md, "Node package"): run by
// scripts/bench-node.sh with the addon built in release.
//
// `compact` from Node on the largest shared mini-swe-agent trajectory (JS objects in and
// out included) against the Rust library doing the same work (the `python_parity`
// example, fresh compactor per pass): medians and their ratio. Then the event loop's
// progress during the same passes (a 1 ms interval's ticks), which must be > 0: a pass
// that blocked the loop would leave it at 0 (the self-check below fails the run).
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { compact } = require('../crates/llm-compactor-node')

const REPO = path.resolve(__dirname, '..')
const DATA = process.env.LLM_COMPACTOR_DATA || path.join(REPO, '..', 'shared', 'data')
const BUDGET = Number(process.env.BENCH_BUDGET || 32000)
const RUNS = Number(process.env.BENCH_RUNS || 20)

function largest() {
  const dir = path.join(DATA, 'trajectories', 'mini-swe-agent')
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.traj.json'))
  if (files.length === 0) throw new Error(`no trajectories under ${dir}`)
  files.sort((a, b) => fs.statSync(path.join(dir, a)).size - fs.statSync(path.join(dir, b)).size)
  return path.join(dir, files.at(-1))
}

function median(times) {
  const sorted = [...times].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function main() {
  const file = largest()
  const messages = JSON.parse(fs.readFileSync(file, 'utf8')).messages
  const times = []
  let result
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint()
    result = await compact(messages, { budget: BUDGET })
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  const node = median(times)
  console.log(`node: ${path.basename(file)}: ${result.tokensBefore} tokens -> ${result.tokensAfter}, median ${node.toFixed(2)} ms over ${RUNS} runs`)

  const out = execFileSync('cargo', ['run', '--quiet', '--release', '-p', 'llm-compactor', '--features', 'http', '--example', 'python_parity', '--', file, String(BUDGET), String(RUNS)], { cwd: REPO, encoding: 'utf8' })
  const fresh = out.split('\n').find((l) => l.includes('(fresh compactor)'))
  const rust = Number(fresh.split('median ')[1].split(' ms')[0])
  console.log(`rust: median ${rust.toFixed(2)} ms (python_parity, fresh compactor)`)
  console.log(`node / rust: ${(node / rust).toFixed(2)}x`)

  let ticks = 0
  const timer = setInterval(() => ticks++, 1)
  const started = Date.now()
  await Promise.all(Array.from({ length: 4 }, () => compact(messages, { budget: BUDGET })))
  clearInterval(timer)
  const elapsed = Date.now() - started
  console.log(`event loop during 4 concurrent passes (${elapsed} ms): ${ticks} ticks of a 1 ms interval`)
  if (ticks === 0 && elapsed > 20) {
    console.error('self-check failed: the event loop did not turn while passes ran')
    process.exit(1)
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
