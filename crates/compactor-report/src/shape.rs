//! The shape of a conversation: runs of neighbouring messages of one role and fate, each
//! drawn as wide as its tokens, so "the middle went, the system prompt and the recent
//! turns stayed, one summary came in" is seen, not read.
//!
//! A long conversation has thousands of runs; past the cap they are merged (first across
//! roles, then into buckets) so that the view stays a few dozen boxes.

use crate::model::Segment;

/// One message of a shape: its role, its fate, its tokens.
pub struct Cell<'a> {
    /// The role.
    pub role: &'a str,
    /// What the pass did to it.
    pub fate: &'static str,
    /// Its tokens.
    pub tokens: usize,
}

/// The runs of `cells`, at most `max` of them.
pub fn segments<'a>(cells: impl IntoIterator<Item = Cell<'a>>, max: usize) -> Vec<Segment> {
    let mut runs: Vec<Segment> = Vec::new();
    for cell in cells {
        match runs.last_mut() {
            Some(last) if last.role == cell.role && last.fate == cell.fate => {
                last.messages += 1;
                last.tokens += cell.tokens;
            }
            _ => runs.push(Segment {
                role: cell.role.to_owned(),
                fate: cell.fate,
                messages: 1,
                tokens: cell.tokens,
            }),
        }
    }
    if runs.len() <= max {
        return runs;
    }
    // Merged across roles: the fates are what a pass is about.
    let mut merged: Vec<Segment> = Vec::new();
    for run in runs {
        match merged.last_mut() {
            Some(last) if last.fate == run.fate => {
                if last.role != run.role {
                    last.role = "mixed".to_owned();
                }
                last.messages += run.messages;
                last.tokens += run.tokens;
            }
            _ => merged.push(run),
        }
    }
    if merged.len() <= max {
        return merged;
    }
    let per = merged.len().div_ceil(max);
    merged
        .chunks(per)
        .map(|chunk| {
            let dominant = chunk.iter().max_by_key(|s| s.tokens).map_or("kept", |s| s.fate);
            Segment {
                role: "mixed".to_owned(),
                fate: dominant,
                messages: chunk.iter().map(|s| s.messages).sum(),
                tokens: chunk.iter().map(|s| s.tokens).sum(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(role: &'static str, fate: &'static str) -> Cell<'static> {
        Cell { role, fate, tokens: 10 }
    }

    #[test]
    fn neighbours_of_one_role_and_fate_are_one_run() {
        let runs = segments(
            [
                cell("user", "kept"),
                cell("user", "kept"),
                cell("tool", "kept"),
                cell("tool", "stubbed"),
            ],
            10,
        );
        let shape: Vec<_> = runs.iter().map(|s| (s.role.as_str(), s.fate, s.messages)).collect();
        assert_eq!(
            shape,
            [("user", "kept", 2), ("tool", "kept", 1), ("tool", "stubbed", 1)]
        );
    }

    #[test]
    fn a_long_conversation_stays_within_the_cap_and_keeps_every_message() {
        let cells = (0..10_000).map(|i| {
            cell(
                if i % 2 == 0 { "assistant" } else { "tool" },
                if i % 3 == 0 { "stubbed" } else { "kept" },
            )
        });
        let runs = segments(cells, 50);
        assert!(runs.len() <= 50);
        assert_eq!(runs.iter().map(|s| s.messages).sum::<usize>(), 10_000);
        assert_eq!(runs.iter().map(|s| s.tokens).sum::<usize>(), 100_000);
    }
}
