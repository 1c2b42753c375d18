// A typed consumer of the Agents SDK session: `tsc --strict` over it (tsconfig.ai.json)
// checks that `CompactingSession` is a `Session` the real `run` takes, and its filter a
// `callModelInputFilter`.
import { CompactingSession } from '../agents'
import { Agent, MemorySession, run, type Session } from '@openai/agents'

async function withAgents(): Promise<number> {
  const agent = new Agent({ name: 'coder', instructions: 'You are a coding agent.' })
  const session = new CompactingSession(new MemorySession(), { budget: 16_000, rewrite: true })
  const asSession: Session = session
  const result = await run(agent, 'hi', { session, callModelInputFilter: session.modelInputFilter })
  // @ts-expect-error: the session keeps the SDK's items
  new CompactingSession(new MemorySession(), { format: 'openai' })
  // @ts-expect-error: Session is the SDK's (not `any`): a partial one is refused
  const partial: Session = { getItems: async () => [] }
  // @ts-expect-error: the items are the SDK's AgentInputItems (not `any`)
  const item: { nope: true } = (await session.getItems())[0]
  void asSession, partial, item
  return String(result.finalOutput ?? '').length + session.compactions + (session.lastResult?.tokensAfter ?? 0)
}
void withAgents
