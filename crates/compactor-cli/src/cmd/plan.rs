//! `compactor plan`: what a pass would do, without doing it (no request, no change).

use llm_compactor::Compactor;
use llm_compactor::compactor::{NeedReason, PlanReport};

use super::compact_opts::CompactOpts;
use crate::error::CliError;
use crate::io;

/// Show what a compaction pass would do: tokens, trigger, target, the cut, the recent
/// window, what aging would stub and what a hard trim would cost.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The conversation file, or `-` for stdin.
    pub input: String,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// The compaction options.
    #[command(flatten)]
    pub opts: CompactOpts,
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let config = args.opts.config()?;
    let counter = args.opts.counter()?;
    // Validate the summarizer options too, although nothing is called.
    let _ = args.opts.summarizer.build()?;
    let document = io::read_document(&args.input, args.opts.format())?;
    let compactor = Compactor::new(config, counter);
    let report = compactor.plan(document.messages(), &args.opts.options());
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(CliError::failed)?
    } else {
        human(&report)
    };
    io::write_output(None, text.trim_end())
}

fn human(r: &PlanReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("messages:          {}\n", r.messages));
    out.push_str(&format!("tokens:            {} ({})\n", r.tokens, r.counter));
    out.push_str(&format!("budget:            {}\n", r.budget));
    out.push_str(&format!("trigger:           {}\n", r.trigger));
    out.push_str(&format!("target:            {}\n", r.target));
    let why = match r.reason {
        NeedReason::OverTrigger => format!("yes: {} tokens > trigger {}", r.tokens, r.trigger),
        NeedReason::ReclaimablePool => format!("yes: {} reclaimable chars (an aging epoch)", r.reclaimable_pool),
        NeedReason::NotNeeded => format!("no: {} tokens <= trigger {}", r.tokens, r.trigger),
        NeedReason::EpochDoesNotPay => format!(
            "no: {} reclaimable chars, but the epoch does not pay for its cache write (it would not act)",
            r.reclaimable_pool
        ),
        // A reason a newer library adds.
        other => format!("{other:?}"),
    };
    out.push_str(&format!("needs compaction:  {why}\n"));
    if let Some(c) = &r.epoch_receipt {
        out.push_str(&format!(
            "epoch receipt:     keeps {} cached, rewrites {}, {} -> {} tokens (sheds {}); net billed cost over {} rounds ({}) {:+.0} units ({})\n",
            c.cached_prefix_kept,
            c.tokens_rewritten,
            c.tokens_before,
            c.tokens_after,
            c.tokens_shed,
            c.rounds,
            c.pricing,
            c.net_cost,
            if c.pays() { "pays" } else { "does not pay" }
        ));
    }
    out.push_str(&format!("cut index:         {}\n", r.cut_index));
    out.push_str(&format!(
        "recent window:     {} messages (from index {})\n",
        r.recent_messages, r.recent_start
    ));
    out.push_str(&format!("middle:            {} messages\n", r.middle_messages));
    out.push_str(&format!("sticky:            {} messages\n", r.sticky_messages));
    if r.aging {
        out.push_str(&format!(
            "eligible elisions: {} (reclaimable pool {} chars)\n",
            r.eligible.len(),
            r.reclaimable_pool
        ));
        for e in &r.eligible {
            let reason = match e.reason {
                llm_compactor::plan::EligibleReason::Aged => "aged",
                llm_compactor::plan::EligibleReason::Duplicate => "duplicate",
                _ => "other",
            };
            out.push_str(&format!(
                "  #{:<6} {:>8} chars  {:<10} {}\n",
                e.index,
                e.chars,
                reason,
                e.tool.as_deref().unwrap_or("-")
            ));
        }
    }
    match &r.trim {
        Some(t) => out.push_str(&format!(
            "hard trim would:   drop {} messages (through index {}), {} tokens after\n",
            t.dropped, t.cut_index, t.tokens_after
        )),
        None => out.push_str("hard trim would:   do nothing (no middle)\n"),
    }
    out
}
