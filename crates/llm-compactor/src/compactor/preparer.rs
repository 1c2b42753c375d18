//! [`Preparer`]: the one background pass of a session, for every loop that prepares
//! compaction ahead of the trigger (the library's `ContextManager`, the proxy's sessions).
//!
//! A prepared pass runs the compactor over a copy of the conversation on a tokio task
//! while requests keep going out; the request that reaches the trigger installs it, when
//! it is still true (see `docs/prepared-compaction.md`). What that takes is the same in
//! every loop, and lives here once: the pass running or ready (never both, one per
//! session), its start, its abort (cancelled and aborted when dropped or replaced), the
//! bounded wait of a request over the hard limit, the collection of a finished pass
//! (timing its summary into the session's [`Pace`]), and the loop over the pure core's
//! [`next_step`]. What differs is the host's, lent per call:
//!
//! - what wraps the task: [`Preparer::start`] takes a `wrap` that runs the pass's future
//!   (the library runs it as it is; the proxy first takes the session's preparation
//!   lease from the store, renews it while the pass runs, and declines when another
//!   instance holds it);
//! - what the host hears: every method that may drop or judge a pass takes an `on`
//!   callback of [`PreparerEvent`]s (the library turns them into its `ContextEvent`s,
//!   the proxy into its metrics);
//! - what it does with a decision: [`Preparer::next`] returns a [`PrepareDecision`];
//!   installing the ready pass ([`PreparedPass::judge`]) and starting one are the
//!   host's, since the host owns the transcript.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{CompactError, CompactOptions, Compactor, PreparedPass};
use crate::message::Message;
use crate::plan::prepared::{Pace, PrepareStep, PrepareView, Snapshot, StartRule, next_step, start_at};

/// A finished background pass: the pass of its snapshot, and how long the pass took
/// (from its start, once any lease was taken).
pub type PreparedOutcome = Result<(PreparedPass, Duration), CompactError>;

/// The work of a background pass, as its `wrap` receives it (see [`Preparer::start`]).
pub type PassFuture = Pin<Box<dyn Future<Output = PreparedOutcome> + Send>>;

/// What a [`Preparer`] tells its host.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreparerEvent {
    /// The pass (running or ready) was dropped before it could be installed.
    Cancelled {
        /// Why, in words.
        why: String,
    },
    /// The pass ended without anything to install (it changed nothing, failed, or its
    /// task ended).
    Unusable {
        /// Why, in words.
        why: String,
    },
    /// The task's wrap declined to run the pass (the proxy: another instance holds the
    /// session's preparation lease).
    Declined,
}

/// What a request does, given the preparation ([`Preparer::next`]).
#[derive(Debug)]
pub enum PrepareDecision {
    /// Compact inline, as without preparation.
    Inline,
    /// Send the request as it is; `start`: start preparing a pass now.
    AsIs {
        /// Start a pass (the host calls [`Preparer::start`]).
        start: bool,
    },
    /// Check this ready pass against the conversation and install it
    /// ([`PreparedPass::judge`]); when the check refuses it, ask again.
    Install(Box<PreparedPass>),
}

/// The request a decision is for: its tokens, and the limits it is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareRequest {
    /// The request's tokens.
    pub tokens: usize,
    /// The engine's trigger.
    pub trigger: usize,
    /// The hard limit: over it nothing goes out uncompacted, and a request waits for the
    /// running pass (bounded).
    pub hard: usize,
    /// Any pass is asked for (the engine's own decision).
    pub needed: bool,
}

struct Running {
    /// The snapshot, when the host gave it at the start (it is then checked against the
    /// conversation: [`Preparer::running_snapshot`]).
    snapshot: Option<Snapshot>,
    cancel: CancellationToken,
    handle: JoinHandle<Option<PreparedOutcome>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.handle.abort();
    }
}

/// A session's one background pass (running or ready), and the session's pace (see the
/// module docs).
pub struct Preparer {
    running: Option<Running>,
    ready: Option<PreparedPass>,
    pace: Pace,
    /// The origin of the pace's times (tokio's clock, so that a paused test clock works).
    origin: tokio::time::Instant,
    /// The prepare threshold of the last request observed.
    threshold: Option<usize>,
}

impl Default for Preparer {
    fn default() -> Self {
        Preparer::new()
    }
}

impl std::fmt::Debug for Preparer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preparer")
            .field("running", &self.running.is_some())
            .field("ready", &self.ready.is_some())
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl Preparer {
    /// Nothing prepared, nothing observed; the pace's clock starts now.
    pub fn new() -> Self {
        Preparer {
            running: None,
            ready: None,
            pace: Pace::new(),
            origin: tokio::time::Instant::now(),
            threshold: None,
        }
    }

    /// True while a pass runs or waits to be installed.
    pub fn busy(&self) -> bool {
        self.running.is_some() || self.ready.is_some()
    }

    /// The snapshot of the running pass, when its host gave one at the start: a host
    /// that can check it cheaply cancels the pass once it is no longer a prefix of the
    /// conversation.
    pub fn running_snapshot(&self) -> Option<&Snapshot> {
        self.running.as_ref().and_then(|r| r.snapshot.as_ref())
    }

    /// A request of `tokens` tokens came: observed into the pace, and the prepare
    /// threshold for it returned ([`start_at`] under `budget`, `hard` and `rule`) and
    /// kept ([`Preparer::threshold`]).
    pub fn observe_request(&mut self, tokens: usize, budget: usize, hard: usize, rule: &StartRule) -> usize {
        self.pace.observe_request(tokens, self.origin.elapsed().as_secs_f64());
        let threshold = start_at(budget, hard, rule, &self.pace);
        self.threshold = Some(threshold);
        threshold
    }

    /// The prepare threshold of the last request observed.
    pub fn threshold(&self) -> Option<usize> {
        self.threshold
    }

    /// The request just observed went out with `tokens` tokens (after a pass): the next
    /// request's growth counts from it.
    pub fn sent(&mut self, tokens: usize) {
        self.pace.observe_sent(tokens);
    }

    /// A pass that summarized took `took` (an inline one; prepared ones time themselves).
    pub fn timed_summary(&mut self, took: Duration) {
        self.pace.observe_summary(took.as_secs_f64());
    }

    /// Drops the pass (running or ready) because of `why`; `on` hears
    /// [`PreparerEvent::Cancelled`] when there was one. The pace stays: it is the
    /// session's, not the pass's.
    pub fn cancel(&mut self, why: &str, on: &(dyn Fn(PreparerEvent) + Sync)) {
        let had = self.busy();
        self.running = None;
        self.ready = None;
        if had {
            on(PreparerEvent::Cancelled { why: why.to_owned() });
        }
    }

    /// Cancels the running pass and waits until its task has stopped, then drops the
    /// pass (as [`Preparer::cancel`] with `shutdown`).
    pub async fn shutdown(&mut self, on: &(dyn Fn(PreparerEvent) + Sync)) {
        if let Some(mut running) = self.running.take() {
            running.cancel.cancel();
            let _ = (&mut running.handle).await;
        }
        self.cancel("shutdown", on);
    }

    /// Waits (unbounded) until the running pass is done and collects it.
    pub async fn settle(&mut self, on: &(dyn Fn(PreparerEvent) + Sync)) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        let outcome = (&mut running.handle).await;
        self.accept(outcome, on);
    }

    /// Collects the running pass when it has finished (a finished pass becomes ready,
    /// or `on` hears why it is not usable).
    pub async fn collect(&mut self, on: &(dyn Fn(PreparerEvent) + Sync)) {
        let finished = self.running.as_ref().is_some_and(|r| r.handle.is_finished());
        if finished && let Some(mut running) = self.running.take() {
            let outcome = (&mut running.handle).await;
            self.accept(outcome, on);
        }
    }

    /// The decision for `request` under the threshold `prepare_at` ([`next_step`]),
    /// waiting for the running pass at most `max_wait` when the request is over the hard
    /// limit (past it the pass is cancelled, and the request goes inline).
    pub async fn next(
        &mut self,
        request: &PrepareRequest,
        prepare_at: usize,
        max_wait: Duration,
        on: &(dyn Fn(PreparerEvent) + Sync),
    ) -> PrepareDecision {
        loop {
            let view = PrepareView {
                tokens: request.tokens,
                trigger: request.trigger,
                hard: request.hard,
                prepare_at,
                needed: request.needed,
                running: self.running.is_some(),
                ready: self.ready.is_some(),
            };
            match next_step(&view) {
                PrepareStep::Inline => return PrepareDecision::Inline,
                PrepareStep::AsIs { start } => return PrepareDecision::AsIs { start },
                PrepareStep::Wait => self.wait(max_wait, on).await,
                PrepareStep::Install => {
                    if let Some(prepared) = self.ready.take() {
                        return PrepareDecision::Install(Box::new(prepared));
                    }
                }
            }
        }
    }

    /// Starts the pass of `messages` on a tokio task (a pass under way is dropped).
    ///
    /// `snapshot` is their [`Snapshot`] when the host has it at hand (it is then
    /// [`Preparer::running_snapshot`]); `None`: the task computes it, off the request
    /// path. `wrap` runs the pass's future inside the task: `Some` of its outcome, or
    /// `None` when it declines to run it ([`PreparerEvent::Declined`] when collected).
    pub fn start<W, F>(
        &mut self,
        compactor: Arc<Compactor>,
        messages: Vec<Message>,
        snapshot: Option<Snapshot>,
        options: CompactOptions,
        wrap: W,
    ) where
        W: FnOnce(PassFuture) -> F,
        F: Future<Output = Option<PreparedOutcome>> + Send + 'static,
    {
        let cancel = options.cancel.clone();
        let known = snapshot.clone();
        let pass: PassFuture = Box::pin(async move {
            // The snapshot's digest off the request path when the host has none.
            let snapshot = snapshot.unwrap_or_else(|| Snapshot::of(&messages));
            let started = tokio::time::Instant::now();
            let result = compactor.compact(&messages, options).await?;
            Ok((PreparedPass { snapshot, result }, started.elapsed()))
        });
        let handle = tokio::spawn(wrap(pass));
        self.ready = None;
        self.running = Some(Running {
            snapshot: known,
            cancel,
            handle,
        });
    }

    fn accept(
        &mut self,
        outcome: Result<Option<PreparedOutcome>, tokio::task::JoinError>,
        on: &(dyn Fn(PreparerEvent) + Sync),
    ) {
        let why = match outcome {
            Ok(Some(Ok((prepared, took)))) if !prepared.is_noop() => {
                if !prepared.result.summary.is_empty() {
                    self.pace.observe_summary(took.as_secs_f64());
                }
                self.ready = Some(prepared);
                return;
            }
            Ok(None) => return on(PreparerEvent::Declined),
            Ok(Some(Ok(_))) => "the prepared pass changed nothing".to_owned(),
            Ok(Some(Err(error))) => format!("the prepared pass failed: {error}"),
            Err(error) => format!("the prepared pass's task ended: {error}"),
        };
        on(PreparerEvent::Unusable { why });
    }

    /// Waits for the running pass at most `max_wait`; past it, cancels the pass.
    async fn wait(&mut self, max_wait: Duration, on: &(dyn Fn(PreparerEvent) + Sync)) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        match tokio::time::timeout(max_wait, &mut running.handle).await {
            Ok(outcome) => self.accept(outcome, on),
            Err(_) => {
                drop(running);
                on(PreparerEvent::Cancelled {
                    why: "the request is over the hard limit and the prepared pass is not done".into(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::compactor::CompactorConfig;
    use crate::count::HeuristicCounter;

    /// A compactor without a summarizer (its passes hard-trim at once) and a
    /// conversation over its trigger.
    fn setup() -> (Arc<Compactor>, Vec<Message>) {
        let config = CompactorConfig::builder(1_000).keep_recent(2).build().unwrap();
        let mut messages = vec![Message::system("Be terse.")];
        for i in 0..40 {
            messages.push(Message::user(format!("question {i}: {}", "x".repeat(80))));
            messages.push(Message::assistant(format!("answer {i}")));
        }
        (Arc::new(Compactor::new(config, Arc::new(HeuristicCounter))), messages)
    }

    fn over_the_trigger(compactor: &Compactor) -> PrepareRequest {
        let config = compactor.config();
        PrepareRequest {
            tokens: config.context_budget + 1,
            trigger: config.trigger(),
            hard: config.context_budget,
            needed: true,
        }
    }

    #[tokio::test]
    async fn a_finished_pass_is_offered_for_install_once() {
        let (compactor, messages) = setup();
        let request = over_the_trigger(&compactor);
        let mut preparer = Preparer::new();
        let options = CompactOptions::default();
        preparer.start(
            compactor,
            messages,
            None,
            options,
            |pass| async move { Some(pass.await) },
        );
        let heard = Mutex::new(Vec::new());
        let on = |e| heard.lock().unwrap().push(e);
        preparer.settle(&on).await;
        assert!(preparer.busy(), "ready: {:?}", heard.lock().unwrap());
        let decision = preparer.next(&request, 0, Duration::from_secs(1), &on).await;
        assert!(
            matches!(decision, PrepareDecision::Install(ref p) if p.result.fallback),
            "{decision:?}"
        );
        // Taken: the next request over the hard limit, with nothing prepared, goes inline.
        let decision = preparer.next(&request, 0, Duration::from_secs(1), &on).await;
        assert!(matches!(decision, PrepareDecision::Inline), "{decision:?}");
        assert!(heard.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_declined_pass_is_heard_and_leaves_nothing_ready() {
        let (compactor, messages) = setup();
        let mut preparer = Preparer::new();
        preparer.start(compactor, messages, None, CompactOptions::default(), |_pass| async {
            None
        });
        let heard = Mutex::new(Vec::new());
        preparer.settle(&|e| heard.lock().unwrap().push(e)).await;
        assert_eq!(*heard.lock().unwrap(), [PreparerEvent::Declined]);
        assert!(!preparer.busy());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_over_the_hard_limit_waits_bounded_then_goes_inline() {
        let (compactor, messages) = setup();
        let request = over_the_trigger(&compactor);
        let mut preparer = Preparer::new();
        let options = CompactOptions::default();
        // A pass that never ends (a summarizer that hangs).
        preparer.start(compactor, messages, None, options, |_pass| std::future::pending());
        let heard = Mutex::new(Vec::new());
        let started = tokio::time::Instant::now();
        let decision = preparer
            .next(&request, 0, Duration::from_secs(30), &|e| heard.lock().unwrap().push(e))
            .await;
        assert!(matches!(decision, PrepareDecision::Inline), "{decision:?}");
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        assert!(matches!(heard.lock().unwrap()[..], [PreparerEvent::Cancelled { .. }]));
        assert!(!preparer.busy());
    }
}
