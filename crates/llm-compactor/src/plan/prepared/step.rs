//! [`next_step`]: what a loop that prepares passes in the background does before a
//! request. The `ContextManager` and the proxy both ask it, so the rule (start under the
//! trigger, install at it, wait only over the hard limit) is written once.
//!
//! A request under the trigger never waits: it goes out as it is, starting a pass once it
//! reaches the prepare threshold and none is under way (an elision epoch, cheap and
//! summarizer-free, still runs inline, unless a pass is under way: it would change the
//! history the pass is preparing). Over the trigger, a ready pass is installed; with none
//! ready the request still goes out as it is (a pass is started if none runs), up to the
//! hard limit: over it, a running pass is waited for (bounded, by the caller), and then
//! only an inline pass remains. The caller loops: after `Wait` or an install its checks
//! refused, it asks again with what changed.

/// What the loop sees before a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareView {
    /// The request's tokens.
    pub tokens: usize,
    /// The engine's trigger (a summary is due over it).
    pub trigger: usize,
    /// The hard limit (the budget, or the backend's room): over it nothing goes out
    /// uncompacted.
    pub hard: usize,
    /// The prepare threshold ([`prepare_at`]).
    pub prepare_at: usize,
    /// Any pass is asked for (the engine's own decision: over the trigger, or an epoch
    /// that pays).
    pub needed: bool,
    /// A prepared pass is under way.
    pub running: bool,
    /// A prepared pass is finished and waiting to be installed.
    pub ready: bool,
}

/// What to do with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrepareStep {
    /// Compact inline, as without preparation.
    Inline,
    /// Send the request as it is; `start`: start preparing a pass of the conversation.
    AsIs {
        /// Start a pass now.
        start: bool,
    },
    /// Wait (bounded) for the running pass, then ask again.
    Wait,
    /// Check and install the ready pass (if the check refuses it, ask again).
    Install,
}

/// The prepare threshold: `ratio` of `budget`, rounded up.
///
/// ```
/// assert_eq!(llm_compactor::plan::prepared::prepare_at(10_000, 0.65), 6_500);
/// ```
pub fn prepare_at(budget: usize, ratio: f64) -> usize {
    (budget as f64 * ratio).ceil() as usize
}

/// The step for `view` (see the module docs).
pub fn next_step(view: &PrepareView) -> PrepareStep {
    let busy = view.running || view.ready;
    let summary_due = view.tokens > view.trigger || view.tokens > view.hard;
    if !view.needed || !summary_due {
        if view.needed && !busy {
            return PrepareStep::Inline;
        }
        return PrepareStep::AsIs {
            start: view.tokens >= view.prepare_at && !busy,
        };
    }
    if view.running && view.tokens > view.hard {
        return PrepareStep::Wait;
    }
    if view.ready {
        return PrepareStep::Install;
    }
    if view.tokens > view.hard {
        return PrepareStep::Inline;
    }
    PrepareStep::AsIs { start: !busy }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(tokens: usize, needed: bool, running: bool, ready: bool) -> PrepareView {
        PrepareView {
            tokens,
            trigger: 8_000,
            hard: 10_000,
            prepare_at: 6_500,
            needed,
            running,
            ready,
        }
    }

    #[test]
    fn under_the_threshold_nothing_starts_and_nothing_waits() {
        assert_eq!(
            next_step(&view(5_000, false, false, false)),
            PrepareStep::AsIs { start: false }
        );
    }

    #[test]
    fn at_the_threshold_a_pass_starts_once() {
        assert_eq!(
            next_step(&view(6_500, false, false, false)),
            PrepareStep::AsIs { start: true }
        );
        assert_eq!(
            next_step(&view(7_000, false, true, false)),
            PrepareStep::AsIs { start: false }
        );
        assert_eq!(
            next_step(&view(7_000, false, false, true)),
            PrepareStep::AsIs { start: false }
        );
    }

    #[test]
    fn an_epoch_under_the_trigger_runs_inline_unless_a_pass_is_under_way() {
        assert_eq!(next_step(&view(7_000, true, false, false)), PrepareStep::Inline);
        assert_eq!(
            next_step(&view(7_000, true, true, false)),
            PrepareStep::AsIs { start: false }
        );
    }

    #[test]
    fn over_the_trigger_a_ready_pass_is_installed_and_none_ready_never_waits() {
        assert_eq!(next_step(&view(9_000, true, false, true)), PrepareStep::Install);
        assert_eq!(
            next_step(&view(9_000, true, true, false)),
            PrepareStep::AsIs { start: false }
        );
        assert_eq!(
            next_step(&view(9_000, true, false, false)),
            PrepareStep::AsIs { start: true }
        );
    }

    #[test]
    fn over_the_hard_limit_it_waits_then_installs_or_compacts_inline() {
        assert_eq!(next_step(&view(11_000, true, true, false)), PrepareStep::Wait);
        assert_eq!(next_step(&view(11_000, true, false, true)), PrepareStep::Install);
        assert_eq!(next_step(&view(11_000, true, false, false)), PrepareStep::Inline);
    }

    #[test]
    fn every_loop_ends_once_a_wait_clears_the_running_pass() {
        // A caller's loop: Wait clears `running`, a refused install clears `ready`.
        for tokens in [0, 6_499, 6_500, 8_000, 8_001, 10_000, 10_001] {
            for needed in [false, true] {
                for (running, ready) in [(false, false), (true, false), (false, true), (true, true)] {
                    let mut v = view(tokens, needed, running, ready);
                    let mut steps = 0;
                    loop {
                        steps += 1;
                        assert!(steps <= 3, "{v:?}");
                        match next_step(&v) {
                            PrepareStep::Wait => v.running = false,
                            PrepareStep::Install => v.ready = false,
                            PrepareStep::Inline | PrepareStep::AsIs { .. } => break,
                        }
                    }
                }
            }
        }
    }
}
