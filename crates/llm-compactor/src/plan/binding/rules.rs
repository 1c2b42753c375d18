//! Who binds what: [`Provider`], [`BindingRules`] and the facts of one request
//! ([`BindingContext`]).
//!
//! The rules are data, not code paths, so that the one check in
//! [`super::invalidated`] serves every provider and a provider that binds nothing
//! costs nothing (`BindingRules::none()` makes every answer empty). Where the docs say
//! a rule holds only for some models, [`BindingRules::for_model`] decides from the model
//! id, and an id it does not know is treated as binding (later models enforce the
//! rules for every account; being wrong that way costs re-thinking, being wrong the
//! other way costs a rejected request).

use serde::{Deserialize, Serialize};

/// The provider a conversation is sent to, as far as signed state is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Provider {
    /// Anthropic Messages: `thinking` / `redacted_thinking` blocks bound to their prefix
    /// (preserved thinking), `compaction` blocks written by the API.
    Anthropic,
    /// OpenAI Responses: `reasoning` items with `encrypted_content` and `compaction`
    /// items are sealed; reasoning after a prefix change is dropped by the API.
    OpenAiResponses,
    /// A provider that binds nothing (OpenAI chat completions, local models, ...).
    None,
}

/// What the provider does with a block that fails its check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The request is refused (a 400): the block must not be sent.
    Rejected,
    /// The provider drops the block and answers (the model re-thinks): sending it
    /// costs nothing but its upload.
    Dropped,
}

/// The binding rules of one provider and model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BindingRules {
    /// The provider.
    pub provider: Provider,
    /// Signed blocks are valid only while everything before them is unchanged
    /// (Anthropic preserved thinking; OpenAI reasoning on newer frontier models).
    pub prefix_bound: bool,
    /// What the provider does with a block whose prefix changed.
    pub on_prefix_mismatch: Outcome,
    /// With thinking on, the last assistant turn of an in-progress tool loop must start
    /// with a (valid) thinking block (Anthropic).
    pub tool_loop_needs_thinking: bool,
    /// Blocks are bound to the account that produced them (Anthropic Sonnet 5.5 and
    /// Haiku 5.5; OpenAI's encrypted content to the key, organization and model).
    pub account_bound: bool,
    /// A summary the provider wrote itself (an Anthropic `compaction` block, an OpenAI
    /// `compaction` item) does not count as a change of the prefix of what follows it.
    pub provider_compaction_keeps_later: bool,
}

impl BindingRules {
    /// A provider that binds nothing: every check passes.
    pub const fn none() -> Self {
        BindingRules {
            provider: Provider::None,
            prefix_bound: false,
            on_prefix_mismatch: Outcome::Dropped,
            tool_loop_needs_thinking: false,
            account_bound: false,
            provider_compaction_keeps_later: false,
        }
    }

    /// Anthropic with preserved thinking, the prefix check enforced as a 400 (the
    /// default for accounts created on or after 2026-08-31 and for later models).
    pub const fn anthropic() -> Self {
        BindingRules {
            provider: Provider::Anthropic,
            prefix_bound: true,
            on_prefix_mismatch: Outcome::Rejected,
            tool_loop_needs_thinking: true,
            account_bound: false,
            provider_compaction_keeps_later: true,
        }
    }

    /// OpenAI Responses: sealed items, reasoning after a prefix change dropped by the
    /// API, encrypted content bound to the key, organization and model.
    pub const fn openai_responses() -> Self {
        BindingRules {
            provider: Provider::OpenAiResponses,
            prefix_bound: true,
            on_prefix_mismatch: Outcome::Dropped,
            tool_loop_needs_thinking: false,
            account_bound: true,
            provider_compaction_keeps_later: true,
        }
    }

    /// The rules of `provider` for the model `model` (its API id, e.g.
    /// `claude-sonnet-5-5`).
    ///
    /// Anthropic models from before preserved thinking (the Claude 3 and 4 families and
    /// the 5.0 models) are not prefix-checked and need no tool-loop thinking from us
    /// (the rule for the client is unchanged, but nothing we do breaks it: we never
    /// remove a valid block); Sonnet 5.5 and Haiku 5.5 bind to the account too.
    ///
    /// ```
    /// use llm_compactor::plan::{BindingRules, Provider};
    /// assert!(BindingRules::for_model(Provider::Anthropic, "claude-opus-5-5").prefix_bound);
    /// assert!(BindingRules::for_model(Provider::Anthropic, "claude-haiku-5-5").account_bound);
    /// assert!(!BindingRules::for_model(Provider::Anthropic, "claude-sonnet-4-6").prefix_bound);
    /// assert!(!BindingRules::for_model(Provider::None, "gpt-4o").prefix_bound);
    /// ```
    pub fn for_model(provider: Provider, model: &str) -> Self {
        match provider {
            Provider::None => BindingRules::none(),
            Provider::OpenAiResponses => BindingRules::openai_responses(),
            Provider::Anthropic if anthropic_before_preserved_thinking(model) => BindingRules {
                prefix_bound: false,
                tool_loop_needs_thinking: false,
                ..BindingRules::anthropic()
            },
            Provider::Anthropic => BindingRules {
                account_bound: model.contains("sonnet-5-5") || model.contains("haiku-5-5"),
                ..BindingRules::anthropic()
            },
        }
    }

    /// The same rules with the prefix check answered by dropping the block instead of a
    /// 400: Anthropic's `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`
    /// (beta `thinking-binding-controls-2026-08-01`) is on the request.
    pub const fn with_drop_block(mut self) -> Self {
        self.on_prefix_mismatch = Outcome::Dropped;
        self
    }

    /// True when nothing is bound: no block can be invalid (OpenAI's sealed items are
    /// always bound to their bytes).
    pub const fn binds_nothing(&self) -> bool {
        !self.prefix_bound && !self.account_bound && !matches!(self.provider, Provider::OpenAiResponses)
    }
}

/// Claude models that predate preserved thinking (no prefix check).
fn anthropic_before_preserved_thinking(model: &str) -> bool {
    let model = model.trim_start_matches("anthropic/").trim_start_matches("anthropic.");
    if model.starts_with("claude-3") || model.contains("-4-") || model.ends_with("-4") {
        return true;
    }
    // The 5.0 models: `claude-opus-5`, `claude-sonnet-5`, optionally dated.
    ["claude-opus-5", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5"]
        .iter()
        .any(|base| model == *base || model.strip_prefix(base).is_some_and(|rest| rest.starts_with("-20")))
}

/// What a request changes around the messages, and what it asks of the provider: the
/// facts [`super::invalidated`] and [`super::plan_binding_repair`] cannot read from the
/// messages themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BindingContext {
    /// The provider's rules.
    pub rules: BindingRules,
    /// The request's `tools` differ from those every signed block was produced under.
    pub tools_changed: bool,
    /// A system prompt outside the messages (the request's top-level `system` or
    /// `instructions`, when the caller does not carry it as a message) changed.
    pub system_changed: bool,
    /// The request goes out under another account (Anthropic) or key / organization
    /// (OpenAI) than the one that produced the blocks.
    pub account_changed: bool,
    /// The request goes to another model than the one that produced the blocks.
    pub model_changed: bool,
    /// Thinking is on for this request (`thinking.type` is `enabled` or `adaptive`).
    pub thinking_enabled: bool,
}

impl BindingContext {
    /// A request that changes nothing around its messages, thinking on.
    pub const fn new(rules: BindingRules) -> Self {
        BindingContext {
            rules,
            tools_changed: false,
            system_changed: false,
            account_changed: false,
            model_changed: false,
            thinking_enabled: true,
        }
    }

    /// The same context with `tools_changed` set.
    pub const fn tools_changed(mut self, changed: bool) -> Self {
        self.tools_changed = changed;
        self
    }

    /// The same context with `system_changed` set.
    pub const fn system_changed(mut self, changed: bool) -> Self {
        self.system_changed = changed;
        self
    }

    /// The same context with `account_changed` set.
    pub const fn account_changed(mut self, changed: bool) -> Self {
        self.account_changed = changed;
        self
    }

    /// The same context with `model_changed` set.
    pub const fn model_changed(mut self, changed: bool) -> Self {
        self.model_changed = changed;
        self
    }

    /// The same context with `thinking_enabled` set.
    pub const fn thinking_enabled(mut self, enabled: bool) -> Self {
        self.thinking_enabled = enabled;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_decide_the_anthropic_rules() {
        for bound in [
            "claude-fable-5-1",
            "claude-mythos-5-2",
            "claude-opus-5-5",
            "claude-next-7",
        ] {
            assert!(
                BindingRules::for_model(Provider::Anthropic, bound).prefix_bound,
                "{bound}"
            );
        }
        for old in [
            "claude-3-5-sonnet-20241022",
            "claude-opus-4-8",
            "claude-sonnet-5",
            "claude-opus-5-20260601",
        ] {
            assert!(!BindingRules::for_model(Provider::Anthropic, old).prefix_bound, "{old}");
        }
        assert!(!BindingRules::for_model(Provider::Anthropic, "claude-opus-5-5").account_bound);
        assert!(BindingRules::for_model(Provider::Anthropic, "claude-sonnet-5-5").account_bound);
        assert_eq!(
            BindingRules::anthropic().with_drop_block().on_prefix_mismatch,
            Outcome::Dropped
        );
        assert!(BindingRules::none().binds_nothing());
    }
}
