//! `compactor eval`: the quality score of a summarizer, measured on real conversations.
//!
//! Size alone says nothing about whether a summary kept what matters or invented
//! something. For each file this runs one pass (every engine flag of `compact` applies)
//! and scores the summary against probes drawn from the replaced middle
//! ([`super::eval_probes`]): recall (probes found verbatim), hallucinations
//! (identifiers in the summary found nowhere in the conversation and not flagged
//! `[unverified]`), the compression ratio and the time taken. `--agent-loop` scores what
//! survives across passes ([`super::eval_loop`]); `--instructions` plants the user's
//! instructions and scores their survival and every result's budget
//! ([`super::eval_instructions`]).

use std::time::Instant;

use llm_compactor::plan::SUMMARY_HEADER;
use llm_compactor::plan::grounding::{UNVERIFIED, ungrounded_identifiers};
use llm_compactor::plan::ledger::{
    LedgerPolicy, LedgerRules, changes_something, chars_for_tokens, extract, history_fits, source_text,
};
use serde::Serialize;
use serde_json::json;

use super::compact_opts::CompactOpts;
use super::eval_probes::{Probe, ProbeKind, draw};
use crate::error::CliError;
use crate::io;

/// Score summaries: recall of probes from the replaced middle, hallucinated identifiers,
/// compression and time, per file and in total. Aging is off unless
/// `--age-observations` is given (an elision epoch writes no summary to score).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Conversation files (any format `compact` reads; with `--instructions` also a
    /// results file listing runs as `{"traj": [...]}`, tau-bench's, each run scored).
    #[arg(required_unless_present = "chat_sessions")]
    pub files: Vec<String>,
    /// Print the scores as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Replay each file as an agent loop at `--budget` (a pass whenever one is due, before
    /// each model request) and score what survives across passes: files and commands of
    /// the first epoch still named, or retrievable by handle, at the end (see
    /// `eval_loop`). Aging keeps the engine's default here.
    #[arg(long, conflicts_with = "instructions")]
    pub agent_loop: bool,
    /// Instruction survival: plant rules, a constraint later corrected, a fact, the task's
    /// state, a preference and a `<system-reminder>` block in each conversation, compact
    /// it over `--passes` passes, and score what survives after the first and the last
    /// pass, by type, and whether every result fits its budget (see `eval_instructions`).
    /// Aging keeps the engine's default here.
    #[arg(long)]
    pub instructions: bool,
    /// With `--instructions`: also score this many generated chat sessions (seeds 0 to
    /// N-1, 100 turns each).
    #[arg(long, value_name = "N", requires = "instructions", default_value_t = 0)]
    pub chat_sessions: u64,
    /// With `--instructions`: the budgets to score, comma-separated: `P%` (P percent of
    /// each planted conversation, at least 256 tokens), a token count, or `default`
    /// (`--budget`) [default: default].
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "instructions",
          value_parser = super::eval_instructions::parse_budget)]
    pub budgets: Vec<super::eval_instructions::BudgetSpec>,
    /// With `--instructions`: passes per conversation (the first over three fifths of
    /// it, each next one over its result and the next share of the rest).
    #[arg(long, value_name = "N", requires = "instructions", default_value_t = 5,
          value_parser = clap::value_parser!(u16).range(1..=100))]
    pub passes: u16,
    /// The compaction options (the same as `compact`).
    #[command(flatten)]
    pub opts: CompactOpts,
}

/// The score of one file.
#[derive(Clone, Debug, Serialize)]
pub struct FileScore {
    /// The file.
    pub file: String,
    /// What the pass did: `summary`, `ledger`, `trim`, `aged`, `noop`.
    pub outcome: String,
    /// Probes drawn.
    pub probes: usize,
    /// Probes found in the summary.
    pub found: usize,
    /// Per kind: (found, drawn).
    pub by_kind: Vec<(ProbeKind, usize, usize)>,
    /// Path, command and error probes that fit the ledger's cap (drawn from the newest
    /// messages whose history the ledger keeps whole at its cap, see [`fit_start`]).
    pub fit: usize,
    /// Of those, found in the summary.
    pub fit_found: usize,
    /// Probes found in the summary or in a message a handle it names expands to (with
    /// `--expand`; without, the summary names no handle and this equals `found`), a
    /// `#first..#last` range it names included.
    pub retrievable: usize,
    /// Of those, by the handles of single lines alone (no range).
    pub retrievable_by_line: usize,
    /// Identifiers in the summary absent from the conversation and not flagged.
    pub hallucinations: usize,
    /// Those identifiers (for inspection).
    pub hallucinated: Vec<String>,
    /// `[unverified]` flags in the summary.
    pub flagged: usize,
    /// Tokens before and after the pass.
    pub tokens_before: usize,
    /// Tokens after the pass.
    pub tokens_after: usize,
    /// Seconds the pass took.
    pub seconds: f64,
    /// The probes not found (for inspection).
    pub missed: Vec<Probe>,
}

/// Runs the command.
pub fn run(mut args: Args) -> Result<(), CliError> {
    // The eval scores summaries: with aging on (the engine's default), a pass over a
    // real run under its trigger is usually an elision epoch with no summary at all, and
    // the score would measure nothing. Aging is off here unless asked for.
    if args.agent_loop {
        return run_loop(&args);
    }
    if args.instructions {
        return run_instructions(&args);
    }
    args.opts.age_observations.get_or_insert(false);
    let (compactor, _counter) = args.opts.compactor(false)?;
    let name = compactor
        .summarizer()
        .map_or("none".to_owned(), |s| s.name().to_owned());
    // The ledger's cap in chars, when the ledger is on.
    let ledger_cap = match args.opts.ledger_max_tokens {
        Some(0) => None,
        max => Some(chars_for_tokens(max.unwrap_or(LedgerPolicy::default().max_tokens))),
    };
    let mut scores = Vec::new();
    for file in &args.files {
        let document = io::read_document(file, args.opts.format())?;
        let messages = document.messages();
        let started = Instant::now();
        let (result, interrupted) = args.opts.run_pass(&compactor, messages)?;
        if let Some(signal) = interrupted {
            return Err(crate::cmd::compact::interrupted_error(signal, "the evaluation stopped"));
        }
        let seconds = started.elapsed().as_secs_f64();
        let middle: Vec<usize> = if result.cut_index >= 0 {
            (0..=result.cut_index as usize)
                .filter(|&i| messages.get(i).is_some_and(|m| !m.is_sticky()))
                .collect()
        } else {
            Vec::new()
        };
        let probes = draw(messages, &middle);
        let fits: Vec<bool> = match ledger_cap {
            Some(cap) if !middle.is_empty() => {
                let (artifacts, rereads) = fit_start(messages, &middle, cap, args.opts.expand);
                let from = |k: usize| middle[k..].first().copied();
                probes
                    .iter()
                    .map(|p| {
                        let artifact = match p.kind {
                            ProbeKind::Path => true,
                            ProbeKind::Command => changes_something(&p.text),
                            _ => false,
                        };
                        let first = if artifact { from(artifacts) } else { from(rereads) };
                        GOAL_KINDS.contains(&p.kind) && first.is_some_and(|f| p.message >= f)
                    })
                    .collect()
            }
            _ => vec![false; probes.len()],
        };
        let body = result
            .summary
            .strip_prefix(SUMMARY_HEADER)
            .unwrap_or(&result.summary)
            .to_owned();
        let source = source_text(messages);
        let missed: Vec<Probe> = probes.iter().filter(|p| !body.contains(&p.text)).cloned().collect();
        let fit = fits.iter().filter(|f| **f).count();
        let fit_found = probes
            .iter()
            .zip(&fits)
            .filter(|(p, f)| **f && body.contains(&p.text))
            .count();
        let hallucinated = ungrounded_identifiers(&body, &source);
        let by_kind = ProbeKind::ALL
            .iter()
            .map(|&k| {
                let drawn = probes.iter().filter(|p| p.kind == k).count();
                let lost = missed.iter().filter(|p| p.kind == k).count();
                (k, drawn - lost, drawn)
            })
            .collect();
        let ledger = result.attempts.iter().any(|a| {
            a.kind == llm_compactor::compactor::AttemptKind::Ledger
                && a.outcome == llm_compactor::compactor::AttemptOutcome::Accepted
        });
        let outcome = if result.is_noop() {
            "noop"
        } else if result.is_elision_only() {
            "aged"
        } else if result.fallback {
            "trim"
        } else if ledger {
            "ledger"
        } else {
            "summary"
        };
        scores.push(FileScore {
            file: file.clone(),
            outcome: outcome.to_owned(),
            probes: probes.len(),
            found: probes.len() - missed.len(),
            by_kind,
            fit,
            fit_found,
            retrievable: super::eval_retrieve::retrievable(&probes, &body, messages, true),
            retrievable_by_line: super::eval_retrieve::retrievable(&probes, &body, messages, false),
            hallucinations: hallucinated.len(),
            hallucinated,
            flagged: body.matches(UNVERIFIED).count(),
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            seconds,
            missed,
        });
        eprintln!("compactor eval: {file}: {outcome} in {seconds:.2} s");
    }
    let text = if args.json {
        serde_json::to_string_pretty(&json!({"summarizer": name, "files": scores, "total": total(&scores)}))
            .map_err(CliError::failed)?
    } else {
        table(&name, &scores)
    };
    io::write_output(None, &text)
}

/// `--agent-loop`: the cross-pass scores.
fn run_loop(args: &Args) -> Result<(), CliError> {
    let (compactor, counter) = args.opts.compactor(false)?;
    let mut scores = Vec::new();
    for file in &args.files {
        let document = io::read_document(file, args.opts.format())?;
        let score = super::eval_loop::score(file, document.messages(), &compactor, counter.clone())?;
        eprintln!("compactor eval: {file}: {} passes", score.compactions);
        scores.push(score);
    }
    let text = if args.json {
        serde_json::to_string_pretty(&json!({"files": scores, "total": super::eval_loop::total(&scores)}))
            .map_err(CliError::failed)?
    } else {
        super::eval_loop::table(&scores)
    };
    io::write_output(None, &text)
}

/// `--instructions`: instruction survival and budget compliance.
fn run_instructions(args: &Args) -> Result<(), CliError> {
    use super::eval_instructions::{self as instructions, BudgetSpec, Setup};
    let summarizer = args.opts.summarizer.build_with_progress(false)?;
    let (compactor, counter) = args.opts.compactor_with(summarizer.clone())?;
    let name = compactor
        .summarizer()
        .map_or("none".to_owned(), |s| s.name().to_owned());
    let conversations = instructions::conversations(&args.files, args.opts.format(), args.chat_sessions)?;
    let budgets = if args.budgets.is_empty() {
        vec![BudgetSpec::Default]
    } else {
        args.budgets.clone()
    };
    let setup = Setup {
        opts: &args.opts,
        summarizer,
        counter,
        passes: usize::from(args.passes),
    };
    let text = instructions::run(&setup, &name, &conversations, &budgets, args.json)?;
    io::write_output(None, &text)
}

/// The probe kinds of the ledger's goal ("100% of path/command/error probes that fit
/// its cap").
const GOAL_KINDS: [ProbeKind; 3] = [ProbeKind::Path, ProbeKind::Command, ProbeKind::Error];

/// The positions in `middle` from which on the ledger's history fits `cap` chars whole,
/// per importance tier (see `llm_compactor::plan::ledger::ImportanceTier`): first the
/// smallest `k` such that the *artifact* facts (files touched, commands that changed
/// something) the ledger of the whole middle dates at or after `middle[k]` render
/// without a cut, with all of the state it always carries (the last request, the open
/// errors, earlier requests, identifiers) and none of the re-readable facts; then, when
/// every artifact fits, the same for the *re-readable* facts (read-only commands,
/// resolved errors, files only listed) beside every artifact. A size question only:
/// whether the facts *can* fit the cap in the order the renderer keeps them, not which
/// ones it chose; a probe of those messages that the summary lacks is a fact the ledger
/// failed to extract, date or keep. `middle.len()` when not even the newest message's
/// facts fit. With `handles` (`--expand`) the lines are measured with their handles.
pub fn fit_start(messages: &[llm_compactor::Message], middle: &[usize], cap: usize, handles: bool) -> (usize, usize) {
    let rules = LedgerRules {
        handles,
        ..LedgerRules::default()
    };
    let full = extract(messages, middle, &rules);
    let listed = |f: &llm_compactor::plan::ledger::FileFact| f.operations.iter().all(|op| op == "listed");
    // Bisect the smallest k for which `fits(k)`, monotone in k.
    let bisect = |fits: &dyn Fn(usize) -> bool| {
        let (mut lo, mut hi) = (0, middle.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    let artifacts = |k: usize| {
        let Some(&since) = middle.get(k) else { return true };
        let mut ledger = full.clone();
        ledger.files.retain(|f| !listed(f) && f.last_seen >= since);
        ledger
            .commands
            .retain(|c| changes_something(&c.command) && c.last_seen >= since);
        ledger.errors.retain(|e| e.open);
        history_fits(&ledger, cap)
    };
    let artifact_start = bisect(&artifacts);
    if artifact_start > 0 {
        return (artifact_start, middle.len());
    }
    let rereads = |k: usize| {
        let Some(&since) = middle.get(k) else { return true };
        let mut ledger = full.clone();
        ledger.files.retain(|f| !listed(f) || f.last_seen >= since);
        ledger
            .commands
            .retain(|c| changes_something(&c.command) || c.last_seen >= since);
        ledger.errors.retain(|e| e.open || e.last_seen >= since);
        history_fits(&ledger, cap)
    };
    (0, bisect(&rereads))
}

fn pct(found: usize, drawn: usize) -> String {
    if drawn == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}%", 100.0 * found as f64 / drawn as f64)
    }
}

fn total(scores: &[FileScore]) -> serde_json::Value {
    let probes: usize = scores.iter().map(|s| s.probes).sum();
    let found: usize = scores.iter().map(|s| s.found).sum();
    let retrievable: usize = scores.iter().map(|s| s.retrievable).sum();
    let mut by_kind = serde_json::Map::new();
    for (k, kind) in ProbeKind::ALL.iter().enumerate() {
        let f: usize = scores.iter().map(|s| s.by_kind[k].1).sum();
        let d: usize = scores.iter().map(|s| s.by_kind[k].2).sum();
        by_kind.insert(kind.name().to_owned(), json!({"found": f, "drawn": d}));
    }
    let fit: usize = scores.iter().map(|s| s.fit).sum();
    let fit_found: usize = scores.iter().map(|s| s.fit_found).sum();
    let before: usize = scores.iter().map(|s| s.tokens_before).sum();
    let after: usize = scores.iter().map(|s| s.tokens_after).sum();
    let seconds: f64 = scores.iter().map(|s| s.seconds).sum();
    json!({
        "files": scores.len(),
        "probes": probes,
        "found": found,
        "recall": if probes == 0 { 0.0 } else { found as f64 / probes as f64 },
        "retrievable": retrievable,
        "retrievable_recall": if probes == 0 { 0.0 } else { retrievable as f64 / probes as f64 },
        "retrievable_by_line": scores.iter().map(|s| s.retrievable_by_line).sum::<usize>(),
        "by_kind": by_kind,
        "fit_probes": fit,
        "fit_found": fit_found,
        "fit_recall": if fit == 0 { serde_json::Value::Null } else { json!(fit_found as f64 / fit as f64) },
        "hallucinations": scores.iter().map(|s| s.hallucinations).sum::<usize>(),
        "flagged": scores.iter().map(|s| s.flagged).sum::<usize>(),
        "tokens_before": before,
        "tokens_after": after,
        "ratio": if after == 0 { 0.0 } else { before as f64 / after as f64 },
        "seconds_total": seconds,
        "seconds_mean": if scores.is_empty() { 0.0 } else { seconds / scores.len() as f64 },
    })
}

fn table(name: &str, scores: &[FileScore]) -> String {
    let mut out = format!(
        "summarizer: {name}\n{:<48} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>9} {:>5} {:>7} {:>8}\n",
        "file",
        "outcome",
        "recall",
        "retr",
        "path",
        "cmd",
        "error",
        "request",
        "ident",
        "fit",
        "hall",
        "ratio",
        "seconds"
    );
    let row = |file: &str,
               outcome: &str,
               found: usize,
               retrievable: usize,
               probes: usize,
               kinds: &[(usize, usize)],
               hall: usize,
               ratio: f64,
               secs: f64| {
        let mut file = file.to_owned();
        if file.chars().count() > 48 {
            file = format!(
                "…{}",
                file.chars()
                    .rev()
                    .take(47)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<String>()
            );
        }
        format!(
            "{file:<48} {outcome:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>9} {hall:>5} {ratio:>7.1} {secs:>8.2}\n",
            pct(found, probes),
            pct(retrievable, probes),
            pct(kinds[0].0, kinds[0].1),
            pct(kinds[1].0, kinds[1].1),
            pct(kinds[2].0, kinds[2].1),
            pct(kinds[3].0, kinds[3].1),
            pct(kinds[4].0, kinds[4].1),
            format!("{}/{}", pct(kinds[5].0, kinds[5].1), kinds[5].1),
        )
    };
    for s in scores {
        let mut kinds: Vec<(usize, usize)> = s.by_kind.iter().map(|(_, f, d)| (*f, *d)).collect();
        kinds.push((s.fit_found, s.fit));
        let ratio = s.tokens_before as f64 / s.tokens_after.max(1) as f64;
        out.push_str(&row(
            &s.file,
            &s.outcome,
            s.found,
            s.retrievable,
            s.probes,
            &kinds,
            s.hallucinations,
            ratio,
            s.seconds,
        ));
    }
    let t = total(scores);
    let mut kinds: Vec<(usize, usize)> = ProbeKind::ALL
        .iter()
        .map(|k| {
            let v = &t["by_kind"][k.name()];
            (
                v["found"].as_u64().unwrap_or(0) as usize,
                v["drawn"].as_u64().unwrap_or(0) as usize,
            )
        })
        .collect();
    kinds.push((
        t["fit_found"].as_u64().unwrap_or(0) as usize,
        t["fit_probes"].as_u64().unwrap_or(0) as usize,
    ));
    out.push_str(&row(
        &format!("TOTAL ({} files)", scores.len()),
        "",
        t["found"].as_u64().unwrap_or(0) as usize,
        t["retrievable"].as_u64().unwrap_or(0) as usize,
        t["probes"].as_u64().unwrap_or(0) as usize,
        &kinds,
        t["hallucinations"].as_u64().unwrap_or(0) as usize,
        t["ratio"].as_f64().unwrap_or(0.0),
        t["seconds_mean"].as_f64().unwrap_or(0.0),
    ));
    out.push_str(
        "(retr: probes in the summary or in a message a handle it names expands to, see --expand; \
         fit: recall of the path/command/error probes that fit the ledger's cap, and how many fit; \
         ratio: tokens before / after; seconds: per file, the TOTAL row the mean)\n",
    );
    out
}
