// A typed consumer of the package: `tsc --strict --noEmit` over it checks index.d.ts
// (scripts/node-package.sh). It is compiled, never run.
import {
  compact,
  countTokens,
  detectFormat,
  ContextManager,
  Session,
  CompactorError,
  ConfigError,
  ContextExhaustedError,
  type CompactOptions,
  type CompactionResult,
  type PreparedRequest,
  type Summarize,
  type SummaryArgs,
} from '..'

async function main(): Promise<number> {
  const options: CompactOptions = { budget: 4000, counter: 'o200k', summarizer: 'ledger', keepRecent: 4 }
  const result: CompactionResult = await compact([{ role: 'user', content: 'hi' }], options)
  const tokens: number = countTokens(result.messages, { counter: 'heuristic' })
  const format: string = detectFormat(result.messages)
  const exhausted: boolean = result.exhausted
  const modelCall: Summarize = async ({ transcript, maxOutputTokens }) => ({
    text: transcript.slice(0, maxOutputTokens),
    usage: { inputTokens: 1, outputTokens: 1 },
  })
  await compact([], { summarizer: modelCall })
  await compact([], { summarizer: ({ system }: SummaryArgs) => system })
  const sdk = await compact(
    [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'shell', input: { cmd: 'ls' } }] }],
    { format: 'ai-sdk', budget: 8000 },
  )
  const sdkFormat: string = sdk.format
  void sdkFormat
  // @ts-expect-error: an unknown counter is a type error
  countTokens([], { counter: 'gpt2' })
  return tokens + format.length + (exhausted ? 1 : 0) + result.tokensAfter
}

async function agentLoop(): Promise<number> {
  const manager = new ContextManager({ path: 'run.jsonl', budget: 32_000, summarizer: async () => 'summary', expand: true })
  const background: boolean = manager.prepares
  manager.push([{ role: 'user', content: 'Fix the build.' }])
  manager.beginRun()
  try {
    const sent: PreparedRequest = await manager.prepare({ tools: [manager.expandTool()], context: '' })
    if (sent.result !== null) console.log(sent.reason, sent.result.receipt)
    manager.recordResponse([{ role: 'assistant', content: 'done' }], { usage: { inputTokens: sent.requestTokens }, model: 'm' })
  } catch (e) {
    if (e instanceof ContextExhaustedError || (e instanceof CompactorError && e.code === 'ERR_BUSY')) return -1
    if (e instanceof ConfigError) console.log(e.field)
    throw e
  }
  const answer: string = manager.answerExpand({ handles: ['#0123456789'] })
  await manager.shutdown()
  // @ts-expect-error: a manager needs its transcript's path
  new ContextManager({ budget: 1 })
  // @ts-expect-error: a session keeps one wire format, not `auto`
  Session.open('s.jsonl', { format: 'auto' })
  const session = Session.open('s.jsonl', { format: 'openai' })
  session.append(manager.messages)
  const pass: CompactionResult = await session.compact({ budget: 8000 })
  const originals = session.originals().length + (session.expand('#0123456789')?.messages.length ?? 0)
  session.close()
  return answer.length + originals + pass.tokensAfter + (background ? 1 : 0)
}

void main
void agentLoop
