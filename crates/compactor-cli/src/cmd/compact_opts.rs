//! The options `compact` and `plan` share: the conversation's format, the compactor's
//! numbers, the counter, the focus and the summarizer.

use std::sync::Arc;

use llm_compactor::count::TokenCounter;
use llm_compactor::format::Format;
use llm_compactor::options::OptionsOverlay;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, Message, Policy};

use super::door_opts::DoorOpts;
use super::interrupt::{Interrupt, Watch};
use super::overlay_refused::refused;
use super::pin_opts::PinOpts;
use super::ranges;
use super::summarizer::SummarizerOpts;

/// The summary budget used with the local model unless `--summary-max-tokens` says
/// otherwise: a 135M model asked for 2048 tokens writes 2048 (and then 4096 on the
/// truncation retry) at ~20 tokens/s on a laptop core.
const LOCAL_SUMMARY_MAX_TOKENS: u32 = 512;

use crate::error::CliError;

/// The wire format of the input.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatChoice {
    /// Detect it.
    Auto,
    /// OpenAI chat completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// A mini-swe-agent trajectory.
    MiniSweAgent,
}

/// The token counter.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterChoice {
    /// `8 + ceil(chars / 4)` per message.
    Heuristic,
    /// OpenAI o200k_base.
    O200k,
    /// OpenAI cl100k_base.
    Cl100k,
}

impl CounterChoice {
    fn name(self) -> &'static str {
        match self {
            CounterChoice::Heuristic => "heuristic",
            CounterChoice::O200k => "o200k",
            CounterChoice::Cl100k => "cl100k",
        }
    }
}

/// `--policy`'s parser: `default` or `economy`.
pub fn parse_policy(text: &str) -> Result<Policy, String> {
    text.parse().map_err(|e: llm_compactor::UnknownPolicy| e.to_string())
}

/// Options shared by `compact` and `plan`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompactOpts {
    /// The input's wire format.
    #[arg(long, value_enum, default_value_t = FormatChoice::Auto)]
    pub format: FormatChoice,
    /// The context window in tokens [default: 128000].
    #[arg(long, value_name = "BUDGET", value_parser = ranges::tokens)]
    pub budget: Option<usize>,
    /// The cost policy: `default` (keeps context below the trigger unless an epoch is
    /// expected to pay) or `economy` (prices tokens first: trigger 0.5, target 0.2, old
    /// observations masked below the trigger in gated, batched epochs). The flags below
    /// override its numbers.
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    pub policy: Option<Policy>,
    /// Compaction is needed above budget x this (default 0.7; economy 0.5).
    #[arg(long, value_parser = ranges::ratio)]
    pub trigger_ratio: Option<f64>,
    /// A pass aims at budget x this (default 0.4; economy 0.2).
    #[arg(long, value_parser = ranges::ratio)]
    pub target_ratio: Option<f64>,
    /// Aim at this many tokens instead (also judges acceptance and exhaustion).
    #[arg(long, value_name = "N", value_parser = ranges::tokens)]
    pub target: Option<usize>,
    /// Messages kept verbatim at the end (default 6).
    #[arg(long, value_name = "N", value_parser = ranges::messages)]
    pub keep_recent: Option<usize>,
    /// Cap in chars on tool results and call arguments in the summarizer's input (default 2000).
    #[arg(long, value_name = "N", value_parser = ranges::chars)]
    pub tool_result_cap: Option<usize>,
    /// Stub fat old tool results before summarizing, in cache-friendly epochs (default: the
    /// library's, `CompactorConfig::builder`); `--age-observations=false` turns it off.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub age_observations: Option<bool>,
    /// A result must be longer than this (chars) to be stubbed (default 2048).
    #[arg(long, value_name = "N", value_parser = ranges::chars)]
    pub age_min_chars: Option<usize>,
    /// The aging epoch in chars, absolute (default: 0.096 of the budget, in chars at 4 a
    /// token: 49,152 at 128k).
    #[arg(long, value_name = "N", value_parser = ranges::chars)]
    pub age_reclaim_min: Option<usize>,
    /// Token cap of the recent window (default: half the target): it shrinks to fit,
    /// and the newest turn's biggest tool results are cut head-and-tail when it alone is over.
    #[arg(long, value_name = "TOKENS")]
    pub max_recent_tokens: Option<usize>,
    /// Summarizer attempts in total (default 3).
    #[arg(long, value_name = "N", value_parser = ranges::attempts)]
    pub max_attempts: Option<u32>,
    /// Output budget of one summary request, in tokens (default 2048; 512 with the local
    /// model, whose small default model otherwise rambles to whatever budget it gets).
    /// Given (or with the local model) it is a cap: a truncated summary is retried at the
    /// same budget asking for less; otherwise the retry doubles it once.
    #[arg(long, value_name = "N", value_parser = ranges::tokens_u32)]
    pub summary_max_tokens: Option<u32>,
    /// The token counter.
    #[arg(long, value_enum, default_value_t = CounterChoice::O200k)]
    pub counter: CounterChoice,
    /// The most tokens the artifact ledger adds to a summary (default 2048; the handles
    /// `--expand` adds are not counted); 0 turns the ledger and the grounding gate off (the
    /// summary is exactly the model's).
    #[arg(long, value_name = "N")]
    pub ledger_max_tokens: Option<usize>,
    /// Expansion on: each fact of the summary's ledger names the handle of the message it
    /// comes from (`[#0123456789]`), which `compactor session expand` (or the
    /// `compactor_expand` tool) turns back into the original message, byte for byte.
    #[arg(long)]
    pub expand: bool,
    /// Extra instruction for the summarizer (like `/compact <focus>`).
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// The summarizer.
    #[command(flatten)]
    pub summarizer: SummarizerOpts,
    /// Budgets at the door.
    #[command(flatten)]
    pub door: DoorOpts,
    /// Configured pins.
    #[command(flatten)]
    pub pins: PinOpts,
}

impl CompactOpts {
    /// The format to read with (`None`: detect).
    pub fn format(&self) -> Option<Format> {
        match self.format {
            FormatChoice::Auto => None,
            FormatChoice::Openai => Some(Format::OpenAi),
            FormatChoice::Anthropic => Some(Format::Anthropic),
            FormatChoice::MiniSweAgent => Some(Format::MiniSweAgent),
        }
    }

    /// The compactor these options describe (configuration, counter, summarizer), and its
    /// counter. `progress` shows the local model's progress bars (stderr, terminals only).
    ///
    /// # Errors
    /// A usage error for an invalid setting; a runtime error when the summarizer cannot be
    /// built.
    pub fn compactor(&self, progress: bool) -> Result<(Compactor, Arc<dyn TokenCounter>), CliError> {
        self.compactor_with(self.summarizer.build_with_progress(progress)?)
    }

    /// [`CompactOpts::compactor`] with `summarizer` (built by the caller: the proxy's
    /// `auto` is a server's, see `SummarizerOpts::build_for_server`).
    ///
    /// # Errors
    /// A usage error for an invalid setting.
    pub fn compactor_with(
        &self,
        summarizer: Option<Arc<dyn llm_compactor::Summarizer>>,
    ) -> Result<(Compactor, Arc<dyn TokenCounter>), CliError> {
        let overlay = self.overlay();
        let mut config = self.config()?;
        let counter = self.counter()?;
        let local = summarizer.as_ref().is_some_and(|s| s.name().starts_with("local"));
        if local && self.summary_max_tokens.is_none() {
            // The local model's budget is a cap too: a truncated summary is retried at it
            // with the instruction to write less, never with a doubled budget.
            config.summary_max_tokens = LOCAL_SUMMARY_MAX_TOKENS;
            config.expand_truncated = false;
        }
        Ok((overlay.compactor_of(config, counter.clone(), summarizer), counter))
    }

    /// Runs one pass of `compactor` over `messages` with these options, on a
    /// current-thread runtime. Ctrl-C or SIGTERM cancels the pass: waits and summarizer
    /// calls stop and the pass ends in the hard trim, so the user still gets a result;
    /// the signal comes back with it (the command exits with 128 + its number after
    /// writing the result: see [`super::interrupt`]).
    ///
    /// # Errors
    /// A usage error for invalid input; a runtime error when no runtime can be built.
    pub fn run_pass(
        &self,
        compactor: &Compactor,
        messages: &[Message],
    ) -> Result<(CompactionResult, Option<Interrupt>), CliError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(CliError::failed)?;
        let options = self.options();
        let cancel = options.cancel.clone();
        runtime.block_on(async {
            let watch = Watch::start(cancel).map_err(CliError::failed)?;
            let result = compactor.compact(messages, options).await;
            let interrupted = watch.stop();
            let result = result.map_err(|e| CliError::Usage(e.to_string()))?;
            Ok((result, interrupted))
        })
    }

    /// These options as the library's options overlay (the summarizer's are
    /// [`SummarizerOpts`]' own: `auto`, `local` and `upstream` are the CLI's).
    pub fn overlay(&self) -> OptionsOverlay {
        let mut overlay = OptionsOverlay::new();
        overlay.budget = self.budget;
        overlay.policy = self.policy;
        overlay.trigger_ratio = self.trigger_ratio;
        overlay.target_ratio = self.target_ratio;
        overlay.target = self.target;
        overlay.keep_recent = self.keep_recent;
        overlay.tool_result_cap = self.tool_result_cap;
        overlay.age_observations = self.age_observations;
        overlay.age_min_chars = self.age_min_chars;
        overlay.age_reclaim_min = self.age_reclaim_min;
        overlay.max_recent_tokens = self.max_recent_tokens;
        overlay.max_attempts = self.max_attempts;
        overlay.summary_max_tokens = self.summary_max_tokens;
        overlay.expand = Some(self.expand);
        overlay.counter = Some(self.counter.name().to_owned());
        overlay.ledger_max_tokens = self.ledger_max_tokens;
        overlay.focus = self.focus.clone();
        let door = &self.door;
        overlay.door = door.door.or(door.default_on.then_some(true));
        overlay.door_tool_cap = door.door_tool_cap;
        overlay.door_tool_cap_for =
            (!door.door_tool_cap_for.is_empty()).then(|| door.door_tool_cap_for.iter().cloned().collect());
        overlay.door_preview_chars = door.door_preview_chars;
        overlay.door_keep_media = door.door_keep_media;
        overlay.door_max_request_bytes = door.door_max_request_bytes;
        [overlay.pin_patterns, overlay.pin_tools, overlay.pin_ids] = self.pins.lists();
        overlay
    }

    /// The validated compactor configuration.
    ///
    /// # Errors
    /// A usage error naming the invalid setting.
    pub fn config(&self) -> Result<CompactorConfig, CliError> {
        self.overlay().config().map_err(refused)
    }

    /// The counter.
    ///
    /// # Errors
    /// A usage error when the counter is not available in this build.
    pub fn counter(&self) -> Result<Arc<dyn TokenCounter>, CliError> {
        self.overlay().counter().map_err(refused)
    }

    /// The per-pass options (target, focus).
    pub fn options(&self) -> CompactOptions {
        self.overlay().pass_options()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        opts: CompactOpts,
    }

    fn config(args: &[&str]) -> Result<CompactorConfig, String> {
        let cli =
            Cli::try_parse_from(std::iter::once("compactor").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        cli.opts.config().map_err(|e| e.to_string())
    }

    #[test]
    fn policy_selects_the_numbers_and_flags_override_them() {
        let default = config(&["--budget", "100000"]).unwrap();
        assert_eq!(default.policy, Policy::Default);
        assert_eq!((default.trigger(), default.target()), (70_000, 40_000));
        let explicit = config(&["--budget", "100000", "--policy", "default"]).unwrap();
        assert_eq!(explicit, default);
        let economy = config(&["--budget", "100000", "--policy", "economy"]).unwrap();
        assert_eq!(economy.policy, Policy::Economy);
        assert_eq!((economy.trigger(), economy.target()), (50_000, 20_000));
        let tuned = config(&["--budget", "100000", "--policy", "economy", "--trigger-ratio", "0.6"]).unwrap();
        assert_eq!((tuned.trigger(), tuned.target()), (60_000, 20_000));
        let wrong = config(&["--policy", "cheap"]).unwrap_err();
        assert!(wrong.contains("unknown policy \"cheap\""), "{wrong}");
    }
}
