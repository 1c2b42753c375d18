/**
 * The OpenAI Agents SDK (JS) adapter (`llm-compactor/agents`): a `Session` that compacts.
 *
 * ```ts
 * const session = new CompactingSession(new MemorySession(), { budget: 16_000 })
 * await run(agent, 'next step', { session, callModelInputFilter: session.modelInputFilter })
 * ```
 */
import type { AgentInputItem, Session, CallModelInputFilter } from '@openai/agents'
import type { CompactOptions, CompactionResult } from './index'

/** What a `CompactingSession` is built with: `compact`'s options and its own. */
export interface CompactingSessionOptions extends Omit<CompactOptions, 'format' | 'system'> {
  /** A pass's items replace the wrapped session's (default true). */
  rewrite?: boolean
}

/**
 * A `Session` wrapping `inner`: `getItems` returns its items compacted when a pass is due
 * (the middle replaced by one summary message, tool calls kept with their results), and
 * with `rewrite` stores them in `inner`. Items of a kind the compactor does not read are
 * returned as they are.
 */
export class CompactingSession implements Session {
  constructor(inner: Session, options?: CompactingSessionOptions)
  readonly inner: Session
  readonly rewrite: boolean
  /** The last pass's result (null before the first). */
  readonly lastResult: CompactionResult | null
  /** How many passes ran. */
  readonly compactions: number
  getSessionId(): Promise<string>
  getItems(limit?: number): Promise<AgentInputItem[]>
  addItems(items: AgentInputItem[]): Promise<void>
  popItem(): Promise<AgentInputItem | undefined>
  clearSession(): Promise<void>
  /** For a run's `callModelInputFilter`: the model input compacted before each model call (bound). */
  readonly modelInputFilter: CallModelInputFilter
}
