//! Pins the user configures: by pattern, by tool name, by message id (issue 41, item 1).
//!
//! The built-in pins ([`super::split_pinned`]) know the instruction files agent clients
//! inject. A user knows more: their own rules start with `RULE:` or `NEVER`, a memory
//! tool's results (`memory`, `save_note`) hold what the agent decided to remember, one
//! message of the session is the brief. Each of those, summarized with everything else,
//! competes for the ledger's room with the chat; pinned, it is carried in the ledger's
//! highest tier ("Pinned instructions"), verbatim, listed once, pass after pass.
//!
//! - **patterns** (regular expressions, the `regex` crate's syntax: linear time, no
//!   look-around; `(?m)^RULE:` for a line that starts so): a user message whose own
//!   words match any of them is pinned whole (the instruction files the built-in pins
//!   split out of the turn stay pinned on their own, listed once however often sent);
//! - **tools**: the result of a call to a tool of that name (exact match) is pinned
//!   whole, labelled with the tool's name;
//! - **ids**: the message with that id (any role; a session's envelope id, or the `id`
//!   the message carries on the wire) is pinned whole.
//!
//! A pinned message is capped at [`super::LedgerRules::pinned_chars`], as the built-in
//! pins are. Pure: the rules compile to a [`PinMatcher`] that answers for one message.

use regex::RegexSet;
use serde::{Deserialize, Serialize};

use crate::message::{Message, Role};

/// The pins a user configures (all empty by default: only the built-in pins apply).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PinRules {
    /// Regular expressions: a user message whose text matches any is pinned whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Tool names: every result of a call to one of these tools is pinned whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Message ids: these messages are pinned whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

/// A pin pattern that is not a valid regular expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("pin pattern {pattern:?} is not a valid regular expression: {reason}")]
#[non_exhaustive]
pub struct PinRuleError {
    /// The pattern as given.
    pub pattern: String,
    /// What the regex parser said.
    pub reason: String,
}

/// [`PinRules`] compiled, ready to ask about messages.
#[derive(Clone, Debug)]
pub struct PinMatcher {
    patterns: Option<RegexSet>,
    tools: Vec<String>,
    ids: Vec<String>,
}

impl PinRules {
    /// No configured pins.
    pub fn new() -> Self {
        PinRules::default()
    }

    /// These rules with `pattern` added.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Self {
        self.patterns.push(pattern.into());
        self
    }

    /// These rules with the results of tool `name` pinned.
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tools.push(name.into());
        self
    }

    /// These rules with the message `id` pinned.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.ids.push(id.into());
        self
    }

    /// True when no pin is configured.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.tools.is_empty() && self.ids.is_empty()
    }

    /// The rules compiled.
    ///
    /// # Errors
    /// [`PinRuleError`] naming the first pattern that does not parse.
    ///
    /// ```
    /// use llm_compactor::message::Message;
    /// use llm_compactor::plan::ledger::PinRules;
    /// let matcher = PinRules::new().pattern(r"(?im)^rule:").compile().unwrap();
    /// assert_eq!(matcher.pinned(&Message::user("RULE: never push to main"), None).as_deref(),
    ///            Some("RULE: never push to main"));
    /// assert_eq!(matcher.pinned(&Message::user("what time is it?"), None), None);
    /// assert!(PinRules::new().pattern("(unclosed").compile().is_err());
    /// ```
    pub fn compile(&self) -> Result<PinMatcher, PinRuleError> {
        for pattern in &self.patterns {
            if let Err(e) = regex::Regex::new(pattern) {
                return Err(PinRuleError {
                    pattern: pattern.clone(),
                    reason: e.to_string(),
                });
            }
        }
        let patterns = if self.patterns.is_empty() {
            None
        } else {
            Some(RegexSet::new(&self.patterns).map_err(|e| PinRuleError {
                pattern: self.patterns.join(" | "),
                reason: e.to_string(),
            })?)
        };
        Ok(PinMatcher {
            patterns,
            tools: self.tools.clone(),
            ids: self.ids.clone(),
        })
    }
}

impl PinMatcher {
    /// The pinned text of `message` (its text, trimmed; a tool result labelled with its
    /// tool's name), when a rule pins it. `tool_name`: the name of the call a tool
    /// result answers, when known.
    pub fn pinned(&self, message: &Message, tool_name: Option<&str>) -> Option<String> {
        self.pinned_text(message, &message.text(), tool_name)
    }

    /// As [`PinMatcher::pinned`], judging and keeping `text` for the message's text (a
    /// user turn's own words, once the built-in pins are split out of it).
    pub fn pinned_text(&self, message: &Message, text: &str, tool_name: Option<&str>) -> Option<String> {
        // The session's envelope id, or the id the message carried on the wire (a
        // Responses item's, a client's own `id` key).
        let wire_id = message.extras.get("id").and_then(serde_json::Value::as_str);
        let by_id = [message.id.as_deref(), wire_id]
            .into_iter()
            .flatten()
            .any(|id| self.ids.iter().any(|p| p == id));
        let by_tool = message.role == Role::Tool && tool_name.is_some_and(|name| self.tools.iter().any(|t| t == name));
        let by_pattern = message.role == Role::User && self.patterns.as_ref().is_some_and(|set| set.is_match(text));
        if !(by_id || by_tool || by_pattern) {
            return None;
        }
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match tool_name.filter(|_| message.role == Role::Tool) {
            Some(name) => format!("[{name} result] {text}"),
            None => text.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn each_rule_pins_its_own_messages_only() {
        let rules = PinRules::new().pattern("^NEVER").tool("memory").id("brief-1");
        let m = rules.compile().unwrap();
        assert!(m.pinned(&Message::user("NEVER delete backups."), None).is_some());
        assert!(m.pinned(&Message::user("Please never mind."), None).is_none());
        // A pattern pins user messages only: a tool result that matches is not pinned.
        assert!(m.pinned(&Message::tool("c1", "NEVER printed"), Some("bash")).is_none());
        assert_eq!(
            m.pinned(&Message::tool("c2", "user prefers tabs"), Some("memory"))
                .as_deref(),
            Some("[memory result] user prefers tabs")
        );
        let mut brief = Message::assistant("The plan: A, then B.");
        brief.id = Some("brief-1".into());
        assert_eq!(m.pinned(&brief, None).as_deref(), Some("The plan: A, then B."));
        let mut other = Message::assistant("The plan: A, then B.");
        other.id = Some("brief-2".into());
        assert!(m.pinned(&other, None).is_none());
        let call = Message::assistant("").with_tool_calls(vec![ToolCall::new("c3", "memory", "{}")]);
        assert!(m.pinned(&call, None).is_none(), "the call is not its result");
    }

    #[test]
    fn an_empty_message_or_no_rule_pins_nothing() {
        let m = PinRules::new().compile().unwrap();
        assert!(m.pinned(&Message::user("NEVER"), None).is_none());
        let m = PinRules::new().pattern(".*").compile().unwrap();
        assert!(m.pinned(&Message::user("   "), None).is_none());
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = PinRules::new().pattern("ok").pattern("a(").compile().unwrap_err();
        assert_eq!(e.pattern, "a(");
        assert!(e.to_string().contains("\"a(\""), "{e}");
    }

    #[test]
    fn rules_round_trip_through_json_and_default_to_empty() {
        let rules = PinRules::new().pattern("x").tool("memory");
        let json = serde_json::to_string(&rules).unwrap();
        assert_eq!(serde_json::from_str::<PinRules>(&json).unwrap(), rules);
        assert!(serde_json::from_str::<PinRules>("{}").unwrap().is_empty());
    }
}
