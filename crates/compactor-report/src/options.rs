//! [`ReportOptions`]: how a report counts, prices and caps what it shows.
//!
//! The caps are what keep a 10,000-message session's page usable: each quoted text is
//! cut to `max_text_chars`, each pass lists at most `max_listed` stubs and replaced
//! messages (with a count of the rest), and a shape view has at most `max_segments`
//! runs. Everything that is cut says how much was.

use std::sync::Arc;

use llm_compactor::CompactorConfig;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::plan::Pricing;

use crate::model::Limits;

/// How a report is built.
#[derive(Clone)]
pub struct ReportOptions {
    pub(crate) title: String,
    pub(crate) counter: Arc<dyn TokenCounter>,
    pub(crate) limits: Limits,
    pub(crate) pricing: Pricing,
    pub(crate) max_text_chars: usize,
    pub(crate) max_listed: usize,
    pub(crate) max_segments: usize,
}

impl std::fmt::Debug for ReportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportOptions")
            .field("title", &self.title)
            .field("counter", &self.counter.name())
            .field("limits", &self.limits)
            .field("pricing", &self.pricing.name)
            .field("max_text_chars", &self.max_text_chars)
            .field("max_listed", &self.max_listed)
            .field("max_segments", &self.max_segments)
            .finish()
    }
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions::new(Arc::new(HeuristicCounter))
    }
}

/// Chars of one quoted text shown by default.
pub const DEFAULT_MAX_TEXT_CHARS: usize = 2_000;
/// Stubs (and replaced messages) listed per pass by default.
pub const DEFAULT_MAX_LISTED: usize = 100;
/// Runs of a shape view by default.
pub const DEFAULT_MAX_SEGMENTS: usize = 120;

impl ReportOptions {
    /// Counting with `counter`, no limit lines, Anthropic's cache pricing, default caps.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        ReportOptions {
            title: "session".to_owned(),
            counter,
            limits: Limits::default(),
            pricing: Pricing::ANTHROPIC,
            max_text_chars: DEFAULT_MAX_TEXT_CHARS,
            max_listed: DEFAULT_MAX_LISTED,
            max_segments: DEFAULT_MAX_SEGMENTS,
        }
    }

    /// The page's title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// The chart's budget, trigger and target lines.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The lines of a compactor configuration (its budget, trigger and target).
    pub fn limits_of(self, config: &CompactorConfig) -> Self {
        self.limits(Limits {
            budget: Some(config.context_budget),
            trigger: Some(config.trigger()),
            target: Some(config.target()),
        })
    }

    /// The pricing preset of the cost estimate.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = pricing;
        self
    }

    /// Chars of one quoted text (at least 80).
    pub fn max_text_chars(mut self, chars: usize) -> Self {
        self.max_text_chars = chars.max(80);
        self
    }

    /// Stubs and replaced messages listed per pass (at least 1).
    pub fn max_listed(mut self, n: usize) -> Self {
        self.max_listed = n.max(1);
        self
    }

    /// Runs of a shape view (at least 8).
    pub fn max_segments(mut self, n: usize) -> Self {
        self.max_segments = n.max(8);
        self
    }
}
