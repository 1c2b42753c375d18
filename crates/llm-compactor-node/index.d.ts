/**
 * llm-compactor: keeps a tool-using LLM agent inside its context window.
 *
 * Messages are what your SDK produced: OpenAI chat messages, Anthropic Messages turns
 * (with `system` in the options), OpenAI Responses input items, a whole request object, or
 * the Vercel AI SDK's `ModelMessage`s.
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
  /**
   * The messages' format (default `auto`: detected). `ai-sdk`: the Vercel AI SDK's
   * `ModelMessage`s (and a middleware's `LanguageModelV2Prompt`), returned in that shape.
   */
  format?: 'auto' | 'openai' | 'anthropic' | 'responses' | 'mini-swe-agent' | 'ai-sdk'
  /** Anthropic's `system` beside a bare list of turns. */
  system?: string | WireMessage[]
  /** The pass's target in tokens (default: the compactor's own target). */
  target?: number
  /** Summaries and stubs name the handles of what they replace, for `expand` (default false). */
  expand?: boolean
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
 * run off the event loop. Rejects with a `ConfigError` (naming the option in `field`) or an
 * `InvalidInputError` (naming the message in `index`).
 */
export function compact(messages: WireMessage[] | WireMessage, options?: CompactOptions): Promise<CompactionResult>

/** The conversation's tokens. */
export function countTokens(messages: WireMessage[] | WireMessage, options?: CountOptions): number

/** The format `messages` are read in when `format` is `auto`. */
export function detectFormat(messages: WireMessage[] | WireMessage): string

/** The root of the package's errors; `code` is stable, `index` / `field` locate the fault. */
export class CompactorError extends Error {
  readonly code: 'ERR_COMPACTOR' | 'ERR_INVALID_INPUT' | 'ERR_UNSUPPORTED_INPUT' | 'ERR_CONFIG' | 'ERR_SESSION' | 'ERR_CONTEXT_EXHAUSTED' | 'ERR_BUSY'
  /** The index of the message at fault, when one is. */
  readonly index: number | null
  /** The option at fault, when one is. */
  readonly field: string | null
}
/** The conversation cannot be read, or is malformed at `index` (code `ERR_INVALID_INPUT`). */
export class InvalidInputError extends CompactorError {}
/** A well-formed request the codec does not model: send it unchanged (`ERR_UNSUPPORTED_INPUT`). */
export class UnsupportedInputError extends InvalidInputError {}
/** An invalid option; `field` names it (`ERR_CONFIG`). */
export class ConfigError extends CompactorError {}
/** A transcript could not be created, read or appended to, or is closed (`ERR_SESSION`). */
export class SessionError extends CompactorError {}
/** Even the best pass does not fit; the transcript holds the best conversation (`ERR_CONTEXT_EXHAUSTED`). */
export class ContextExhaustedError extends CompactorError {}
/** A synchronous call while the object's `prepare` / `compact` still runs (`ERR_BUSY`). */
export class BusyError extends CompactorError {}

/** The wire format a transcript is kept in. */
export type SessionFormat = 'openai' | 'anthropic' | 'responses' | 'ai-sdk'

/** What a handle expands to: the original messages, in the session's format. */
export interface Expansion {
  handle: string
  messages: WireMessage[]
}

/** A session transcript: an append-only JSONL file that replays byte-identically. */
export class Session {
  private constructor()
  /** Opens the transcript at `path` (created when absent; a torn last line repaired). */
  static open(path: string, options?: { format?: SessionFormat }): Session
  readonly path: string
  readonly format: SessionFormat
  /** Appends messages with one write (none when one is refused); how many. */
  append(messages: WireMessage[]): number
  /** The conversation the transcript replays to (passes applied). */
  replay(): WireMessage[]
  /** Every message ever appended, as recorded: no pass removes one from the file. */
  originals(): WireMessage[]
  /** The originals behind a handle a summary or stub names (`#first..#last` too); null when none. */
  expand(handle: string): Expansion | null
  /** One pass over the conversation, recorded in the transcript. */
  compact(options?: CompactOptions): Promise<CompactionResult>
  /** Releases the transcript's lock. */
  close(): void
}

/** What a `ContextManager` is built with: the compactor's options and its own. */
export interface ContextManagerOptions extends CompactOptions {
  /** The transcript (created when absent, resumed otherwise). */
  path: string
  /** The messages' format (default `openai`). */
  format?: SessionFormat
  /** The backend's context window: a request that would not fit its usable room is compacted to it. */
  window?: number
  /** Tokens kept free for the completion (with `window`). */
  completionReserve?: number
  /** Tokens kept free for the counter's error (with `window`). */
  safetyMargin?: number
  /** Forced passes a run may make after context-length errors (default 2). */
  maxForcedCompactions?: number
  /**
   * Prepare passes in the background ahead of the trigger, so that a request below the
   * hard limit never waits for a summary. Default: on with a summarizer function (a
   * model), off for the ledger; `false` runs every pass inline.
   */
  prepare?: boolean
}

/** The request to send, and the pass that ran (if one did). */
export interface PreparedRequest {
  /** The conversation to send, in the manager's format. */
  messages: WireMessage[]
  /** Tokens of the whole request (conversation, tools, context). */
  requestTokens: number
  /**
   * Signed thinking blocks the conversation carries on a prefix they were not produced
   * under (kept turns after a summary or a stub): on a model with preserved thinking, send
   * the request with `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` and
   * the `thinking-binding-controls-2026-08-01` beta. 0 when there is none.
   */
  staleThinking: number
  /** Why a pass ran (`threshold`, `room`, `context-length-exceeded`, `prepared`), else null. */
  reason: string | null
  /** The pass's result (with its `receipt`), else null. */
  result: CompactionResult | null
}

/** What a request carries besides the conversation. */
export interface RequestParts {
  /** The tool declarations (counted with the request). */
  tools?: WireMessage[]
  /** Runtime context sent beside the conversation. */
  context?: string
}

/** Billed usage of a response (camelCase; snake_case is read too). */
export interface BilledUsage {
  inputTokens?: number
  outputTokens?: number
  cacheReadTokens?: number
  cacheWriteTokens?: number
}

/** The agent-loop glue: `prepare` before each request, `recordResponse` after each response. */
export class ContextManager {
  constructor(options: ContextManagerOptions)
  readonly path: string
  readonly format: SessionFormat
  /** True when passes are prepared in the background. */
  readonly prepares: boolean
  /** The conversation as it stands. */
  readonly messages: WireMessage[]
  /** Appends messages (the user's, the harness's). */
  push(messages: WireMessage[]): void
  /** Starts a run: the forced-pass allowance is renewed. */
  beginRun(): void
  /** The conversation to send, compacted first when needed (the pass runs off the event loop). */
  prepare(request?: RequestParts): Promise<PreparedRequest>
  /** After the provider refused the request as too long: a forced pass. */
  onContextLengthExceeded(request?: RequestParts): Promise<PreparedRequest>
  /** Records the response's billed usage and appends its messages (the assistant turn, then its tool results). */
  recordResponse(messages: WireMessage[], options?: { usage?: BilledUsage; model?: string }): void
  /** Every message ever appended to the transcript, as recorded. */
  originals(): WireMessage[]
  /** The originals behind a handle; null when none. */
  expand(handle: string): Expansion | null
  /** The `compactor_expand` tool to offer the model (OpenAI chat shape). */
  expandTool(): WireMessage
  /** The answer to a `compactor_expand` call (its arguments), at most `maxChars` chars (default 40,000). */
  answerExpand(args: string | { handles: string[] }, maxChars?: number): string
  /** Stops a background preparation and waits for it to end. */
  shutdown(): Promise<void>
}

/** What each call's provider metadata says under `compactor`. */
export interface CompactorMetadata {
  /** The prompt's tokens as sent. */
  requestTokens: number
  /** The pass this call ran, else null. */
  pass: {
    tokensBefore: number
    tokensAfter: number
    dropped: number
    /** The summary's text ('' for a pass that only stubbed old tool results). */
    summary: string
    fallback: boolean
    exhausted: boolean
    summarizer: string | null
    /** Tool results stubbed. */
    elisions: number
    /** What the pass did to the prompt cache, and its estimated net cost. */
    receipt: Record<string, unknown> | null
  } | null
}

/**
 * A Vercel AI SDK `LanguageModelV2Middleware` (structurally: no dependency on `ai`):
 * `wrapLanguageModel({ model, middleware: compactorMiddleware({ budget }) })`.
 */
export interface CompactorMiddleware {
  middlewareVersion: 'v2'
  transformParams(options: { type: 'generate' | 'stream'; params: any; model: any }): PromiseLike<any>
  wrapGenerate(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): Promise<any>
  wrapStream(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): Promise<any>
}

/**
 * The AI SDK middleware: over the trigger, compacts the prompt (tool calls and results kept
 * paired) and exposes the pass on the call's `providerMetadata.compactor`
 * ([[CompactorMetadata]]). Options as `compact`'s; a summarizer function may call a model.
 */
export function compactorMiddleware(options?: Omit<CompactOptions, 'format' | 'system'>): CompactorMiddleware
