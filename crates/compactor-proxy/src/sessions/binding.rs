//! Signed thinking through a rewrite: when the proxy's forwarded request carries thinking
//! blocks that a pass moved onto a new prefix, how that is decided, and when the
//! provider's own tool-result clearing stands in for our aging stubs so that it does not
//! happen. The rules are the library's (`llm_compactor::plan::binding`); this file only
//! asks them.

use llm_compactor::message::Message;
use llm_compactor::plan::binding::{BindingRules, Provider, ServerClearing, clear_on_server};

use llm_compactor::session::{Record, TYPE_STALE_THINKING, stale_thinking_line};

use crate::api::Request;

/// The thinking blocks a pass's output carries on a prefix they were not produced under
/// (the library's rule, `plan::binding::stale_thinking`).
pub(super) use llm_compactor::plan::binding::{stale_thinking as stale_after, thinking_names};

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

/// The transcript line for the thinking blocks a pass left stale (none when there is
/// none), with the remedy the requests that carry them use.
pub(super) fn stale_line(request: &Request, stale: &[String]) -> Option<Record> {
    if stale.is_empty() {
        return None;
    }
    let remedy = if request.drop_block {
        "drop_block (the client's)"
    } else if needs_drop_block(request.thinking, false, &request.model) {
        "drop_block"
    } else {
        "none: the model does not check"
    };
    Some(Record::Unknown {
        kind: TYPE_STALE_THINKING.to_owned(),
        payload: stale_thinking_line(stale, remedy),
    })
}
