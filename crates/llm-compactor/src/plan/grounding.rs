//! The grounding gate: what a model-written summary must pass before it is accepted.
//!
//! Small models loop ("The tax class multiplier is ... " a dozen times) and invent
//! names that appear nowhere in the conversation; either, written into the agent's
//! context as fact, is worse than no summary. The gate, pure and deterministic:
//!
//! - cuts repeated sentences and runaway n-gram loops, and rejects a summary that is
//!   mostly repetition (a failed attempt, with the reason in `attempts`);
//! - flags every identifier (path, code identifier, test name) that occurs nowhere in
//!   the source (the replaced and kept messages) with `[unverified]`, or removes it;
//! - leaves supplying the open errors and the last user request to the ledger, which
//!   the compactor appends to every summary (see [`crate::plan::ledger`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::ledger::scan::{is_code_identifier, is_path, is_test_name, tokens, trim_token};

/// The flag put after an identifier the source does not contain.
pub const UNVERIFIED: &str = "[unverified]";

/// The gate's thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundingRules {
    /// A sentence shorter than this (chars, normalised) may repeat (headings, "Done.").
    /// Default 20.
    pub min_sentence_chars: usize,
    /// A run of this many words seen three times in one sentence is a loop, cut at its
    /// third occurrence. Default 6.
    pub loop_ngram: usize,
    /// A summary whose repeated part is more than this fraction of its chars is
    /// rejected. Default 0.5.
    pub max_repetition: f64,
    /// True: flag an ungrounded identifier with [`UNVERIFIED`]; false: remove the word.
    /// Default true.
    pub flag: bool,
}

impl Default for GroundingRules {
    fn default() -> Self {
        GroundingRules {
            min_sentence_chars: 20,
            loop_ngram: 6,
            max_repetition: 0.5,
            flag: true,
        }
    }
}

/// A summary that passed the gate, possibly edited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Grounded {
    /// The edited summary.
    pub text: String,
    /// Repeated sentences (or loop tails) cut.
    pub repeats_cut: usize,
    /// Identifiers the source does not contain (flagged or removed), in order.
    pub unverified: Vec<String>,
}

impl Grounded {
    /// A one-line account of the edits, for an attempt's note; `None` when none.
    pub fn note(&self) -> Option<String> {
        if self.repeats_cut == 0 && self.unverified.is_empty() {
            return None;
        }
        Some(format!(
            "grounding: {} repeated sentences cut, {} identifiers not in the source flagged {UNVERIFIED}",
            self.repeats_cut,
            self.unverified.len()
        ))
    }
}

/// Why the gate rejected a summary.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GroundingRejection {
    /// Most of it repeats itself.
    #[error("rejected by the grounding gate: {percent}% of the summary is repetition (limit {limit}%)")]
    MostlyRepetition {
        /// Repeated share, in percent.
        percent: u32,
        /// The limit, in percent.
        limit: u32,
    },
    /// Nothing is left after cutting.
    #[error("rejected by the grounding gate: nothing is left after cutting repetition")]
    Empty,
}

/// Runs the gate over `summary` against `source` (the text of the replaced and kept
/// messages, tool-call arguments included).
///
/// ```
/// use llm_compactor::plan::grounding::{ground, GroundingRules};
/// let source = "edited src/parser.py and ran pytest";
/// let out = ground("Edited src/parser.py and src/lexer.py.", source, &GroundingRules::default()).unwrap();
/// assert_eq!(out.text, "Edited src/parser.py and src/lexer.py. [unverified]");
/// assert_eq!(out.unverified, vec!["src/lexer.py".to_owned()]);
/// ```
///
/// # Errors
/// When the summary is mostly repetition, or empty after cutting it.
pub fn ground(summary: &str, source: &str, rules: &GroundingRules) -> Result<Grounded, GroundingRejection> {
    let total = summary.chars().count().max(1);
    let (deduped, repeats_cut, repeated_chars) = cut_repetition(summary, rules);
    let fraction = repeated_chars as f64 / total as f64;
    if fraction > rules.max_repetition {
        return Err(GroundingRejection::MostlyRepetition {
            percent: (fraction * 100.0).round() as u32,
            limit: (rules.max_repetition * 100.0).round() as u32,
        });
    }
    if deduped.trim().is_empty() {
        return Err(GroundingRejection::Empty);
    }
    let (text, unverified) = flag_ungrounded(&deduped, source, rules.flag);
    Ok(Grounded {
        text,
        repeats_cut,
        unverified,
    })
}

/// The gate's first check alone: `Err` when `summary` is mostly repetition (or nothing
/// is left after cutting it). The compactor runs it on every reply as it arrives, so
/// that a looping reply is a failed attempt, retried per the summarizer retry policy.
///
/// ```
/// use llm_compactor::plan::grounding::{check_repetition, GroundingRules};
/// let rules = GroundingRules::default();
/// assert!(check_repetition("The fix is in parser.py; tests pass.", &rules).is_ok());
/// let looped = "The tax class multiplier is calculated using the formula. ".repeat(12);
/// assert!(check_repetition(&looped, &rules).is_err());
/// ```
///
/// # Errors
/// The rejection [`ground`] would return for the repetition.
pub fn check_repetition(summary: &str, rules: &GroundingRules) -> Result<(), GroundingRejection> {
    let total = summary.chars().count().max(1);
    let (deduped, _, repeated_chars) = cut_repetition(summary, rules);
    let fraction = repeated_chars as f64 / total as f64;
    if fraction > rules.max_repetition {
        return Err(GroundingRejection::MostlyRepetition {
            percent: (fraction * 100.0).round() as u32,
            limit: (rules.max_repetition * 100.0).round() as u32,
        });
    }
    if deduped.trim().is_empty() {
        return Err(GroundingRejection::Empty);
    }
    Ok(())
}

/// The identifier candidates in one whitespace-free word. A token cut with `…` (the
/// ledger's, or anyone's, verbatim head of a longer line) stands for its part before
/// the `…`: `test_modul…` is grounded when the source has `test_modul`.
fn candidates(word: &str) -> impl Iterator<Item = &str> {
    tokens(word)
        .map(|t| trim_token(trim_token(t).trim_end_matches('…')))
        .filter(|t| is_path(t) || is_code_identifier(t) || is_test_name(t))
}

/// The identifiers of `text` that `source` does not contain and that are not flagged
/// [`UNVERIFIED`] (what the eval counts as hallucinations), in order.
pub fn ungrounded_identifiers(text: &str, source: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if words.get(i + 1) == Some(&UNVERIFIED) {
            continue;
        }
        for c in candidates(word) {
            if !source.contains(c) {
                out.push(c.to_owned());
            }
        }
    }
    out
}

fn flag_ungrounded(text: &str, source: &str, flag: bool) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len() + 64);
    let mut unverified = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let ws = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let missing: Vec<&str> = candidates(word).filter(|c| !source.contains(c)).collect();
        if missing.is_empty() {
            out.push_str(word);
        } else {
            unverified.extend(missing.iter().map(|m| (*m).to_owned()));
            if flag {
                out.push_str(word);
                // Already flagged by an earlier pass: do not flag twice.
                if !rest.trim_start().starts_with(UNVERIFIED) {
                    out.push(' ');
                    out.push_str(UNVERIFIED);
                }
            }
        }
    }
    (out, unverified)
}

fn normalise(sentence: &str) -> String {
    sentence
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', '!', '?', ',', ';', ':'])
        .to_lowercase()
}

/// Splits a line after `. `, `! `, `? ` (keeping the delimiter with the sentence).
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for i in 0..bytes.len().saturating_sub(1) {
        if matches!(bytes[i], b'.' | b'!' | b'?') && bytes[i + 1] == b' ' {
            out.push(&line[start..=i]);
            start = i + 1;
        }
    }
    out.push(&line[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// The text without repeated sentences and loop tails; how many cuts; how many chars cut.
fn cut_repetition(text: &str, rules: &GroundingRules) -> (String, usize, usize) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut cuts = 0;
    let mut cut_chars = 0;
    let mut out_lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut kept = String::new();
        let mut any = false;
        for sentence in sentences(line) {
            let (sentence, tail) = cut_loop(sentence, rules.loop_ngram);
            if tail > 0 {
                cuts += 1;
                cut_chars += tail;
            }
            let key = normalise(sentence);
            if key.chars().count() >= rules.min_sentence_chars && !seen.insert(key) {
                cuts += 1;
                cut_chars += sentence.chars().count();
                continue;
            }
            kept.push_str(sentence);
            any = true;
        }
        if any || line.trim().is_empty() {
            out_lines.push(kept.trim_end().to_owned());
        }
    }
    let mut out = out_lines.join("\n");
    // Collapse the blank lines left by dropped lines.
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    (out.trim().to_owned(), cuts, cut_chars)
}

/// `sentence` cut at the third occurrence of any `n`-word run, and the chars cut.
fn cut_loop(sentence: &str, n: usize) -> (&str, usize) {
    if n == 0 {
        return (sentence, 0);
    }
    // Word start offsets.
    let mut starts = Vec::new();
    let mut words = Vec::new();
    let mut offset = 0;
    for word in sentence.split_inclusive(char::is_whitespace) {
        if !word.trim().is_empty() {
            starts.push(offset);
            words.push(word.trim().to_lowercase());
        }
        offset += word.len();
    }
    if words.len() < n * 3 {
        return (sentence, 0);
    }
    let mut counts: std::collections::HashMap<&[String], usize> = std::collections::HashMap::new();
    for i in 0..=words.len() - n {
        let count = counts.entry(&words[i..i + n]).or_insert(0);
        *count += 1;
        if *count == 3 {
            let cut = starts[i];
            let kept = sentence[..cut].trim_end();
            return (kept, sentence[kept.len()..].chars().count());
        }
    }
    (sentence, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_sentences_are_cut() {
        let s = "## Goals\nThe tax class multiplier is computed by a formula. The tax class multiplier is computed by a formula. Fixed the bug in the parser module today.";
        let out = ground(s, "parser", &GroundingRules::default()).unwrap();
        assert_eq!(out.repeats_cut, 1);
        assert_eq!(out.text.matches("tax class").count(), 1);
    }

    #[test]
    fn mostly_repetition_is_rejected() {
        let s = "The tax class multiplier is calculated using the formula. ".repeat(12);
        let err = ground(&s, "", &GroundingRules::default()).unwrap_err();
        assert!(matches!(err, GroundingRejection::MostlyRepetition { .. }), "{err}");
        let looped = "and then we run the same step again and then we run the same step again and then we run the same step again and then we run the same step again";
        assert!(ground(looped, "", &GroundingRules::default()).is_err());
    }

    #[test]
    fn ungrounded_identifiers_are_flagged_or_removed() {
        let source = "we read pvlib/temperature.py and called fit_model";
        let s = "Read pvlib/temperature.py, called fit_model and invented_function in fake/path.py.";
        let out = ground(s, source, &GroundingRules::default()).unwrap();
        assert_eq!(out.unverified, vec!["invented_function", "fake/path.py"]);
        assert!(out.text.contains("invented_function [unverified]"));
        assert!(ungrounded_identifiers(&out.text, source).is_empty());
        let removed = ground(
            s,
            source,
            &GroundingRules {
                flag: false,
                ..GroundingRules::default()
            },
        )
        .unwrap();
        assert!(!removed.text.contains("invented_function"));
        assert!(removed.text.contains("fit_model"));
    }

    // Regression (issue 11): the eval counted 29 "hallucinations" on uncapped ledger
    // output, every one a verbatim line the ledger had cut with `…`
    // (`pvlib/tests/test_irradiance.py::test_sky_diffuse_zenith_close_to_90…`): the
    // `…` made the token absent from the source.
    #[test]
    fn a_verbatim_head_cut_with_an_ellipsis_is_grounded() {
        let source = "FAILED pvlib/tests/test_irradiance.py::test_sky_diffuse_zenith_close_to_90deg - x";
        for cut in [
            "- FAILED pvlib/tests/test_irradiance.py::test_sky_diffuse_zenith_close_to_90…",
            "- `pytest -k test_sky_diff…` ✓",
            "(from `pytest pvlib/tests/test_irr…`)",
        ] {
            assert!(ungrounded_identifiers(cut, source).is_empty(), "{cut}");
            assert!(
                ground(cut, source, &GroundingRules::default())
                    .unwrap()
                    .unverified
                    .is_empty()
            );
        }
        // An invented name stays invented, cut or not.
        assert_eq!(
            ungrounded_identifiers("test_invented_na…", source),
            ["test_invented_na"]
        );
    }

    #[test]
    fn plain_prose_passes_untouched() {
        let s = "## Goals\nFix the crash.\n\n## Progress\nThe fix works; all tests pass.";
        let out = ground(s, "", &GroundingRules::default()).unwrap();
        assert_eq!(out.text, s);
        assert!(out.note().is_none());
    }
}
