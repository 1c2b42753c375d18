//! Signed thinking through a rewrite: when the proxy's forwarded request carries thinking
//! blocks that a pass moved onto a new prefix, how that is decided, and when the
//! provider's own tool-result clearing stands in for our aging stubs so that it does not
//! happen. The rules are the library's (`llm_compactor::plan::binding`); this file only
//! asks them.

use llm_compactor::message::{Content, Message, Part};
use llm_compactor::plan::binding::{
    BindingContext, BindingRules, BlockRef, Provider, ServerClearing, SignedKind, clear_on_server, invalidated,
    signed_blocks,
};
use serde_json::Value;

use crate::api::Request;

/// The thinking blocks of `after` (a pass's output) that were valid in `before` (what the
/// upstream saw) and are not any more — the kept turns' thinking after a summary or a
/// stub before them — with those of `stale` (blocks an earlier pass left stale) that
/// `after` still holds: a block bound to a prefix no longer sent stays invalid until it is
/// gone, whatever later passes do. Where the provider clears old results for us
/// (`clearing`: the client's messages and the size aging never stubs under), both sides
/// are read as they go out, with those stubs restored. Blocks are named by their
/// signature.
pub(super) fn stale_after(
    before: &[Message],
    after: &[Message],
    stale: &[String],
    clearing: Option<(&[Message], usize)>,
) -> Vec<String> {
    let context = BindingContext::new(BindingRules::anthropic());
    let sent = |messages: &[Message]| match clearing {
        Some((client, small)) => clear_on_server(messages, client, small).map(|c| c.messages),
        None => None,
    };
    let (before_sent, after_sent) = (sent(before), sent(after));
    let after_sent = after_sent.as_deref().unwrap_or(after);
    let mut names: Vec<String> = invalidated(before_sent.as_deref().unwrap_or(before), after_sent, &context)
        .iter()
        .filter(|invalid| invalid.kind.is_thinking())
        .filter_map(|invalid| name(after_sent, invalid.block))
        .collect();
    let held = thinking_names(after);
    names.extend(stale.iter().filter(|s| held.contains(s)).cloned());
    names.sort();
    names.dedup();
    names
}

/// The names (signatures; a redacted block's data) of every signed thinking block of
/// `messages`.
pub(super) fn thinking_names(messages: &[Message]) -> Vec<String> {
    signed_blocks(messages)
        .iter()
        .filter(|block| matches!(block.kind, SignedKind::Thinking | SignedKind::RedactedThinking))
        .filter_map(|block| name(messages, block.at))
        .collect()
}

fn name(messages: &[Message], at: BlockRef) -> Option<String> {
    let Content::Parts(parts) = &messages.get(at.message)?.content else {
        return None;
    };
    let value = match parts.get(at.part)? {
        Part::Thinking { extras, .. } => extras.get("signature"),
        Part::Other(value) => value.get("data"),
        _ => None,
    };
    // A block without a signature is named by where it stands (it is checked by none).
    Some(match value {
        Some(Value::String(text)) => text.clone(),
        _ => format!("{}.{}", at.message, at.part),
    })
}

/// True when a request of `model` that carries stale thinking must ask the provider to
/// drop it: thinking is on, the model checks the prefix, and the client did not ask
/// already.
pub(super) fn needs_drop_block(thinking: bool, client_asked: bool, model: &str) -> bool {
    thinking && !client_asked && BindingRules::for_model(Provider::Anthropic, model).prefix_bound
}

/// True when the provider clears old tool results in place of our stubs for `request`
/// (`on`: the proxy's `server_clearing`, on by default): a Messages request with thinking
/// on, on a model that binds thinking to its prefix, whose own `context_management`
/// leaves room for the edit.
pub(super) fn clears_on_server(on: bool, request: &Request) -> bool {
    on && request.may_clear_on_server && BindingRules::for_model(Provider::Anthropic, &request.model).prefix_bound
}

/// The clearing that stands for the oldest stubs of `effective` (the conversation about
/// to go out), when [`clears_on_server`].
pub(super) fn server_clearing(
    on: bool,
    request: &Request,
    client: &[Message],
    effective: &[Message],
    small: usize,
) -> Option<ServerClearing> {
    clears_on_server(on, request)
        .then(|| clear_on_server(effective, client, small))
        .flatten()
}
