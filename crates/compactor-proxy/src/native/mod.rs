//! The providers' own compaction protocols, served for upstreams that lack them.
//!
//! Clients now ask the server to compact: OpenAI's `POST /v1/responses/compact` (the
//! official SDKs' `responses.compact`, the Agents SDK's compaction session, Codex's
//! remote compaction) answers a `response.compaction` object whose output replaces the
//! conversation, with an opaque `compaction` item standing for what was summarized. Only
//! OpenAI (and Azure) answer it; every other model behind the proxy — vLLM, Ollama,
//! llama.cpp, a gateway — returns 404, and the client's compaction fails.
//!
//! So the proxy answers it itself ([`NativeCompaction`]): the request is a round of its
//! session like any `/v1/responses` request, with a pass forced (the same pass, ledger
//! and transcript as every other), and the output is the compacted conversation with the
//! summary message sealed into a `compaction` item ([`seal`]). When that item comes back
//! in a later request's `input`, it is opened into the summary before anything else reads
//! the request ([`resolve`]): the upstream sees an ordinary conversation. An item this
//! proxy did not seal for the presenting client is refused with a 400 naming it.
//!
//! Anthropic's on-demand compaction (a `compaction` parameter on `/v1/messages`, beta
//! `compact-2026-09-04`) is served the same way ([`anthropic_serve`]): its answer is one
//! `compaction` block with the summary as text and the proxy's seal over the turns it
//! stands for ([`anthropic_block`]), opened when a later request sends it back. Threshold
//! compaction (`compact_20260112`), done by the proxy, answers with the same block leading
//! the answer of a round that ran a pass ([`anthropic_threshold`]).
//!
//! Server-side compaction (`context_management` on `/v1/responses`) is served the same
//! way for such upstreams ([`server_side`]): the client's `compact_threshold` triggers a
//! pass, and the answer carries the compaction item as OpenAI's does ([`emit`]); and so
//! is Codex's remote compaction, a `compaction_trigger` input item ([`trigger`]).

mod anthropic_block;
mod anthropic_counters;
mod anthropic_serve;
mod anthropic_threshold;
mod counters;
mod emit;
mod items;
mod resolve;
mod seal;
mod serve;
mod server_side;
mod trigger;

pub(crate) use anthropic_counters::MessagesCounters;
pub(crate) use anthropic_serve::{MessagesCompaction, on_count_tokens, on_messages, serve_messages_compaction};
pub(crate) use anthropic_threshold::{asks_threshold, lead_with, paused_answer, threshold_block};
pub(crate) use counters::NativeCounters;
pub(crate) use resolve::resolve_items;
pub(crate) use seal::{Sealer, owner_of};
pub(crate) use serve::serve_compaction;
pub(crate) use server_side::{ServerSide, with_item};
pub(crate) use trigger::{answer_trigger, has_trigger};

/// Keeps a request in the session a server-side compaction item it carried belongs to
/// (`carried`, from [`resolve_items`]) when nothing but the digest of its first messages
/// identifies it: the compaction changed those messages, and the digest would start a
/// session of its own.
///
/// # Errors
/// The client's 400 when the request names another session itself (a header, a known
/// client's id, a `prompt_cache_key`): an item opens only in the session it was given
/// to, never into another session's conversation.
pub(crate) fn carry_session(identity: &mut crate::identity::Identity, carried: Option<String>) -> Result<(), String> {
    let Some(session) = carried else {
        return Ok(());
    };
    if identity.tier == crate::identity::Tier::Digest {
        identity.key = session;
        identity.source = "compaction item".to_owned();
        return Ok(());
    }
    if identity.key != session {
        return Err(format!(
            "input: a compaction item of another session was sent in session {:?} (from {}): \
             a compaction item opens only in the session it was given to",
            identity.key, identity.source
        ));
    }
    Ok(())
}

/// Who answers `POST /v1/responses/compact` (`--native-compaction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NativeCompaction {
    /// Forward it; when the upstream answers 404, 405 or 501 (it has no such endpoint),
    /// serve it from then on (remembered for the proxy's life). The default.
    #[default]
    Auto,
    /// Always serve it (the upstream is never asked).
    Serve,
    /// Always forward it (the upstream's own compaction, or its error).
    Forward,
}

impl NativeCompaction {
    /// Reads `auto`, `serve` or `forward`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(NativeCompaction::Auto),
            "serve" => Some(NativeCompaction::Serve),
            "forward" => Some(NativeCompaction::Forward),
            _ => None,
        }
    }

    /// True when an upstream's answer of `status` to the compaction endpoint says it has
    /// none (what `auto` learns from).
    pub(crate) fn lacks_endpoint(status: u16) -> bool {
        matches!(status, 404 | 405 | 501)
    }
}
