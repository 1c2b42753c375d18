//! `compactor eval --instructions`: the totals of the scores, by set and budget, and the
//! table they print as.

use serde::Serialize;

use super::eval_plant::Kind;
use super::eval_scores::RunScore;

/// The totals of one budget's scores.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// The set.
    pub set: String,
    /// The budget's label.
    pub budget: String,
    /// Conversations scored.
    pub conversations: usize,
    /// Per type: planted, survived after the first pass, after the last.
    pub by_kind: Vec<(Kind, usize, usize, usize)>,
    /// Conversations whose replaced value was presented as current: after the first pass,
    /// after the last.
    pub superseded_as_current: (usize, usize),
    /// Instructions a summary listed twice or more: after the first pass, the last.
    pub duplicates: (usize, usize),
    /// Passes run.
    pub passes: usize,
    /// Of those, passes over the last result alone (nothing new: two cuts fell together
    /// in a short conversation).
    pub passes_without_new: usize,
    /// Of those, results within the budget.
    pub within: usize,
    /// Of those, `exhausted`.
    pub exhausted: usize,
    /// Exhausted or over the budget where the floor fits it.
    pub needless: usize,
    /// Tokens before and after the last pass, summed over the conversations.
    pub tokens_planted: usize,
    /// Tokens after the last pass, summed.
    pub tokens_after: usize,
}

/// The totals of `scores` (all of one set, at one budget).
pub fn totals(set: &str, label: &str, scores: &[&RunScore]) -> Totals {
    let mut t = Totals {
        set: set.to_owned(),
        budget: label.to_owned(),
        conversations: scores.len(),
        by_kind: Kind::ALL.iter().map(|&k| (k, 0, 0, 0)).collect(),
        ..Totals::default()
    };
    for s in scores {
        for &(kind, one, last) in &s.survival {
            if let Some(row) = t.by_kind.iter_mut().find(|r| r.0 == kind) {
                row.1 += 1;
                row.2 += usize::from(one);
                row.3 += usize::from(last);
            }
        }
        t.superseded_as_current.0 += usize::from(s.superseded_as_current.0);
        t.superseded_as_current.1 += usize::from(s.superseded_as_current.1);
        t.duplicates.0 += s.duplicates.0;
        t.duplicates.1 += s.duplicates.1;
        t.passes += s.passes.len();
        t.passes_without_new += s.passes.iter().filter(|p| p.new_messages == 0).count();
        t.within += s.passes.iter().filter(|p| p.within(s.budget)).count();
        t.exhausted += s.passes.iter().filter(|p| p.exhausted).count();
        t.needless += s.passes.iter().filter(|p| p.needless(s.budget)).count();
        t.tokens_planted += s.tokens;
        t.tokens_after += s.passes.last().map_or(0, |p| p.tokens_after);
    }
    t
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}%", 100.0 * part as f64 / whole as f64)
    }
}

/// The totals as a table.
pub fn table(summarizer: &str, passes: usize, skipped: &[String], all: &[Totals]) -> String {
    let mut out = format!("summarizer: {summarizer}; {passes} passes each (the first over 3/5 of a conversation)\n");
    if !skipped.is_empty() {
        out.push_str(&format!("skipped (no turn to plant at): {}\n", skipped.join(", ")));
    }
    out.push_str(&format!("{:<16} {:>5} {:<8} {:>5}", "set", "convs", "budget", "after"));
    for kind in Kind::ALL {
        out.push_str(&format!(" {:>10}", kind.name()));
    }
    out.push_str(&format!(" {:>6} {:>10} {:>5}\n", "all", "as-current", "dupes"));
    for t in all {
        for (after, pick) in [(1, 0), (passes, 1)] {
            out.push_str(&format!(
                "{:<16} {:>5} {:<8} {after:>5}",
                t.set, t.conversations, t.budget
            ));
            let (mut s, mut n) = (0, 0);
            for row in &t.by_kind {
                let survived = if pick == 0 { row.2 } else { row.3 };
                out.push_str(&format!(" {:>10}", pct(survived, row.1)));
                s += survived;
                n += row.1;
            }
            let (current, dupes) = if pick == 0 {
                (t.superseded_as_current.0, t.duplicates.0)
            } else {
                (t.superseded_as_current.1, t.duplicates.1)
            };
            out.push_str(&format!(" {:>6} {current:>10} {dupes:>5}\n", pct(s, n)));
        }
    }
    out.push_str(&format!(
        "\n{:<16} {:<8} {:>7} {:>7} {:>9} {:>8} {:>13} {:>13}\n",
        "set", "budget", "passes", "within", "exhausted", "needless", "tokens", "after"
    ));
    for t in all {
        out.push_str(&format!(
            "{:<16} {:<8} {:>7} {:>7} {:>9} {:>8} {:>13} {:>13}\n",
            t.set, t.budget, t.passes, t.within, t.exhausted, t.needless, t.tokens_planted, t.tokens_after
        ));
    }
    out.push_str(
        "(survival: planted instructions verbatim in the result, the replaced value never presented as \
         current; as-current: conversations presenting the replaced value as current; dupes: instructions \
         a summary lists twice; within: results within the budget; needless: exhausted or over the budget \
         where the sticky prefix and the last turn fit)\n",
    );
    out
}
