/**
 * The LangChain.js adapter (`llm-compactor/langchain`): a langchain v1 agent middleware.
 *
 * ```ts
 * const agent = createAgent({ model, tools, middleware: [compactorMiddleware({ budget: 16_000 })] })
 * ```
 */
import type { AgentMiddleware } from 'langchain'
import type { CompactOptions, CompactionResult } from './index'

/** The middleware, with what its passes did. */
export type CompactorAgentMiddleware = AgentMiddleware & {
  /** The last pass's result (null before the first). */
  readonly lastResult: CompactionResult | null
  /** How many passes ran. */
  readonly compactions: number
}

/**
 * Before each model call, over the trigger, compacts the agent state's messages (tool
 * calls kept with their results; the summary kept in the state). Each answer's
 * `response_metadata.compactor` is a `CompactorMetadata`: the request's tokens and the
 * pass it follows, with its receipt. Options as `compact`'s.
 */
export function compactorMiddleware(options?: Omit<CompactOptions, 'format' | 'system'>): CompactorAgentMiddleware
