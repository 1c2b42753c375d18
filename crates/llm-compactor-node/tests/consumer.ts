// A typed consumer of the package: `tsc --strict --noEmit` over it checks index.d.ts
// (scripts/node-package.sh). It is compiled, never run.
import { compact, countTokens, detectFormat, type CompactOptions, type CompactionResult, type Summarize, type SummaryArgs } from '..'

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
  // @ts-expect-error: an unknown counter is a type error
  countTokens([], { counter: 'gpt2' })
  return tokens + format.length + (exhausted ? 1 : 0) + result.tokensAfter
}

void main
