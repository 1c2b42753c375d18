//! `ours-prepared` and `ours-prepared-cached`: the engine with its passes prepared in
//! the background ahead of the trigger (issue 28), priced.
//!
//! Preparing costs something the inline engine does not pay: the prepared pass
//! summarizes the conversation as it was a few rounds before the trigger (a slightly
//! older middle), requests between the trigger and the hard limit go out uncompacted
//! while the pass runs, and a result the check discards was paid for and thrown away.
//! This strategy measures that with the same stand-in summarizer as `ours`.
//!
//! Modelled as the `ContextManager` runs it, with time counted in requests: a pass of a
//! snapshot starts when a request reaches the prepare threshold
//! ([`crate::session::DEFAULT_PREPARE_RATIO`] of the window) and is ready
//! [`LATENCY_ROUNDS`] requests later (a 5 s summary against agent rounds of a few
//! seconds each); at the trigger a ready pass is checked and installed
//! ([`crate::plan::prepared`]), a running one is waited for only over the window, and
//! an elision epoch waits while a pass is under way. The summarizer is billed when the
//! pass runs, discarded or not. `ours-prepared` bills the summary request as `ours`
//! does (uncached input); `ours-prepared-cached` bills it as the cache-reading request
//! ([`crate::backend`]'s `with_agent_request` path): the snapshot is the previous
//! request's prompt, read from the cache, plus the instruction, uncached.

use std::sync::Arc;

use crate::Conversation;
use crate::compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, PreparedPass};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::Tokens;
use crate::plan::prepared::InstallPlan;
use crate::simulate::SimError;
use crate::simulate::cost::shared_prefix_len;
use crate::simulate::standin::StandIn;
use crate::simulate::strategy::{Env, Step, Strategy};

/// Requests between the start of a prepared pass and its result.
pub const LATENCY_ROUNDS: usize = 2;

struct Pending {
    prepared: PreparedPass,
    ready_at: usize,
}

/// The engine with prepared passes.
pub struct Prepared {
    name: &'static str,
    compactor: Compactor,
    runtime: tokio::runtime::Runtime,
    conversation: Conversation,
    prepare_at: usize,
    cached_summary: bool,
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
        let config = CompactorConfig::builder(window)
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        let prepare_at = (window as f64 * crate::session::DEFAULT_PREPARE_RATIO).ceil() as usize;
        let summarizer = Arc::new(StandIn::new(counter.clone()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| SimError::Config(format!("tokio runtime: {e}")))?;
        Ok(Prepared {
            name: if cached_summary {
                "ours-prepared-cached"
            } else {
                "ours-prepared"
            },
            compactor: Compactor::new(config, counter.clone()).with_summarizer(summarizer),
            runtime,
            conversation: Conversation::new(counter),
            prepare_at,
            cached_summary,
            pending: None,
            request: 0,
        })
    }

    fn compact(&self, ahead_of_trigger: bool) -> Result<CompactionResult, SimError> {
        let options = CompactOptions {
            ahead_of_trigger,
            ..CompactOptions::default()
        };
        Ok(self
            .runtime
            .block_on(self.compactor.compact(self.conversation.messages(), options))?)
    }

    /// What the summarizer calls of `result` were billed: as `ours` does, or as the
    /// cache-reading request over a snapshot of `snapshot_tokens` tokens.
    fn bill(&self, result: &CompactionResult, snapshot_tokens: usize, step: &mut Step) {
        step.summarizer_calls += result.attempts.len() as u32;
        let input = result.usage.input_tokens;
        let bill = if self.cached_summary && input > 0 {
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
        self.conversation.extend(appended.iter().cloned());
        let mut step = Step::default();
        let tokens = self.conversation.tokens();
        let needed = self.compactor.needs_compaction_in(&self.conversation);
        let trigger = self.compactor.config().trigger();
        let hard = env.window.saturating_sub(env.max_output);
        let busy = self.pending.is_some();
        if !needed || tokens <= trigger {
            if needed && !busy {
                let result = self.compact(false)?;
                self.bill(&result, tokens, &mut step);
                self.apply(result, &mut step);
            } else if !busy && tokens >= self.prepare_at {
                self.start(&mut step)?;
            }
            return Ok(step);
        }
        let ready = self.pending.as_ref().is_some_and(|p| p.ready_at <= self.request);
        if (ready || tokens > hard) && self.install(if tokens > hard { hard } else { trigger }, &mut step) {
            return Ok(step);
        }
        if tokens > hard {
            self.pending = None;
            let result = self.compact(false)?;
            self.bill(&result, tokens, &mut step);
            self.apply(result, &mut step);
        } else if self.pending.is_none() {
            self.start(&mut step)?;
        }
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        self.conversation.messages()
    }
}
