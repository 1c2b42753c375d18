/**
 * llm-compactor: keeps a tool-using LLM agent inside its context window.
 *
 * Messages are what your SDK produced: OpenAI chat messages, Anthropic Messages turns
 * (with `system` in the options), OpenAI Responses input items, or a whole request object.
 * They come back in the same format and shape.
 */

/** A message or item as your SDK writes it (read by the library's codecs). */
export type WireMessage = Record<string, unknown>

/** What a summarizer function is called with. */
export interface SummaryArgs {
  /** The summarizer's instructions. */
  system: string
  /** The rendered messages to summarize. */
  transcript: string
  /** The most tokens the answer may take. */
  maxOutputTokens: number
}

/** What a summarizer function answers. */
export type SummaryAnswer =
  | string
  | {
      text: string
      truncated?: boolean
      usage?: { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number }
    }

/** A summarizer: your model call. */
export type Summarize = (args: SummaryArgs) => SummaryAnswer | Promise<SummaryAnswer>

/** What the options may say; every one has the library's default. */
export interface CompactOptions {
  /** The context budget in tokens (default 128,000). */
  budget?: number
  /** Share of the budget at which a pass is due (default 0.7). */
  triggerRatio?: number
  /** Share of the budget a pass aims at (default 0.4). */
  targetRatio?: number
  /** Messages kept verbatim at the end (default 6). */
  keepRecent?: number
  /** Tokens over which an old tool result may be stubbed. */
  toolResultCap?: number
  /** Stub old tool results before summarizing (default true). */
  ageObservations?: boolean
  /** Cap on the recent window's tokens. */
  maxRecentTokens?: number
  /** The token counter: `o200k` (default), `cl100k` or `heuristic`. */
  counter?: 'o200k' | 'o200k_base' | 'cl100k' | 'cl100k_base' | 'heuristic'
  /** The ledger's cap in tokens; 0 turns the ledger off. */
  ledgerMaxTokens?: number
  /**
   * `ledger` (default: the model-free summary), `none` (the hard trim), or a function that
   * writes the summary (your model call): sync or async, returning the text or
   * `{text, truncated?, usage?}`. It runs on the event loop; the pass awaits it off it. A
   * throw or rejection is a failed attempt (the pass retries, then falls back), not a crash.
   */
  summarizer?: 'ledger' | 'none' | Summarize
  /** The messages' format (default `auto`: detected). */
  format?: 'auto' | 'openai' | 'anthropic' | 'responses' | 'mini-swe-agent'
  /** Anthropic's `system` beside a bare list of turns. */
  system?: string | WireMessage[]
  /** The pass's target in tokens (default: the compactor's own target). */
  target?: number
}

/** The options `countTokens` reads. */
export type CountOptions = Pick<CompactOptions, 'counter' | 'format' | 'system'>

/** Why a pass ended `exhausted`, in numbers. */
export interface Exhaustion {
  limit: number
  tokensAfter: number
  stickyTokens: number
  recentTokens: number
  recentMessages: number
}

/** What `compact` did. */
export interface CompactionResult {
  /** The conversation to use from now on, in your format and shape. */
  messages: WireMessage[]
  /** The whole request object when you passed one, else null. */
  request: WireMessage | null
  /** The format the messages were read and written in. */
  format: string
  /** The inserted summary message's text ('' when none). */
  summary: string
  /** Messages replaced by the summary or dropped by the hard trim. */
  dropped: number
  /** Every message at or before this index was replaced (-1: none). */
  cutIndex: number
  tokensBefore: number
  tokensAfter: number
  /** The summarizer failed and the oldest messages were dropped unsummarized. */
  fallback: boolean
  /** Even the best result is over the budget (or target). */
  exhausted: boolean
  exhaustion?: Exhaustion
  /** The tool results this pass stubbed (by index into the input). */
  elisions: Array<Record<string, unknown>>
  /** What the summarizer was billed. */
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number }
  /** Every summarizer request of this pass. */
  attempts: Array<Record<string, unknown>>
  summarizer?: string
  /** What the pass did to the prompt cache, and its estimated net cost. */
  receipt?: Record<string, unknown>
}

/**
 * One compaction pass (like a manual `/compact`: it compacts even below the trigger),
 * run off the event loop. Rejects with an `Error` whose `code` is `InvalidArg` for bad
 * input or options (naming the message index or option).
 */
export function compact(messages: WireMessage[] | WireMessage, options?: CompactOptions): Promise<CompactionResult>

/** The conversation's tokens. */
export function countTokens(messages: WireMessage[] | WireMessage, options?: CountOptions): number

/** The format `messages` are read in when `format` is `auto`. */
export function detectFormat(messages: WireMessage[] | WireMessage): string
