//! A superseded user message, marked as such.
//!
//! Users revise: "the budget cap is $201", and forty turns later "the budget cap is now
//! $956, it replaces the $201 one". Listed side by side in "Earlier user messages" with
//! nothing saying which holds, a reader (or a model) may act on either. So when a later
//! user message says it replaces an earlier one, the earlier line is kept verbatim and
//! marked with [`super::SUPERSEDED`]; the mark is a suffix the renderer writes and
//! [`super::parse_rendered`] reads back, so it holds across passes. A marked line is cut
//! before the lines still in force when the ledger's room is short.
//!
//! The rule is deliberately narrow (no paraphrase, no guess about meaning): the later
//! message must use a word of change (`replaces`, `instead`, `now`, `raised`, …) and
//! either name a value of the earlier one beside a new value ("… it replaces the $201
//! one"), or give the same key a different value ("budget cap is $201" → "budget cap
//! is now $956"). A value is a word with a digit in it.

use super::marks::{mark, split_count, split_superseded};

/// Words that say a message changes an earlier one, naming the old value.
const STRONG: [&str; 16] = [
    "replace",
    "replaces",
    "replaced",
    "instead",
    "longer",
    "anymore",
    "changed",
    "change",
    "raised",
    "lowered",
    "increased",
    "decreased",
    "update",
    "updated",
    "correction",
    "actually",
];

/// Words that make a key's new value a change (with the strong ones).
const WEAK: [&str; 3] = ["now", "new", "moved"];

/// Words skipped when reading the key before a value.
const STOP: [&str; 24] = [
    "is", "are", "was", "were", "be", "now", "to", "at", "of", "the", "a", "an", "it", "from", "by", "should", "must",
    "will", "new", "my", "our", "its", "on", "in",
];

/// True when the user message `later` says it replaces `earlier` (see the module's
/// rule). Both are plain text; `earlier` may carry a count or a mark.
///
/// ```
/// use llm_compactor::plan::ledger::supersedes;
/// let old = "Constraint: the budget cap is $201 for the whole trip.";
/// assert!(supersedes("Correction: the budget cap is now $956, it replaces the $201 one.", old));
/// assert!(supersedes("The budget cap is now $956.", old));
/// assert!(!supersedes("The hotel cap is now $956.", old));
/// assert!(!supersedes("Now book the cheapest one under $201.", old));
/// assert!(!supersedes(old, old));
/// ```
pub fn supersedes(later: &str, earlier: &str) -> bool {
    let later_words = words(later);
    let earlier_words = words(earlier);
    if later_words == earlier_words {
        return false;
    }
    let strong = later_words.iter().any(|w| STRONG.contains(&w.as_str()));
    let weak = strong || later_words.iter().any(|w| WEAK.contains(&w.as_str()));
    if !weak {
        return false;
    }
    let old_values: Vec<&String> = earlier_words.iter().filter(|w| is_value(w)).collect();
    let new_values: Vec<&String> = later_words.iter().filter(|w| is_value(w)).collect();
    // The old value named beside a new one.
    if strong && new_values.iter().any(|v| old_values.contains(v)) && new_values.iter().any(|v| !old_values.contains(v))
    {
        return true;
    }
    // The same key, a different value.
    let old_keys = keyed(&earlier_words);
    keyed(&later_words)
        .into_iter()
        .any(|(key, value)| old_keys.iter().any(|(k, v)| *k == key && *v != value))
}

/// The message's words, lowercased, their edge punctuation cut (`$` and `%` kept).
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '$' || c == '%'))
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn is_value(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit())
}

/// Each value with its key: the two words before it that are neither stop words nor
/// values (`budget cap` of `the budget cap is $201`).
fn keyed(words: &[String]) -> Vec<([String; 2], String)> {
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate().filter(|(_, w)| is_value(w)) {
        let key: Vec<&String> = words[..i]
            .iter()
            .rev()
            .take_while(|w| !is_value(w))
            .filter(|w| !STOP.contains(&w.as_str()))
            .take(2)
            .collect();
        if let [second, first] = key[..] {
            out.push(([first.clone(), second.clone()], word.clone()));
        }
    }
    out
}

/// Marks every line of `lines` that the user message `later` replaces (see
/// [`supersedes`]); a line's count and mark are not part of its text.
pub(crate) fn mark_superseded(lines: &mut [String], later: &str) {
    if later.is_empty() {
        return;
    }
    for line in lines.iter_mut() {
        let (body, marked) = split_superseded(line);
        if !marked && supersedes(later, split_count(body).0) {
            *line = mark(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_two_words_before_the_value() {
        let k = keyed(&words("Constraint: the budget cap is $201 for the whole trip."));
        assert_eq!(k, vec![(["budget".to_owned(), "cap".to_owned()], "$201".to_owned())]);
    }

    #[test]
    fn a_restated_fact_with_another_number_is_no_change_without_a_word_of_change() {
        assert!(!supersedes(
            "The trip must end by Friday the 21st.",
            "Constraint: the trip must end by Friday the 14th."
        ));
        assert!(supersedes(
            "Change of plan: the trip must end by Friday the 21st.",
            "Constraint: the trip must end by Friday the 14th."
        ));
    }
}
