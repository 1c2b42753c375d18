//! Fitting the transcript into the summarizer's own window.
//!
//! Peers' compactors fail exactly when they are needed because the summary request itself
//! overflows. Ours never sends one that does: when the instruction plus the rendered
//! middle does not fit the summarizer's declared input room, the middle is cut into
//! consecutive pair-aligned chunks (an assistant turn travels with its results), each
//! request carrying the summary so far; a single unit too big for the room on its own is
//! itself capped to fit. Pure: the caller supplies the token estimate.

use super::transcript::{render_message, truncate_marked};
use crate::message::Message;

/// The rendered middle, one pair-aligned unit per entry: a message together with the
/// tool results that directly follow it.
pub fn render_units(messages: &[Message], middle: &[usize], cap: usize) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    for &i in middle {
        let Some(message) = messages.get(i) else { continue };
        let rendered = render_message(message, cap);
        match units.last_mut() {
            Some(last) if message.is_tool_result() => {
                last.push('\n');
                last.push_str(&rendered);
            }
            _ => units.push(rendered),
        }
    }
    units
}

/// The transcript of a request that carries `summary` from earlier chunks.
fn carried_prefix(carry_note: &str, summary: &str) -> String {
    // The carried summary is model output: escaped like message text.
    let summary = super::transcript::escape_body(summary);
    format!("{carry_note}\n\n[summary so far]\n{summary}\n\n[transcript, continued]\n")
}

/// The next request's transcript, starting at unit `start`, and the index of the first
/// unit it did not take. `room` is the token room for the transcript alone; `estimate`
/// counts tokens of a text. Always takes at least one unit (capped to fit when it alone
/// is too big) while any remain.
///
/// Linear in the chunk: units are taken while the sum of their estimates fits (for
/// every real counter a concatenation counts at most its parts' sum), and the chunk is
/// then estimated once as a whole; should a counter disagree, units are given back until
/// the whole fits. Re-estimating the growing text after every unit was quadratic, which
/// with an exact tokenizer and a 128k room took minutes.
pub fn next_chunk(
    units: &[String],
    start: usize,
    carry: Option<(&str, &str)>,
    room: usize,
    estimate: &dyn Fn(&str) -> usize,
) -> (String, usize) {
    let prefix = match carry {
        Some((note, summary)) => {
            let mut prefix = carried_prefix(note, summary);
            if estimate(&prefix) > room / 2 {
                let capped = fit(summary, |s| estimate(&carried_prefix(note, s)) <= room / 2);
                prefix = carried_prefix(note, &capped);
            }
            prefix
        }
        None => String::new(),
    };
    let mut used = if prefix.is_empty() { 0 } else { estimate(&prefix) };
    let mut next = start;
    for unit in units.get(start..).unwrap_or(&[]) {
        // The unit, and the newline that separates it from the one before.
        let cost = estimate(unit).saturating_add(usize::from(next > start));
        if used.saturating_add(cost) > room {
            break;
        }
        used += cost;
        next += 1;
    }
    while next > start {
        let text = format!("{prefix}{}", units[start..next].join("\n"));
        if estimate(&text) <= room {
            return (text, next);
        }
        next -= 1;
    }
    match units.get(start) {
        None => (prefix, start),
        Some(unit) => {
            let capped = fit(unit, |s| estimate(&format!("{prefix}{s}")) <= room);
            (format!("{prefix}{capped}"), start + 1)
        }
    }
}

/// The longest marked truncation of `text` that `fits`.
fn fit(text: &str, fits: impl Fn(&str) -> bool) -> String {
    let mut cap = text.chars().count();
    loop {
        let candidate = truncate_marked(text, cap);
        if cap == 0 || fits(&candidate) {
            return candidate;
        }
        cap = cap * 3 / 4;
    }
}
