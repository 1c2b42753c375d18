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
use crate::plan::ledger::{LedgerPolicy, chars_for_tokens, extract, render, source_text};
use crate::usage::Usage;

/// The first line of a ledger-only summary written because the model's failed.
const FALLBACK_INTRO: &str = "The summarizer could not produce a summary (see the pass's attempts); \
     these are the verbatim facts of the replaced messages.";

/// The char caps tried for the ledger, largest first.
fn caps(policy: &LedgerPolicy) -> Vec<usize> {
    let max = chars_for_tokens(policy.max_tokens);
    (0..5).map(|k| max >> k).filter(|c| *c >= 120).collect()
}

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
                    let mut texts: Vec<String> = caps(policy)
                        .into_iter()
                        .map(|cap| render(&ledger, cap))
                        .filter(|l| !l.is_empty())
                        .map(|l| format!("{}\n\n{l}", grounded.text))
                        .collect();
                    texts.push(grounded.text.clone());
                    if let Some(found) = texts.iter().find_map(|t| fit.prove(t)) {
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
        let found = caps(policy).into_iter().find_map(|cap| {
            let text = render(&ledger, cap);
            if text.is_empty() {
                return None;
            }
            fit.prove(&format!("{intro}\n\n{text}"))
        });
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
