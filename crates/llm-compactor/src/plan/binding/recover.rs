//! [`recover_from_error`]: a provider's refusal of signed state, read as the blocks to
//! drop before the one retry.
//!
//! The errors, as documented:
//!
//! - Anthropic, a failed prefix check (platform docs, "Fix a thinking block bound to a
//!   different conversation"): ``messages.1.content.0: Invalid `signature` in `thinking`
//!   block. The block is bound to a different conversation. Remove the block, or set
//!   `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".`` (a 400
//!   `invalid_request_error`; the path names the first block that fails; the message may
//!   go on to name what changed). Removing only the named block is not enough: every
//!   later block's prefix includes it, so they go too. The same path form without the
//!   "different conversation" sentence is a block whose signature does not verify at
//!   all (edited, another account): the same remedy. Gateways have been seen to relabel
//!   it (a 429 in front of the same text), so any 4xx with this text counts.
//! - Anthropic, a tool loop whose last assistant turn does not start with thinking:
//!   ``messages.N.content.0.type: Expected `thinking` or `redacted_thinking`, but found
//!   ...``. Nothing can be dropped to fix it; it is reported so that the caller does not
//!   retry.
//! - OpenAI, `invalid_encrypted_content` ("The encrypted content gAAA...5bw= could not
//!   be verified."), after a change of key, organization or model: every sealed item was
//!   sealed under the old one, so every one goes (the error's head and tail name one,
//!   which the recovery reports).
//!
//! Anything else is `None`: not ours to fix.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::invalid::{Invalid, InvalidReason};
use super::rules::Outcome;
use super::signed::{BlockRef, SignedKind, signed_blocks, turn_item};
use crate::format::anthropic::{assistant_block_parts, wire_turns};
use crate::message::{Message, Role};

/// What the provider's error said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RecoveryCause {
    /// Anthropic refused the signature of the block at `messages.{wire_message}.content.{wire_block}`.
    InvalidSignature {
        /// `N` of the error's path: the index in the request's `messages` array.
        wire_message: usize,
        /// `M` of the error's path: the block's index in that message's content.
        wire_block: usize,
        /// The block in the request's messages, when the path names a signed block.
        block: Option<BlockRef>,
        /// The error says the block is bound to a different conversation (a failed
        /// prefix check) rather than that its signature does not verify.
        different_conversation: bool,
    },
    /// Anthropic: the last assistant turn of a tool loop does not start with thinking.
    ToolLoopNeedsThinking {
        /// `N` of the error's path.
        wire_message: usize,
    },
    /// OpenAI: encrypted content that does not decrypt.
    InvalidEncryptedContent {
        /// The item the error's head and tail name, when one matches.
        named: Option<BlockRef>,
    },
}

/// A provider's refusal, read: why, and which blocks to drop (feed them to
/// [`super::plan_binding_repair`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recovery {
    /// What the error said.
    pub cause: RecoveryCause,
    /// The blocks to drop before the retry (none: a retry cannot help).
    pub invalid: Vec<Invalid>,
}

impl Recovery {
    /// True when dropping [`Recovery::invalid`] can make the request pass.
    pub fn retryable(&self) -> bool {
        !self.invalid.is_empty()
    }
}

/// Reads a provider's error response (`status`, `body`) to a request whose messages are
/// `request`: `None` unless it is one of the refusals of signed state (module docs).
///
/// For Anthropic, `request` must be the messages as the request was written (read by
/// the Anthropic codec, or the very messages it wrote): the error counts wire messages
/// and content blocks, and the codec's grouping maps them back.
///
/// ```
/// use llm_compactor::message::{Content, Message, Part};
/// use llm_compactor::plan::{BlockRef, recover_from_error};
/// use serde_json::json;
///
/// let thinking = |sig: &str| {
///     let mut turn = Message::assistant("");
///     turn.content = Content::Parts(vec![
///         Part::from_value(json!({"type": "thinking", "thinking": "t", "signature": sig})).unwrap(),
///         Part::text("ok"),
///     ]);
///     turn
/// };
/// let request = vec![
///     Message::system("rules"), // the top-level `system`: not in `messages`
///     Message::user("a"), thinking("s1"), Message::user("b"), thinking("s2"), Message::user("c"),
/// ];
/// let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."}}"#;
/// let recovery = recover_from_error(400, body, &request).expect("ours");
/// let blocks: Vec<BlockRef> = recovery.invalid.iter().map(|i| i.block).collect();
/// assert_eq!(blocks, [BlockRef::new(2, 0), BlockRef::new(4, 0)]);
/// assert_eq!(recover_from_error(400, r#"{"error":{"message":"max_tokens too large"}}"#, &request), None);
/// ```
pub fn recover_from_error(status: u16, body: &str, request: &[Message]) -> Option<Recovery> {
    if !(400..500).contains(&status) {
        return None;
    }
    let (message, code) = error_text(body);
    if code.as_deref() == Some("invalid_encrypted_content")
        || (message.contains("encrypted content") && message.contains("could not be verified"))
    {
        return Some(encrypted_content(&message, request));
    }
    let (wire_message, wire_block, rest) = parse_path(&message)?;
    if let Some(found) = rest.strip_prefix(".type:") {
        if found.contains("`thinking`") || found.contains("thinking") {
            return Some(Recovery {
                cause: RecoveryCause::ToolLoopNeedsThinking { wire_message },
                invalid: Vec::new(),
            });
        }
        return None;
    }
    let text = rest.strip_prefix(':')?;
    if !(text.contains("signature") || text.contains("different conversation")) {
        return None;
    }
    let start = locate(request, wire_message, wire_block)?;
    let blocks: Vec<_> = signed_blocks(request)
        .into_iter()
        .filter(|b| b.kind.is_thinking() && b.item.is_none() && b.at >= start)
        .collect();
    let named = blocks.first().filter(|b| b.at == start).map(|b| b.at);
    let reason = InvalidReason::RejectedByProvider {
        named: named.or(Some(start)),
    };
    Some(Recovery {
        cause: RecoveryCause::InvalidSignature {
            wire_message,
            wire_block,
            block: named,
            different_conversation: text.contains("different conversation"),
        },
        invalid: blocks
            .iter()
            .map(|b| Invalid::new(b.at, b.kind, reason, Outcome::Rejected))
            .collect(),
    })
}

/// The error's message and code, from either provider's error body (or the raw text).
fn error_text(body: &str) -> (String, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (body.to_owned(), None);
    };
    let error = value.get("error").unwrap_or(&value);
    let field = |key: &str| error.get(key).and_then(Value::as_str).map(str::to_owned);
    (field("message").unwrap_or_default(), field("code"))
}

/// `messages.N.content.M` at the start of an error message, and what follows it.
fn parse_path(message: &str) -> Option<(usize, usize, &str)> {
    let rest = message.trim_start().strip_prefix("messages.")?;
    let (n, rest) = leading_number(rest)?;
    let rest = rest.strip_prefix(".content.")?;
    let (m, rest) = leading_number(rest)?;
    Some((n, m, rest))
}

fn leading_number(text: &str) -> Option<(usize, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

/// The request's (message, part) that the wire path names: the assistant message
/// written as wire message `n`, and the part its block `m` comes from (the first part
/// after it, for a block that is a call written at the end).
fn locate(request: &[Message], n: usize, m: usize) -> Option<BlockRef> {
    let turns = wire_turns(request);
    let index = (0..request.len()).find(|&i| turns[i] == Some(n) && request[i].role == Role::Assistant)?;
    let blocks = assistant_block_parts(&request[index]);
    let part = blocks.get(m).copied().flatten().unwrap_or(0);
    Some(BlockRef::new(index, part))
}

/// Every sealed item goes; the one whose encrypted content the error quotes is named.
fn encrypted_content(message: &str, request: &[Message]) -> Recovery {
    let quoted = message
        .split_once("encrypted content ")
        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or(""))
        .and_then(|token| token.split_once("..."));
    let sealed: Vec<_> = signed_blocks(request)
        .into_iter()
        .filter(|b| b.item.is_some())
        .collect();
    let named = quoted.and_then(|(head, tail)| {
        sealed
            .iter()
            .find(|b| {
                let content = b
                    .item
                    .and_then(|item| turn_item(&request[b.at.message], item))
                    .and_then(|item| item.get("encrypted_content"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                !content.is_empty() && content.starts_with(head) && content.ends_with(tail)
            })
            .map(|b| b.at)
    });
    let reason = InvalidReason::RejectedByProvider { named };
    Recovery {
        cause: RecoveryCause::InvalidEncryptedContent { named },
        invalid: sealed
            .iter()
            .filter(|b| matches!(b.kind, SignedKind::Reasoning | SignedKind::Compaction))
            .map(|b| Invalid::new(b.at, b.kind, reason, Outcome::Rejected))
            .collect(),
    }
}
