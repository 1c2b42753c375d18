// Issue 44: every ```js block of the guides (docs/guide/*.md) runs as written, so the
// book cannot rot. A block marked `<!-- not run: REASON -->` on the line before its fence
// is not run (the Rust gauge, crates/compactor-cli/tests/docs_blocks.rs, requires the
// reason); every other block is, each in its own async scope (top-level `await` allowed),
// in a scratch directory, against a scripted OpenAI upstream on 127.0.0.1 (chat
// completions and Responses). What is substituted, and nothing else:
//
// - `import { a, b as c } from 'm'` becomes `const { a, b: c } = require('m')`, and the
//   package's own name (`llm-compactor`, `llm-compactor/langchain`, ...) resolves to this
//   checkout;
// - names a block uses but does not declare come from a prelude: `messages` (the repo's
//   example session, examples/sessions/long-agent-session.json), `tools` (`[]`), `task`
//   and `instructions` (a sentence each); any other free name fails the block;
// - the environment has `OPENAI_API_KEY` set to a test key, `OPENAI_BASE_URL` set to the
//   scripted upstream (a client built with no base URL reaches it, never the provider),
//   and `OPENAI_AGENTS_DISABLE_TRACING=1`.
//
// A block that sends a model request (`.invoke(`, `run(`) must have reached the upstream.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { createRequire } = require('node:module')

const PKG = path.resolve(__dirname, '..')
const REPO = path.resolve(PKG, '../..')
const MARKER = '<!-- not run:'
const ANSWER = 'upstream says hi'

/** The page's unmarked ```js blocks: { line, source }. */
function jsBlocks(text) {
  const lines = text.split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```js') continue
    const start = i
    const body = []
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) body.push(lines[i])
    const previous = start > 0 ? lines[start - 1].trim() : ''
    if (!previous.startsWith(MARKER)) out.push({ line: start + 1, source: body.join('\n') + '\n' })
  }
  return out
}

/** ES imports as requires. */
function requires(source) {
  return source.replace(/^import\s+\{([^}]*)\}\s+from\s+(['"][^'"]+['"])\s*;?$/gm, (_, names, from) => {
    const fields = names.split(',').map((n) => n.trim()).filter(Boolean).map((n) => n.replace(/\s+as\s+/, ': '))
    return `const { ${fields.join(', ')} } = require(${from})`
  }).replace(/^import\s+(\w+)\s+from\s+(['"][^'"]+['"])\s*;?$/gm, 'const $1 = require($2)')
}

const PRELUDE = {
  messages: `let messages = JSON.parse(fs.readFileSync(${JSON.stringify(path.join(REPO, 'examples/sessions/long-agent-session.json'))}, 'utf8'))`,
  tools: 'const tools = []',
  task: "const task = 'Why does test_pricing fail?'",
  instructions: "const instructions = 'You are a careful coding agent.'",
}

/** Whether `source` declares `name` (`const name`, or `{ name }` destructured; `{ name: x }` is not). */
function declares(source, name) {
  return new RegExp(`\\b(const|let|var)\\s+${name}\\b`).test(source) ||
    new RegExp(`\\b(const|let|var)\\s*\\{[^}]*\\b${name}\\b\\s*[,}=]`).test(source)
}

function prelude(source) {
  return Object.entries(PRELUDE)
    .filter(([name]) => new RegExp(`\\b${name}\\b`).test(source) && !declares(source, name))
    .map(([, code]) => code)
    .join('\n')
}

/** `require` from the package, its own name mapped to this checkout. */
const packageRequire = createRequire(path.join(PKG, 'index.js'))
function guideRequire(name) {
  if (name === 'llm-compactor') return packageRequire(PKG)
  if (name.startsWith('llm-compactor/')) return packageRequire(path.join(PKG, name.slice('llm-compactor/'.length)))
  return packageRequire(name)
}

/** Answers chat completions and Responses requests with the smallest valid reply. */
async function upstream() {
  const seen = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const request = body ? JSON.parse(body) : {}
      seen.push({ path: req.url, request })
      const model = request.model || 'm'
      const reply = req.url.endsWith('/responses')
        ? { id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model,
            output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: ANSWER, annotations: [] }] }],
            parallel_tool_calls: true, tool_choice: 'auto', tools: [],
            usage: { input_tokens: 10, output_tokens: 3, total_tokens: 13, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } }
        : { id: 'c', object: 'chat.completion', created: 1, model,
            choices: [{ index: 0, message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 } }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(reply))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { seen, origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) }
}

test('the harness finds unmarked blocks, rewrites imports and supplies free names only', () => {
  const page = '```js\nconst { compact } = require(\'llm-compactor\')\n```\n\n<!-- not run: a reason -->\n```js\nboom()\n```\n'
  assert.deepEqual(jsBlocks(page), [{ line: 1, source: "const { compact } = require('llm-compactor')\n" }])
  assert.equal(requires("import { a, b as c } from 'x'"), "const { a, b: c } = require('x')")
  assert.equal(requires("import OpenAI from 'openai'"), "const OpenAI = require('openai')")
  assert.equal(prelude('const { messages } = await f(tools)'), 'const tools = []')
  assert.match(prelude('const { messages: originals } = s.expand(); s.append(messages)'), /^let messages =/)
})

const pages = fs.readdirSync(path.join(REPO, 'docs/guide')).filter((f) => f.endsWith('.md')).sort()
for (const page of pages) {
  const blocks = jsBlocks(fs.readFileSync(path.join(REPO, 'docs/guide', page), 'utf8'))
  for (const block of blocks) {
    test(`docs/guide/${page}:${block.line} runs`, async () => {
      const server = await upstream()
      const env = { OPENAI_API_KEY: 'sk-guide', OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_AGENTS_DISABLE_TRACING: '1' }
      const saved = { cwd: process.cwd(), env: Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]])) }
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guide-js-'))
      Object.assign(process.env, env)
      process.chdir(dir)
      try {
        const body = `${prelude(block.source)}\n${requires(block.source)}`
        const AsyncFunction = (async () => {}).constructor
        await new AsyncFunction('require', 'fs', body)(guideRequire, fs)
        if (/\.invoke\(|\brun\(/.test(block.source)) {
          assert.ok(server.seen.length > 0, 'the block sent a model request, and the upstream saw none')
        }
      } finally {
        process.chdir(saved.cwd)
        for (const [k, v] of Object.entries(saved.env)) {
          if (v === undefined) delete process.env[k]
          else process.env[k] = v
        }
        fs.rmSync(dir, { recursive: true, force: true })
        await server.close()
      }
    })
  }
}
