//! `compactor eval --instructions`: do planted instructions survive compaction, and does
//! every result fit its budget?
//!
//! Each conversation (the files given, a results file's runs — tau-bench's list of
//! `{"traj": [...]}` — one by one, and `--chat-sessions N` generated chats) gets the
//! instructions of [`super::eval_plant`] planted, and is then compacted as it would be
//! over a session: the first pass over its first three fifths (every planted message is
//! in them), each next pass over the last result and the next share of the rest, the last
//! over the whole. After the first and after the last pass the result is scored: each
//! planted instruction present verbatim, the replaced value never presented as current,
//! nothing listed twice by a summary. Every pass is checked against its budget: within
//! it, or `exhausted`, and exhausted only where the sticky prefix, a notice and the last
//! turn alone are over it (otherwise a smaller summary could have fit: `needless`).
//!
//! Budgets (`--budgets`) are a share of each planted conversation (`20%`, at least 256
//! tokens), a token count, or `default` (`--budget`, 128,000 unless given). Aging keeps
//! the engine's default here, as in a session.

use std::sync::Arc;
use std::time::Instant;

use llm_compactor::format::{Document, Format};
use llm_compactor::plan::SUMMARY_HEADER;
use llm_compactor::{Message, Role, Summarizer, TokenCounter};
use serde_json::Value;

use super::compact_opts::CompactOpts;
use super::eval_instructions_report::{table, totals};
use super::eval_plant::{self, Planted};
use super::eval_scores::{PassCheck, RunScore};
use crate::error::CliError;
use crate::io;

/// The least budget a share gives.
pub const MIN_BUDGET: usize = 256;

/// A budget to score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetSpec {
    /// This percentage of each planted conversation (at least [`MIN_BUDGET`]).
    Percent(u32),
    /// This many tokens.
    Tokens(usize),
    /// `--budget`, or the default context window.
    Default,
}

impl BudgetSpec {
    /// Its label in reports.
    pub fn label(self) -> String {
        match self {
            BudgetSpec::Percent(p) => format!("{p}%"),
            BudgetSpec::Tokens(t) => t.to_string(),
            BudgetSpec::Default => "default".to_owned(),
        }
    }
}

/// `--budgets`' parser: `P%` (1 to 100), a token count, or `default`.
pub fn parse_budget(text: &str) -> Result<BudgetSpec, String> {
    let text = text.trim();
    if text == "default" {
        return Ok(BudgetSpec::Default);
    }
    if let Some(p) = text.strip_suffix('%') {
        return match p.parse::<u32>() {
            Ok(p) if (1..=100).contains(&p) => Ok(BudgetSpec::Percent(p)),
            _ => Err(format!("`{text}`: a share is 1% to 100%")),
        };
    }
    super::ranges::tokens(text)
        .map(BudgetSpec::Tokens)
        .map_err(|e| format!("`{text}`: a budget is P%, a token count or `default` ({e})"))
}

/// A conversation to plant and score.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its set, for the totals: the folder of its file (`mini-swe-agent`), or `chat`.
    pub set: String,
    /// Its name: the file, `FILE#k` for a results file's run, `chat-N`.
    pub name: String,
    /// Its messages.
    pub messages: Vec<Message>,
}

/// The folder name of `file` (its set), or `.`.
fn folder(file: &str) -> String {
    std::path::Path::new(file)
        .parent()
        .and_then(|p| p.file_name())
        .map_or(".".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Reads the conversations of `files` (a results file's runs one by one, as `FILE#k`)
/// and `chat_sessions` generated chats.
///
/// # Errors
/// A file that cannot be read or holds no conversation.
pub fn conversations(files: &[String], format: Option<Format>, chat_sessions: u64) -> Result<Vec<Source>, CliError> {
    let mut out = Vec::new();
    for file in files {
        let bytes = io::read_input(file)?;
        let name = io::source_name(file);
        let set = folder(file);
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| CliError::Failed(format!("{name}: {e}")))?;
        let runs = value
            .as_array()
            .filter(|items| !items.is_empty() && items.iter().all(|t| t.get("traj").is_some_and(Value::is_array)));
        match runs {
            Some(runs) => {
                for (k, run) in runs.iter().enumerate() {
                    let run_name = format!("{name}#{k}");
                    let doc = Document::from_value(run["traj"].clone(), format.or(Some(Format::OpenAi)), &run_name)
                        .map_err(CliError::failed)?;
                    out.push(Source {
                        set: set.clone(),
                        name: run_name,
                        messages: doc.messages().to_vec(),
                    });
                }
            }
            None => {
                let doc = Document::from_value(value, format, &name).map_err(CliError::failed)?;
                out.push(Source {
                    set,
                    name,
                    messages: doc.messages().to_vec(),
                });
            }
        }
    }
    for seed in 0..chat_sessions {
        out.push(Source {
            set: "chat".to_owned(),
            name: super::eval_chat::name(seed),
            messages: super::eval_chat::session(seed, super::eval_chat::TURNS),
        });
    }
    Ok(out)
}

/// The seed of a conversation's planted values: the hash of its name less its folder.
fn seed(name: &str) -> u64 {
    eval_plant::seed_of(name.rsplit('/').next().unwrap_or(name))
}

/// What no pass may go below: the sticky messages, a notice, and the last turn (from the
/// newest user message on).
pub fn floor(messages: &[Message], counter: &dyn TokenCounter) -> usize {
    let newest_user = messages
        .iter()
        .rposition(|m| m.role == Role::User && !m.is_sticky())
        .unwrap_or(0);
    let mut kept: Vec<Message> = messages[..newest_user]
        .iter()
        .filter(|m| m.is_sticky())
        .cloned()
        .collect();
    kept.push(Message::user(format!("{SUMMARY_HEADER}\n{}", "n".repeat(200))));
    kept.extend(messages[newest_user..].iter().cloned());
    counter.count_messages(&kept)
}

/// Where each pass's input ends: the first over three fifths (and at least past
/// `messages[after]`), the last over the whole.
pub fn cuts(messages: &[Message], after: usize, passes: usize) -> Vec<usize> {
    let bounds: Vec<usize> = eval_plant::boundaries(messages)
        .into_iter()
        .filter(|&b| b > after)
        .collect();
    let n = messages.len();
    let mut out: Vec<usize> = (0..passes.saturating_sub(1))
        .map(|k| {
            let share = 600 + 400 * k / (passes - 1);
            eval_plant::boundary_at(&bounds, n, share).unwrap_or(n)
        })
        .collect();
    out.push(n);
    for i in 1..out.len() {
        out[i] = out[i].max(out[i - 1]);
    }
    out
}

fn score_of(planted: &[Planted], messages: &[Message]) -> (Vec<bool>, usize) {
    let survived = planted.iter().map(|p| eval_plant::survives(p, messages)).collect();
    let duplicates = planted
        .iter()
        .filter(|p| !p.superseded && eval_plant::duplicated(p, messages))
        .count();
    (survived, duplicates)
}

/// The settings every conversation is scored with.
pub struct Setup<'a> {
    /// The compaction options (`--budget` is replaced by each budget's).
    pub opts: &'a CompactOpts,
    /// The summarizer, built once.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// The counter.
    pub counter: Arc<dyn TokenCounter>,
    /// Passes per conversation (at least one).
    pub passes: usize,
}

/// Plants `messages` and scores them at `spec`; `Ok(None)` when they cannot be planted.
///
/// # Errors
/// An invalid setting for this budget, a pass that fails, or an interrupt.
pub fn score(
    setup: &Setup<'_>,
    name: &str,
    messages: &[Message],
    spec: BudgetSpec,
) -> Result<Option<RunScore>, CliError> {
    let Some(planting) = eval_plant::plant(messages, seed(name)) else {
        return Ok(None);
    };
    let (planted_messages, planted) = (&planting.messages, &planting.planted);
    let tokens = setup.counter.count_messages(planted_messages);
    let mut opts = setup.opts.clone();
    match spec {
        BudgetSpec::Percent(p) => opts.budget = Some((tokens * p as usize / 100).max(MIN_BUDGET)),
        BudgetSpec::Tokens(t) => opts.budget = Some(t),
        BudgetSpec::Default => {}
    }
    let (compactor, _) = opts.compactor_with(setup.summarizer.clone())?;
    let budget = compactor.config().context_budget;
    let mut current: Vec<Message> = Vec::new();
    let mut from = 0;
    let mut checks = Vec::new();
    let mut first = None;
    for to in cuts(planted_messages, planting.last, setup.passes.max(1)) {
        current.extend_from_slice(&planted_messages[from..to]);
        let (result, interrupted) = opts.run_pass(&compactor, &current)?;
        if let Some(signal) = interrupted {
            return Err(crate::cmd::compact::interrupted_error(signal, "the evaluation stopped"));
        }
        checks.push(PassCheck {
            new_messages: to - from,
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            exhausted: result.exhausted,
            floor: floor(&current, setup.counter.as_ref()),
            exhaustion: result.exhaustion.clone(),
        });
        from = to;
        current = result.messages;
        if first.is_none() {
            first = Some(score_of(planted, &current));
        }
    }
    let (one, dup_one) = first.unwrap_or_default();
    let (last, dup_last) = score_of(planted, &current);
    let lost = planted
        .iter()
        .zip(&last)
        .filter(|(_, s)| !**s)
        .map(|(p, _)| format!("{}: {}", p.kind.name(), p.text))
        .collect();
    let duplicated = planted
        .iter()
        .filter(|p| !p.superseded && eval_plant::duplicated(p, &current))
        .map(|p| format!("{}: {}", p.kind.name(), p.text))
        .collect();
    Ok(Some(RunScore {
        conversation: name.to_owned(),
        label: spec.label(),
        budget,
        tokens,
        passes: checks,
        survival: planted
            .iter()
            .zip(one.iter().zip(&last))
            .map(|(p, (a, b))| (p.kind, *a, *b))
            .collect(),
        superseded_as_current: planted
            .iter()
            .position(|p| p.superseded)
            .map_or((false, false), |i| (!one[i], !last[i])),
        duplicates: (dup_one, dup_last),
        lost,
        duplicated,
    }))
}

/// Runs `--instructions` over `conversations` at each of `budgets`; the report, as text
/// or JSON.
///
/// # Errors
/// As [`score`].
pub fn run(
    setup: &Setup<'_>,
    summarizer: &str,
    conversations: &[Source],
    budgets: &[BudgetSpec],
    json: bool,
) -> Result<String, CliError> {
    let mut all = Vec::new();
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for &spec in budgets {
        let started = Instant::now();
        let mut scores = Vec::new();
        for c in conversations {
            match score(setup, &c.name, &c.messages, spec)? {
                Some(s) => scores.push((c.set.as_str(), s)),
                None if !skipped.contains(&c.name) => skipped.push(c.name.clone()),
                None => {}
            }
        }
        eprintln!(
            "compactor eval: {}: {} conversations in {:.1} s",
            spec.label(),
            scores.len(),
            started.elapsed().as_secs_f64()
        );
        let mut sets: Vec<&str> = Vec::new();
        for (set, _) in &scores {
            if !sets.contains(set) {
                sets.push(set);
            }
        }
        for set in sets {
            let of_set: Vec<&RunScore> = scores.iter().filter(|(s, _)| *s == set).map(|(_, r)| r).collect();
            all.push(totals(set, &spec.label(), &of_set));
        }
        runs.extend(scores.into_iter().map(|(_, r)| r));
    }
    // Set by set (in the order the sets came), each set's budgets in the order given.
    let mut order: Vec<String> = Vec::new();
    for c in conversations {
        if !order.contains(&c.set) {
            order.push(c.set.clone());
        }
    }
    all.sort_by_key(|t| order.iter().position(|s| *s == t.set));
    if json {
        serde_json::to_string_pretty(&serde_json::json!({
            "summarizer": summarizer,
            "passes": setup.passes,
            "skipped": skipped,
            "budgets": all,
            "conversations": runs,
        }))
        .map_err(CliError::failed)
    } else {
        Ok(table(summarizer, setup.passes, &skipped, &all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_as_shares_counts_or_the_default() {
        assert_eq!(parse_budget("20%"), Ok(BudgetSpec::Percent(20)));
        assert_eq!(parse_budget("4000"), Ok(BudgetSpec::Tokens(4000)));
        assert_eq!(parse_budget("default"), Ok(BudgetSpec::Default));
        assert!(parse_budget("0%").is_err());
        assert!(parse_budget("101%").is_err());
        assert!(parse_budget("lots").is_err());
    }

    #[test]
    fn the_first_cut_is_three_fifths_in_and_the_last_is_the_end() {
        let messages = super::super::eval_chat::session(0, 50);
        let cuts = cuts(&messages, 0, 5);
        assert_eq!(cuts.len(), 5);
        assert_eq!(*cuts.last().unwrap(), messages.len());
        assert!(
            cuts[0] >= messages.len() * 3 / 5 && cuts[0] < messages.len() * 7 / 10,
            "{cuts:?}"
        );
        assert!(cuts.windows(2).all(|w| w[0] <= w[1]), "{cuts:?}");
        assert_eq!(super::cuts(&messages, 0, 1), vec![messages.len()]);
        // Never before the last planted message.
        assert!(super::cuts(&messages, 90, 5)[0] > 90);
    }

    #[test]
    fn a_pass_over_its_budget_is_needless_only_where_the_floor_fits() {
        let check = |after, exhausted, floor| PassCheck {
            new_messages: 2,
            tokens_before: 5000,
            tokens_after: after,
            exhausted,
            floor,
            exhaustion: None,
        };
        assert!(!check(900, false, 400).needless(1000));
        assert!(check(1200, false, 400).needless(1000));
        assert!(check(900, true, 400).needless(1000));
        assert!(!check(1500, true, 1400).needless(1000));
    }
}
