//! The records of `compactor eval --instructions`: one pass checked against its budget,
//! one conversation's score at one budget. Their own file so that the run
//! (`eval_instructions`) and its report (`eval_instructions_report`) both read them
//! without importing each other.

use serde::Serialize;

use super::eval_plant::Kind;

/// One pass, checked against its budget.
#[derive(Clone, Debug, Serialize)]
pub struct PassCheck {
    /// Messages of the conversation new to this pass (0: it ran over the last result
    /// alone, as a caller compacting again would).
    pub new_messages: usize,
    /// Tokens before the pass.
    pub tokens_before: usize,
    /// Tokens after it.
    pub tokens_after: usize,
    /// The pass said `exhausted`.
    pub exhausted: bool,
    /// What no pass may go below: the sticky prefix, a notice and the last turn.
    pub floor: usize,
    /// When exhausted, the pass's own numbers of why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exhaustion: Option<llm_compactor::compactor::Exhaustion>,
}

impl PassCheck {
    /// The result is within the budget.
    pub fn within(&self, budget: usize) -> bool {
        self.tokens_after <= budget
    }

    /// Exhausted or over the budget while the floor fits it: a smaller summary could
    /// have fit.
    pub fn needless(&self, budget: usize) -> bool {
        (self.exhausted || !self.within(budget)) && self.floor <= budget
    }
}

/// The score of one conversation at one budget.
#[derive(Clone, Debug, Serialize)]
pub struct RunScore {
    /// The conversation.
    pub conversation: String,
    /// The budget's label (`20%`, `default`, ...).
    pub label: String,
    /// The budget in tokens.
    pub budget: usize,
    /// Tokens of the planted conversation.
    pub tokens: usize,
    /// Every pass, in order.
    pub passes: Vec<PassCheck>,
    /// Per planted instruction: its type, survived after the first pass, after the last.
    pub survival: Vec<(Kind, bool, bool)>,
    /// The replaced value presented as current: after the first pass, after the last.
    pub superseded_as_current: (bool, bool),
    /// Planted instructions a summary lists twice or more: after the first pass, the last.
    pub duplicates: (usize, usize),
    /// What was lost after the last pass (`kind: text`, for inspection).
    pub lost: Vec<String>,
    /// What a summary listed twice or more after the last pass (`kind: text`).
    pub duplicated: Vec<String>,
}
