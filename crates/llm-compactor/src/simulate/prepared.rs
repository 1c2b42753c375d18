//! `ours` (the default), `ours-prepared` and `ours-prepared-cached`: the engine with its
//! passes prepared in the background ahead of the trigger (issue 28), priced.
//!
//! Preparing costs something the inline engine does not pay: the prepared pass
//! summarizes the conversation as it was a few rounds before the trigger (a slightly
//! older middle), requests between the trigger and the hard limit go out uncompacted
//! while the pass runs, and a result the check discards was paid for and thrown away.
//! This strategy measures that with the same stand-in summarizer as `ours-inline`.
//!
//! Modelled as the `ContextManager` runs it, with time counted in requests: before each
//! request the loop asks [`crate::plan::prepared::next_step`] (the rule the manager and
//! the proxy ask: start at the prepare threshold, install at the trigger, wait only over
//! the hard limit, an elision-only pass installed past the threshold), and a pass is
//! ready [`LATENCY_ROUNDS`] requests after it starts (a 5 s summary against agent rounds
//! of [`ROUND_SECS`] each); a request over the hard limit with a pass under way waits for
//! it (the manager's bounded wait, 30 s by default, is longer than the summary). The
//! summarizer is billed when the pass runs, discarded or not. `ours-prepared` bills the
//! summary request as
//! `ours-inline` does (uncached input); `ours-prepared-cached` bills it as the
//! cache-reading request (an `AgentRequest` in the pass's context): the snapshot
//! is the previous request's prompt, read from the cache, plus the instruction,
//! uncached. `ours`, the configured default, is the one or the other by the
//! summarizer: the cache-reading request when the summarizer is the agent's own model
//! ([`Env::agent_summarizer`]: the simulator takes a summarizer at the agent's price to
//! be it), the plain one otherwise, as the library and the proxy choose.
//!
//! When a pass starts: `ours` asks the library's rule, [`crate::plan::prepared::start_at`]
//! with the default [`crate::session::PrepareOptions`], from a pace observed on the
//! replay's clock, under one stated assumption: every agent round takes [`ROUND_SECS`]
//! seconds and every summary `LATENCY_ROUNDS x ROUND_SECS` (5 s), so a session that
//! grows slowly starts at the fixed ratio (0.65) and one that grows fast starts earlier,
//! down to the floor (0.35). `ours-prepared` and `ours-prepared-cached` keep the fixed
//! ratio ([`crate::session::PrepareOptions::fixed`]), as issue 28 measured them.

use std::sync::Arc;

use crate::Conversation;
use crate::compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, PreparedPass};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::Tokens;
use crate::plan::prepared::{InstallPlan, Pace, PrepareStep, PrepareView, StartRule, next_step, start_at};
use crate::session::PrepareOptions;
use crate::simulate::SimError;
use crate::simulate::cost::shared_prefix_len;
use crate::simulate::standin::StandIn;
use crate::simulate::strategy::{Env, Step, Strategy};

/// Requests between the start of a prepared pass and its result.
pub const LATENCY_ROUNDS: usize = 2;

/// The seconds one agent round is assumed to take, for the pace that chooses when
/// `ours` starts a pass (a summary takes [`LATENCY_ROUNDS`] of them).
pub const ROUND_SECS: f64 = 2.5;

struct Pending {
    prepared: PreparedPass,
    ready_at: usize,
    /// The pace has been told how long this pass took.
    timed: bool,
}

/// How the summary request is billed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Billing {
    /// A plain request: the rendered transcript, uncached.
    Plain,
    /// The cache-reading request: the previous prompt read from the cache.
    Cached,
    /// As the library chooses: cache-reading when the summarizer is the agent's model.
    AsConfigured,
}

/// The engine with prepared passes.
pub struct Prepared {
    name: &'static str,
    compactor: Compactor,
    runtime: tokio::runtime::Runtime,
    conversation: Conversation,
    /// When a pass starts (fixed for the named variants, from the pace for `ours`).
    rule: StartRule,
    pace: Pace,
    billing: Billing,
    /// Whether the summarizer of the request under way is the agent's own model.
    agent_summarizer: bool,
    pending: Option<Pending>,
    request: usize,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// The defaults of [`CompactorConfig::builder`] with budget `window`, preparing at
    /// [`crate::session::DEFAULT_PREPARE_RATIO`]; `cached_summary` bills the summary
    /// request as one that reads the agent's cache.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn new(window: usize, cached_summary: bool, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let (name, billing) = if cached_summary {
            ("ours-prepared-cached", Billing::Cached)
        } else {
            ("ours-prepared", Billing::Plain)
        };
        let rule = PrepareOptions::fixed(crate::session::DEFAULT_PREPARE_RATIO).start_rule();
        Prepared::build(name, billing, rule, window, counter)
    }

    /// The configured default, reported as `ours`: prepared passes, the summary request
    /// reading the agent's cache when the summarizer is the agent's own model
    /// ([`Env::agent_summarizer`]), a plain request otherwise.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn defaults(window: usize, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let rule = PrepareOptions::default().start_rule();
        Prepared::build("ours", Billing::AsConfigured, rule, window, counter)
    }

    fn build(
        name: &'static str,
        billing: Billing,
        rule: StartRule,
        window: usize,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, SimError> {
        let config = CompactorConfig::builder(window)
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        let summarizer = Arc::new(StandIn::new(counter.clone()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| SimError::Config(format!("tokio runtime: {e}")))?;
        Ok(Prepared {
            name,
            compactor: Compactor::new(config, counter.clone()).with_summarizer(summarizer),
            runtime,
            conversation: Conversation::new(counter),
            rule,
            pace: Pace::new(),
            billing,
            agent_summarizer: true,
            pending: None,
            request: 0,
        })
    }

    fn compact(&self, ahead_of_trigger: bool) -> Result<CompactionResult, SimError> {
        let options = CompactOptions::new().with_ahead_of_trigger(ahead_of_trigger);
        Ok(self
            .runtime
            .block_on(self.compactor.compact(self.conversation.messages(), options))?)
    }

    /// What the summarizer calls of `result` were billed: as `ours-inline` does, or as the
    /// cache-reading request over a snapshot of `snapshot_tokens` tokens (see [`Billing`]).
    fn bill(&self, result: &CompactionResult, snapshot_tokens: usize, step: &mut Step) {
        step.summarizer_calls += result.attempts.len() as u32;
        let input = result.usage.input_tokens;
        let cached = match self.billing {
            Billing::Plain => false,
            Billing::Cached => true,
            Billing::AsConfigured => self.agent_summarizer,
        };
        let bill = if cached && input > 0 {
            // Each call: the snapshot read from the cache, the instruction uncached.
            let calls = result.attempts.len().max(1) as u64;
            let instruction = self
                .compactor
                .counter()
                .count_text(&self.compactor.prompts().system(None, None));
            Tokens {
                cache_read: calls * snapshot_tokens as u64,
                uncached: calls * instruction as u64,
                output: result.usage.output_tokens,
                ..Tokens::default()
            }
        } else {
            Tokens {
                uncached: input,
                output: result.usage.output_tokens,
                ..Tokens::default()
            }
        };
        step.summarizer += bill;
    }

    fn apply(&mut self, result: CompactionResult, step: &mut Step) {
        if result.is_elision_only() {
            step.elision_epochs += 1;
        } else if !result.is_noop() {
            step.compactions += 1;
        }
        if !result.is_noop() {
            step.rewrote_from = Some(shared_prefix_len(self.conversation.messages(), &result.messages));
            self.conversation.replace(result.messages);
        }
    }

    fn start(&mut self, step: &mut Step) -> Result<(), SimError> {
        let result = self.compact(true)?;
        self.bill(&result, self.conversation.tokens(), step);
        let prepared = PreparedPass::new(self.conversation.messages(), result);
        self.pending = (!prepared.is_noop()).then_some(Pending {
            prepared,
            ready_at: self.request + LATENCY_ROUNDS,
            timed: false,
        });
        Ok(())
    }

    /// Installs the pending pass when the check allows; true when it did.
    fn install(&mut self, ceiling: usize, step: &mut Step) -> bool {
        let Some(pending) = self.pending.take() else {
            return false;
        };
        let current = self.conversation.messages();
        let digest = self.conversation.prefix_digest(pending.prepared.snapshot.len);
        let check = pending.prepared.check(current, digest.as_deref(), &self.compactor);
        let counter = self.compactor.counter().clone();
        let plan = pending
            .prepared
            .plan(current, &check, &self.compactor, counter.as_ref(), Some(ceiling));
        let InstallPlan::Install(installed) = plan else {
            return false;
        };
        let result = pending
            .prepared
            .installed_result(current, *installed, &self.compactor, counter.as_ref());
        self.apply(result, step);
        true
    }
}

impl Strategy for Prepared {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        self.request += 1;
        self.agent_summarizer = env.agent_summarizer;
        self.conversation.extend(appended.iter().cloned());
        let mut step = Step::default();
        let tokens = self.conversation.tokens();
        let needed = self.compactor.needs_compaction_in(&self.conversation);
        let config = self.compactor.config();
        let (trigger, budget) = (config.trigger(), config.context_budget);
        let hard = env.window.saturating_sub(env.max_output);
        self.pace.observe_request(tokens, self.request as f64 * ROUND_SECS);
        loop {
            let request = self.request;
            let ready = self.pending.as_ref().is_some_and(|p| p.ready_at <= request);
            if let Some(pending) = self.pending.as_mut().filter(|p| ready && !p.timed) {
                // The pass finished: the pace learns how long a summary took.
                pending.timed = true;
                if !pending.prepared.result.summary.is_empty() {
                    self.pace.observe_summary(LATENCY_ROUNDS as f64 * ROUND_SECS);
                }
            }
            let view = PrepareView {
                tokens,
                trigger,
                hard,
                prepare_at: start_at(budget, hard, &self.rule, &self.pace),
                needed,
                running: self.pending.is_some() && !ready,
                ready,
            };
            match next_step(&view) {
                PrepareStep::Inline => {
                    let result = self.compact(false)?;
                    self.bill(&result, tokens, &mut step);
                    if !result.summary.is_empty() {
                        self.pace.observe_summary(LATENCY_ROUNDS as f64 * ROUND_SECS);
                    }
                    self.apply(result, &mut step);
                    break;
                }
                PrepareStep::AsIs { start } => {
                    if start {
                        self.start(&mut step)?;
                    }
                    break;
                }
                // The manager waits for the running pass: it is ready now.
                PrepareStep::Wait => {
                    if let Some(pending) = self.pending.as_mut() {
                        pending.ready_at = request;
                    }
                }
                PrepareStep::Install => {
                    let ceiling = if tokens > hard { hard } else { trigger };
                    if self.install(ceiling, &mut step) {
                        break;
                    }
                }
            }
        }
        if step.rewrote_from.is_some() {
            self.pace.observe_sent(self.conversation.tokens());
        }
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        self.conversation.messages()
    }
}
