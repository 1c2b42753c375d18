// A typed consumer of the LangChain.js middleware: `tsc --strict` over it (tsconfig.ai.json)
// checks that `compactorMiddleware` is what the real `createAgent` takes.
import { compactorMiddleware } from '../langchain'
import type { CompactorMetadata } from '..'
import { createAgent, AIMessage } from 'langchain'
import { ChatOpenAI } from '@langchain/openai'

async function withLangChain(): Promise<number> {
  const model = new ChatOpenAI({ model: 'm', configuration: { baseURL: 'http://127.0.0.1:8080/v1' } })
  const middleware = compactorMiddleware({ budget: 16_000, keepRecent: 4 })
  const agent = createAgent({ model, tools: [], middleware: [middleware] })
  const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'hi' }] })
  const last = messages.at(-1)
  const meta = AIMessage.isInstance(last) ? (last.response_metadata.compactor as CompactorMetadata | undefined) : undefined
  const name: string = middleware.name
  // @ts-expect-error: the middleware is langchain's AgentMiddleware (not `any`)
  const wrong: number = middleware.name
  void name, wrong
  // @ts-expect-error: the middleware keeps LangChain's messages
  compactorMiddleware({ format: 'openai' })
  return (meta?.pass?.tokensAfter ?? 0) + middleware.compactions + (middleware.lastResult?.tokensAfter ?? 0)
}
void withLangChain
