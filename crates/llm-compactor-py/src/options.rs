//! The keyword options of `compact` / `Compactor(...)`: the CLI's flags, same names
//! (underscored), same defaults, same meaning (`crates/compactor-cli/src/cmd/compact_opts.rs`).
//!
//! Python collects the keywords into one JSON object; this module reads it (unknown keys
//! refused, naming them) and builds the library's [`Compactor`] the way the CLI does.

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::backend::http::{HttpBackend, HttpConfigError, Protocol};
use llm_compactor::backend::{ExecSummarizer, LedgerSummarizer};
use llm_compactor::count::{TokenCounter, counter_by_name};
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::{Compactor, CompactorConfig, Summarizer};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::errors;
use crate::summarizer::CallableSummarizer;

/// The context window unless `budget` says otherwise (the CLI's default).
pub const DEFAULT_BUDGET: usize = 128_000;

/// Every option, `None` meaning "the library's default".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    pub budget: Option<usize>,
    pub trigger_ratio: Option<f64>,
    pub target_ratio: Option<f64>,
    pub keep_recent: Option<usize>,
    pub tool_result_cap: Option<usize>,
    pub age_observations: Option<bool>,
    pub age_min_chars: Option<usize>,
    pub age_reclaim_min: Option<usize>,
    pub max_recent_tokens: Option<usize>,
    pub max_attempts: Option<u32>,
    pub summary_max_tokens: Option<u32>,
    pub counter: Option<String>,
    pub calibrated: Option<bool>,
    pub ledger_max_tokens: Option<usize>,
    /// The summarizer's name when it is not a Python callable (`ledger` by default).
    pub summarizer: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub summarizer_context: Option<usize>,
    pub summarizer_cmd: Option<String>,
    pub summarizer_timeout: Option<f64>,
    /// Budgets at the door (the CLI's `--door*` flags; off unless on or a number is given).
    pub door: Option<bool>,
    pub door_tool_cap: Option<usize>,
    pub door_tool_cap_for: Option<std::collections::BTreeMap<String, usize>>,
    pub door_preview_chars: Option<usize>,
    pub door_keep_media: Option<usize>,
    pub door_max_request_bytes: Option<usize>,
}

impl Options {
    /// Reads the options object Python sent.
    pub fn from_json(json: &str) -> PyResult<Options> {
        serde_json::from_str(json).map_err(|e| errors::setting("options", format!("invalid option: {e}")))
    }

    /// The validated configuration.
    pub fn config(&self) -> PyResult<CompactorConfig> {
        let mut builder = CompactorConfig::builder(self.budget.unwrap_or(DEFAULT_BUDGET));
        if let Some(v) = self.age_observations {
            builder = builder.age_observations(v);
        }
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
        if let Some(v) = self.age_min_chars {
            builder = builder.age_min_chars(v);
        }
        if let Some(v) = self.age_reclaim_min {
            builder = builder.age_reclaim_min(v);
        }
        if let Some(v) = self.max_recent_tokens {
            builder = builder.max_recent_tokens(v);
        }
        if let Some(v) = self.max_attempts {
            builder = builder.max_attempts(v);
        }
        if let Some(v) = self.summary_max_tokens {
            builder = builder.summary_max_tokens(v);
            // An explicit summary budget is a cap (the CLI's `--summary-max-tokens`).
            builder = builder.expand_truncated(false);
        }
        if let Some(rules) = self.door_rules() {
            builder = builder.door(rules);
        }
        builder.build().map_err(errors::config)
    }

    /// The door's rules (as the CLI's `DoorOpts`), or `None` when it is off.
    fn door_rules(&self) -> Option<llm_compactor::plan::DoorRules> {
        let tuned = self.door_tool_cap.is_some()
            || self.door_tool_cap_for.as_ref().is_some_and(|caps| !caps.is_empty())
            || self.door_preview_chars.is_some()
            || self.door_keep_media.is_some()
            || self.door_max_request_bytes.is_some();
        if !self.door.unwrap_or(tuned) {
            return None;
        }
        let mut rules = llm_compactor::plan::DoorRules::default();
        if let Some(v) = self.door_tool_cap {
            rules = rules.with_default_cap(v);
        }
        for (name, tokens) in self.door_tool_cap_for.iter().flatten() {
            rules = rules.with_tool_cap(name.clone(), *tokens);
        }
        if let Some(v) = self.door_preview_chars {
            rules = rules.with_preview_chars(v);
        }
        if let Some(v) = self.door_keep_media {
            rules = rules.with_keep_media(v);
        }
        if let Some(v) = self.door_max_request_bytes {
            rules = rules.with_max_request_bytes(v);
        }
        Some(rules)
    }

    /// The named counter (`o200k` unless named).
    pub fn base_counter(&self) -> PyResult<Arc<dyn TokenCounter>> {
        counter_named(self.counter.as_deref().unwrap_or("o200k"))
    }

    /// The compactor these options describe, counting with `counter`, with `callable`
    /// as its summarizer when the caller passed a Python callable.
    pub fn compactor(&self, counter: Arc<dyn TokenCounter>, callable: Option<Py<PyAny>>) -> PyResult<Compactor> {
        let config = self.config()?;
        let summarizer = match callable {
            Some(callable) => {
                self.check_http_unused(false)?;
                Some(Arc::new(CallableSummarizer::new(callable)) as Arc<dyn Summarizer>)
            }
            None => self.named_summarizer()?,
        };
        let mut compactor = Compactor::new(config, counter);
        match self.ledger_max_tokens {
            Some(0) => {}
            max => {
                let mut policy = LedgerPolicy::default();
                if let Some(max) = max {
                    policy.max_tokens = max;
                }
                compactor = compactor.with_ledger(policy);
            }
        }
        if let Some(summarizer) = summarizer {
            compactor = compactor.with_summarizer(summarizer);
        }
        Ok(compactor)
    }

    fn timeout(&self) -> PyResult<Option<Duration>> {
        match self.summarizer_timeout {
            None => Ok(None),
            Some(secs) if secs.is_finite() && secs > 0.0 => Ok(Some(Duration::from_secs_f64(secs))),
            Some(secs) => Err(errors::setting(
                "summarizer_timeout",
                format!("summarizer_timeout must be positive, got {secs}"),
            )),
        }
    }

    fn check_http_unused(&self, http: bool) -> PyResult<()> {
        let given = self.model.is_some()
            || self.base_url.is_some()
            || self.api_key_env.is_some()
            || self.summarizer_context.is_some();
        if !http && given {
            return Err(errors::setting(
                "summarizer",
                "model, base_url, api_key_env and summarizer_context need summarizer=\"openai\" or \"anthropic\"",
            ));
        }
        Ok(())
    }

    fn named_summarizer(&self) -> PyResult<Option<Arc<dyn Summarizer>>> {
        let name = self.summarizer.as_deref().unwrap_or("ledger");
        let timeout = self.timeout()?;
        let http = matches!(name, "openai" | "anthropic");
        self.check_http_unused(http)?;
        if self.summarizer_cmd.is_some() && name != "exec" {
            return Err(errors::setting(
                "summarizer_cmd",
                "summarizer_cmd needs summarizer=\"exec\"",
            ));
        }
        match name {
            "none" => Ok(None),
            "ledger" => Ok(Some(Arc::new(LedgerSummarizer))),
            "exec" => {
                let command = self
                    .summarizer_cmd
                    .as_deref()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| errors::setting("summarizer_cmd", "summarizer=\"exec\" needs summarizer_cmd"))?;
                let mut exec = ExecSummarizer::new(command);
                if let Some(timeout) = timeout {
                    exec = exec.with_timeout(timeout);
                }
                Ok(Some(Arc::new(exec)))
            }
            "openai" => self.http(Protocol::OpenAi, timeout).map(Some),
            "anthropic" => self.http(Protocol::Anthropic, timeout).map(Some),
            other => Err(errors::setting(
                "summarizer",
                format!("unknown summarizer `{other}` (expected ledger, openai, anthropic, exec, none, or a callable)"),
            )),
        }
    }

    fn http(&self, protocol: Protocol, timeout: Option<Duration>) -> PyResult<Arc<dyn Summarizer>> {
        let model = self
            .model
            .clone()
            .ok_or_else(|| errors::setting("model", format!("summarizer=\"{}\" needs model", protocol.as_str())))?;
        let mut builder = match protocol {
            Protocol::OpenAi => HttpBackend::openai(model),
            Protocol::Anthropic => HttpBackend::anthropic(model),
        };
        if let Some(url) = &self.base_url {
            builder = builder.base_url(url);
        }
        if let Some(env) = &self.api_key_env {
            builder = builder.api_key_env(env);
        }
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        if let Some(room) = self.summarizer_context {
            builder = builder.input_room(room);
        }
        let backend = builder.build().map_err(|error| match error {
            HttpConfigError::MissingApiKey { .. } => errors::setting("api_key_env", error),
            other => errors::setting("summarizer", other),
        })?;
        Ok(Arc::new(backend))
    }
}

/// A counter by name (`heuristic`, `o200k`, `cl100k`).
pub fn counter_named(name: &str) -> PyResult<Arc<dyn TokenCounter>> {
    counter_by_name(name).map_err(|e| errors::setting("counter", e))
}
