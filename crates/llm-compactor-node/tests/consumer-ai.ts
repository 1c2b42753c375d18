// A typed consumer of the AI SDK middleware: `tsc --strict` over it (tsconfig.ai.json)
// checks that `compactorMiddleware` is what the real `wrapLanguageModel` takes. The
// SDK's own declarations are not checked here (skipLibCheck: they need settings of
// their own); index.d.ts is, with skipLibCheck off, by tsconfig.json.
import { compactorMiddleware, type CompactorMetadata } from '..'
import { generateText, wrapLanguageModel, type LanguageModel } from 'ai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'

async function withAiSdk(): Promise<number> {
  const provider = createOpenAICompatible({ name: 'local', baseURL: 'http://127.0.0.1:8080/v1' })
  const model: LanguageModel = wrapLanguageModel({ model: provider.chatModel('m'), middleware: compactorMiddleware({ budget: 32_000 }) })
  const { steps } = await generateText({ model, prompt: 'hi' })
  const meta = steps[0].providerMetadata?.compactor as unknown as CompactorMetadata | undefined
  // @ts-expect-error: the middleware keeps the SDK's format
  compactorMiddleware({ format: 'openai' })
  return meta?.pass?.tokensAfter ?? 0
}
void withAiSdk
