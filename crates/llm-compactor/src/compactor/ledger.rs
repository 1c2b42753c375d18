//! The ledger's part in a pass: the grounding gate and the appended ledger on a model's
//! summary, and the ledger-only summary when there is no model summary (the
//! `ledger` summarizer, or the fallback before the hard trim).
//!
//! Kept apart from the summarizing phase so that the retry logic there stays about
//! requests, and this stays about what a summary must contain. The decisions themselves
//! (extraction, rendering, the gate) are the pure functions of [`crate::plan::ledger`]
//! and [`crate::plan::grounding`].

use super::Compactor;
use super::fit::{Fit, SummaryOutcome};
use super::result::{Attempt, AttemptKind, AttemptOutcome};
use crate::plan::SUMMARY_HEADER;
use crate::plan::grounding::ground;
use crate::plan::ledger::{LedgerPolicy, extract, source_text};
use crate::usage::Usage;

/// The first line of a ledger-only summary written because the model's failed.
const FALLBACK_INTRO: &str = "The summarizer could not produce a summary (see the pass's attempts); \
     these are the verbatim facts of the replaced messages.";

impl Compactor {
    /// Grounds the accepted model summary and appends the ledger to it; when there is
    /// no accepted summary (or the gate rejects it), the ledger alone. `cancelled`
    /// passes keep their promise: they end in the hard trim.
    pub(crate) fn apply_ledger(
        &self,
        policy: &LedgerPolicy,
        outcome: &mut SummaryOutcome,
        fit: &Fit<'_>,
        model_free: bool,
        cancelled: bool,
    ) {
        let mut rules = policy.rules.clone();
        rules.handles |= self.config().expand;
        let ledger = extract(fit.aged, &fit.layout.middle, &rules);
        if let Some(accepted) = outcome.accepted.take() {
            let raw = accepted
                .content
                .strip_prefix(SUMMARY_HEADER)
                .unwrap_or(&accepted.content)
                .trim_start_matches('\n');
            let source = source_text(fit.aged);
            let attempt = outcome
                .attempts
                .iter_mut()
                .rev()
                .find(|a| a.outcome == AttemptOutcome::Accepted);
            match ground(raw, &source, &policy.grounding) {
                Ok(grounded) => {
                    let prefix = format!("{}\n\n", grounded.text);
                    let found = fit
                        .sized(&prefix, &ledger, policy)
                        .or_else(|| fit.prove(&grounded.text, fit.limit));
                    if let Some(found) = found {
                        if let (Some(attempt), Some(note)) = (attempt, grounded.note()) {
                            attempt.note = Some(note);
                        }
                        outcome.accepted = Some(found);
                        return;
                    }
                    if let Some(attempt) = attempt {
                        attempt.outcome = AttemptOutcome::Rejected;
                        attempt.note = Some("after the grounding gate the summary no longer fits".into());
                    }
                }
                Err(rejection) => {
                    tracing::warn!(%rejection, "summary rejected by the grounding gate");
                    if let Some(attempt) = attempt {
                        attempt.outcome = AttemptOutcome::Rejected;
                        attempt.note = Some(rejection.to_string());
                    }
                }
            }
        }
        if cancelled || ledger.is_empty() {
            return;
        }
        let intro = if model_free { "" } else { FALLBACK_INTRO };
        let found = fit.sized(&format!("{intro}\n\n"), &ledger, policy);
        let (outcome_kind, note) = match &found {
            Some(_) if model_free => (AttemptOutcome::Accepted, "the ledger summary (no model)".to_owned()),
            Some(_) => (
                AttemptOutcome::Accepted,
                "no model summary: the ledger summary instead of the hard trim".to_owned(),
            ),
            None => (
                AttemptOutcome::Rejected,
                "the ledger summary does not fit either".to_owned(),
            ),
        };
        outcome.attempts.push(Attempt {
            kind: AttemptKind::Ledger,
            outcome: outcome_kind,
            class: None,
            status: None,
            wait_ms: 0,
            usage: Usage::default(),
            note: Some(note),
        });
        outcome.accepted = found;
    }
}
