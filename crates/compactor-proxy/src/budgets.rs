//! Which compactor a request is compacted with: one budget for every request, or
//! (`--budget-by-model`) the budget of the model the request names.
//!
//! The engine's budget lives in its [`CompactorConfig`]; a request to another model
//! needs the same engine with another budget, so the proxy builds one compactor per
//! distinct window ([`Compactor::reconfigured`]: same counter, summarizer, ledger,
//! prompts and hooks) the first time a model needs it, and reuses it. The table has a few
//! dozen models and a handful of distinct windows, so the cache stays small.
//!
//! A model the table does not know takes the fallback budget (`--budget N`); with no
//! fallback the request is refused with a 400 that names the model and the fix. Passing
//! it through uncompacted was the other choice, and it was rejected: the proxy would then
//! silently stop keeping that agent inside its window, which is the one thing it is run
//! for, while a 400 on the first request tells the operator at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use llm_compactor::Compactor;

use crate::error::ProxyError;
use crate::models::context_window;

/// How requests get their budget.
#[derive(Debug)]
pub struct Budgets {
    base: Arc<Compactor>,
    by_model: Option<ByModel>,
}

#[derive(Debug)]
struct ByModel {
    fallback: Option<usize>,
    built: Mutex<HashMap<usize, Arc<Compactor>>>,
}

impl Budgets {
    /// Every request compacted by `base` (its budget for every model).
    pub fn fixed(base: Arc<Compactor>) -> Self {
        Budgets { base, by_model: None }
    }

    /// Each request's budget from its model's window; `fallback` for unknown models
    /// (`None`: refused).
    pub fn by_model(base: Arc<Compactor>, fallback: Option<usize>) -> Self {
        Budgets {
            base,
            by_model: Some(ByModel {
                fallback,
                built: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The compactor the configuration was built with (its counter calibrates sessions).
    pub fn base(&self) -> &Arc<Compactor> {
        &self.base
    }

    /// The compactor for a request to `model`.
    ///
    /// # Errors
    /// [`ProxyError::BadRequest`] for a model with no known window and no fallback;
    /// [`ProxyError::Config`] when the engine's settings do not hold at that budget.
    pub fn for_model(&self, model: &str) -> Result<Arc<Compactor>, ProxyError> {
        let Some(by_model) = &self.by_model else {
            return Ok(self.base.clone());
        };
        let budget = context_window(model).or(by_model.fallback).ok_or_else(|| {
            ProxyError::BadRequest(format!(
                "no context window is known for model {model:?} (--budget-by-model); \
                 start the proxy with --budget N as the budget of models the table does not list"
            ))
        })?;
        if budget == self.base.config().context_budget {
            return Ok(self.base.clone());
        }
        let mut built = by_model.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(compactor) = built.get(&budget) {
            return Ok(compactor.clone());
        }
        let mut config = self.base.config().clone();
        config.context_budget = budget;
        let compactor = Arc::new(
            self.base
                .reconfigured(config)
                .map_err(|e| ProxyError::Config(format!("budget {budget} for model {model:?}: {e}")))?,
        );
        built.insert(budget, compactor.clone());
        Ok(compactor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_compactor::CompactorConfig;
    use llm_compactor::count::HeuristicCounter;

    fn base(budget: usize) -> Arc<Compactor> {
        Arc::new(Compactor::new(
            CompactorConfig::builder(budget).keep_recent(3).build().unwrap(),
            Arc::new(HeuristicCounter),
        ))
    }

    #[test]
    fn each_model_gets_its_window_and_the_rest_of_the_engine_is_kept() {
        let budgets = Budgets::by_model(base(50_000), Some(50_000));
        let gpt = budgets.for_model("gpt-4o-mini").unwrap();
        assert_eq!(gpt.config().context_budget, 128_000);
        assert_eq!(gpt.config().keep_recent, 3);
        assert!(Arc::ptr_eq(&gpt, &budgets.for_model("gpt-4o").unwrap()), "built once");
        assert_eq!(
            budgets.for_model("claude-opus-4-1").unwrap().config().context_budget,
            200_000
        );
        assert_eq!(
            budgets.for_model("some-local-model").unwrap().config().context_budget,
            50_000
        );
    }

    #[test]
    fn an_unknown_model_without_a_fallback_is_a_clear_400() {
        let budgets = Budgets::by_model(base(128_000), None);
        let error = budgets.for_model("llama-3").unwrap_err();
        assert!(matches!(error, ProxyError::BadRequest(_)));
        let text = error.to_string();
        assert!(text.contains("\"llama-3\"") && text.contains("--budget N"), "{text}");
        assert_eq!(budgets.for_model("gpt-4").unwrap().config().context_budget, 8_192);
    }

    #[test]
    fn a_fixed_budget_ignores_the_model() {
        let budgets = Budgets::fixed(base(1_000));
        assert_eq!(budgets.for_model("gpt-4.1").unwrap().config().context_budget, 1_000);
        assert_eq!(budgets.for_model("unknown").unwrap().config().context_budget, 1_000);
    }
}
