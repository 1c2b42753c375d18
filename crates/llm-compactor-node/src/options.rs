//! The options object of `compact` / `countTokens`: the CLI's flags in JavaScript's
//! spelling (camelCase), the same defaults and meaning. Unknown keys are refused, naming
//! them, so that a misspelt option never silently does nothing.

use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::{TokenCounter, counter_by_name};
use llm_compactor::format::caller::{WireFormat, parse_format};
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::{Compactor, CompactorConfig};
use serde::Deserialize;
use serde_json::Value;

/// The context window unless `budget` says otherwise (the CLI's and Python's default).
pub const DEFAULT_BUDGET: usize = 128_000;

/// Every option, `None` meaning "the library's default".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Options {
    pub budget: Option<usize>,
    pub trigger_ratio: Option<f64>,
    pub target_ratio: Option<f64>,
    pub keep_recent: Option<usize>,
    pub tool_result_cap: Option<usize>,
    pub age_observations: Option<bool>,
    pub max_recent_tokens: Option<usize>,
    pub counter: Option<String>,
    pub ledger_max_tokens: Option<usize>,
    /// `ledger` (the default: the model-free summary) or `none` (the hard trim).
    pub summarizer: Option<String>,
    /// `auto` (the default), `openai`, `anthropic`, `responses` or `mini-swe-agent`.
    pub format: Option<String>,
    /// Anthropic's `system` beside a bare list of turns.
    pub system: Option<Value>,
    /// The pass's target in tokens (the compactor's own target when absent).
    pub target: Option<usize>,
    /// Summaries and stubs name the handles of what they replace (default false).
    pub expand: Option<bool>,
}

impl Options {
    /// Reads the caller's options object (absent: every default).
    pub fn read(value: Option<Value>) -> Result<Options, String> {
        match value {
            None | Some(Value::Null) => Ok(Options::default()),
            Some(value) => serde_json::from_value(value).map_err(|e| format!("invalid option: {e}")),
        }
    }

    /// The format to read messages in (`None`: detect).
    pub fn format(&self) -> Result<Option<WireFormat>, String> {
        parse_format(self.format.as_deref().unwrap_or("auto"))
    }

    /// The named counter (`o200k` unless named).
    pub fn counter(&self) -> Result<Arc<dyn TokenCounter>, String> {
        counter_by_name(self.counter.as_deref().unwrap_or("o200k")).map_err(|e| e.to_string())
    }

    /// The compactor these options describe.
    pub fn compactor(&self) -> Result<Compactor, String> {
        let mut builder = CompactorConfig::builder(self.budget.unwrap_or(DEFAULT_BUDGET));
        if let Some(v) = self.trigger_ratio {
            builder = builder.trigger_ratio(v);
        }
        if let Some(v) = self.target_ratio {
            builder = builder.target_ratio(v);
        }
        if let Some(v) = self.keep_recent {
            builder = builder.keep_recent(v);
        }
        if let Some(v) = self.tool_result_cap {
            builder = builder.tool_result_cap(v);
        }
        if let Some(v) = self.age_observations {
            builder = builder.age_observations(v);
        }
        if let Some(v) = self.max_recent_tokens {
            builder = builder.max_recent_tokens(v);
        }
        let mut config = builder.build().map_err(|e| e.to_string())?;
        config.expand = self.expand.unwrap_or(false);
        let mut compactor = Compactor::new(config, self.counter()?);
        if self.ledger_max_tokens != Some(0) {
            let mut policy = LedgerPolicy::default();
            if let Some(max) = self.ledger_max_tokens {
                policy.max_tokens = max;
            }
            compactor = compactor.with_ledger(policy);
        }
        match self.summarizer.as_deref().unwrap_or("ledger") {
            "ledger" => Ok(compactor.with_summarizer(Arc::new(LedgerSummarizer))),
            "none" => Ok(compactor),
            other => Err(format!("unknown summarizer `{other}` (expected ledger or none)")),
        }
    }
}
