//! `compactor report`: one self-contained HTML page of what compaction did to a session
//! (see the `compactor-report` crate); `compactor proxy report` uses the same options for
//! a session held in the proxy's store.

use std::path::{Path, PathBuf};

use compactor_report::{ReportOptions, SessionReport, render};
use llm_compactor::CompactorConfig;
use llm_compactor::count::counter_by_name;
use llm_compactor::plan::Pricing;

use crate::cmd::compact_opts::CounterChoice;
use crate::error::CliError;

/// Write an HTML report of a session transcript.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  compactor report run.jsonl -o report.html\n  compactor report run.jsonl --budget 128000 -o report.html"
)]
pub struct Args {
    /// The session transcript (JSONL, as `compactor session` and the proxy write it).
    session: PathBuf,
    /// The HTML file to write (stdout when absent).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    options: ReportArgs,
}

/// How a report is counted and drawn.
#[derive(clap::Args, Clone, Debug)]
pub struct ReportArgs {
    /// The context budget the session ran under: draws the budget, trigger and target lines.
    #[arg(long, value_name = "TOKENS")]
    budget: Option<usize>,
    /// The trigger as a share of the budget (default: the engine's, 0.7).
    #[arg(long, value_name = "RATIO", requires = "budget")]
    trigger_ratio: Option<f64>,
    /// The target as a share of the budget (default: the engine's, 0.4).
    #[arg(long, value_name = "RATIO", requires = "budget")]
    target_ratio: Option<f64>,
    /// The counter of the tokens per request.
    #[arg(long, value_enum, default_value_t = CounterChoice::O200k)]
    counter: CounterChoice,
    /// The pricing preset of the cost estimate: anthropic, openai-gpt5 or openai-4o.
    #[arg(long, value_name = "PRESET", default_value = "anthropic")]
    pricing: String,
    /// The page title [default: the file name or the session key].
    #[arg(long)]
    title: Option<String>,
}

impl ReportArgs {
    /// The report options these flags describe, titled `default_title` unless `--title`.
    ///
    /// # Errors
    /// A usage error for a bad ratio, counter or pricing preset.
    pub fn options(&self, default_title: &str) -> Result<ReportOptions, CliError> {
        let counter_name = match self.counter {
            CounterChoice::Heuristic => "heuristic",
            CounterChoice::O200k => "o200k",
            CounterChoice::Cl100k => "cl100k",
        };
        let counter = counter_by_name(counter_name).map_err(|e| CliError::Usage(format!("--counter: {e}")))?;
        let pricing: Pricing = self
            .pricing
            .parse()
            .map_err(|e| CliError::Usage(format!("--pricing: {e}")))?;
        let mut options = ReportOptions::new(counter)
            .pricing(pricing)
            .title(self.title.clone().unwrap_or_else(|| default_title.to_owned()));
        if let Some(budget) = self.budget {
            let mut builder = CompactorConfig::builder(budget);
            if let Some(ratio) = self.trigger_ratio {
                builder = builder.trigger_ratio(ratio);
            }
            if let Some(ratio) = self.target_ratio {
                builder = builder.target_ratio(ratio);
            }
            let config = builder.build().map_err(|e| CliError::Usage(e.to_string()))?;
            options = options.limits_of(&config);
        }
        Ok(options)
    }
}

/// Runs `compactor report`.
///
/// # Errors
/// A usage error for bad flags; a failure naming the file when it cannot be read or is not
/// a transcript, or when the page cannot be written.
pub fn run(args: Args) -> Result<(), CliError> {
    let title = args.session.file_name().map_or_else(
        || args.session.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let options = args.options.options(&title)?;
    let report = compactor_report::report_of_file(&args.session, &options).map_err(|e| match e {
        compactor_report::ReportError::Replay { line, problem } => {
            CliError::Failed(format!("{}: line {line}: {problem}", args.session.display()))
        }
        other => CliError::Failed(other.to_string()),
    })?;
    write_report(&report, args.output.as_deref())
}

/// Renders `report` to `output` (atomically) or stdout, and says where it went.
///
/// # Errors
/// The page cannot be written.
pub fn write_report(report: &SessionReport, output: Option<&Path>) -> Result<(), CliError> {
    let html = render(report);
    crate::io::write_output(output, html.trim_end())?;
    if let Some(path) = output {
        let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        crate::out::stderr_line(&format!(
            "compactor: report of {} and {} written to {} (open it in a browser)",
            count(report.totals.requests, "request", "requests"),
            count(report.passes.len(), "pass", "passes"),
            path.display()
        ))?;
    }
    Ok(())
}
