//! Signed thinking through a rewrite: when the proxy's forwarded request carries thinking
//! blocks that a pass moved onto a new prefix, and how that is decided. The rules are the
//! library's (`llm_compactor::plan::binding`); this file only asks them.

use llm_compactor::message::Message;
use llm_compactor::plan::binding::{BindingContext, BindingRules, Provider, SignedKind, invalidated, signed_blocks};

/// True when `after` (a pass's output) holds thinking blocks that were valid in `before`
/// (what the upstream saw) and are not any more: the kept turns' thinking after a summary
/// or a stub before them.
pub(super) fn stale_after(before: &[Message], after: &[Message]) -> bool {
    let context = BindingContext::new(BindingRules::anthropic());
    invalidated(before, after, &context)
        .iter()
        .any(|invalid| invalid.kind.is_thinking())
}

/// True when `messages` hold any signed thinking block.
pub(super) fn holds_signed(messages: &[Message]) -> bool {
    signed_blocks(messages)
        .iter()
        .any(|block| matches!(block.kind, SignedKind::Thinking | SignedKind::RedactedThinking))
}

/// True when a request of `model` that carries stale thinking must ask the provider to
/// drop it: thinking is on, the model checks the prefix, and the client did not ask
/// already.
pub(super) fn needs_drop_block(thinking: bool, client_asked: bool, model: &str) -> bool {
    thinking && !client_asked && BindingRules::for_model(Provider::Anthropic, model).prefix_bound
}
