//! Signed and sealed state: which blocks of a conversation a provider has bound to the
//! history they were produced under, which of them an edit of the history breaks, what
//! to do about it, and how to read the provider's refusal when one gets through.
//!
//! Why here: every edit the compactor makes (an aging stub, a summary, a prepared
//! install, a hard trim, an expansion, a repair) rewrites history that today's flagship
//! models have signed. Anthropic's preserved thinking accepts a returned `thinking` or
//! `redacted_thinking` block only while `system`, `tools` and every message before it
//! are byte-identical to what was sent when it was produced, and no thinking block
//! between others was left out or moved; OpenAI's Responses API seals its `reasoning`
//! (`encrypted_content`) and `compaction` items and drops reasoning whose prefix
//! changed. An edit that ignores this turns the next request into a 400 that the client
//! cannot recover from. The rules, their sources and the remedies are written down in
//! `docs/binding.md`.
//!
//! Four pure steps, one file each:
//!
//! 1. [`BindingRules`] / [`BindingContext`] (`rules.rs`): what binds, per provider and
//!    model, and the facts of the request (tools, account, model, thinking on);
//!    [`signed_blocks`] (`signed.rs`): which parts are signed state.
//! 2. [`invalidated`] (`invalid.rs`): given the conversation the provider saw and the
//!    one about to be sent, which blocks of the latter are invalid, and why.
//! 3. [`plan_binding_repair`] (`repair.rs`, `edit.rs`): the cheapest documented remedy,
//!    with a [`BindingReport`] for the transcript and the metrics, and the one state no
//!    removal fixes ([`TurnBoundary`]).
//! 4. [`recover_from_error`] (`recover.rs`): a provider's 400 read as the blocks to drop
//!    before the one retry.
//!
//! And one edit that keeps the blocks: [`clear_on_server`] (`server_clearing.rs`) turns
//! the oldest aging stubs into the provider's own tool-result clearing; and one memory,
//! [`stale_thinking`] (`stale.rs`): the blocks earlier passes left invalid, carried until
//! they are gone.
//!
//! A pass calls `invalidated(input, &output, &ctx)` and, when that is not empty,
//! `plan_binding_repair(&output, &invalid, &ctx, &policy)`; a proxy does the same with
//! the request it last forwarded as `before`, and `recover_from_error` on a 4xx.

mod drop_block;
mod edit;
mod invalid;
mod recover;
mod repair;
mod rules;
mod server_clearing;
mod signed;
mod stale;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

pub use drop_block::{BINDING_BETA, asks_drop_block, thinking_enabled, with_binding_beta, with_drop_block};
pub use invalid::{Invalid, InvalidReason, PrefixChange, invalidated};
pub use recover::{Recovery, RecoveryCause, recover_from_error};
pub use repair::{
    BindingRepair, BindingReport, BlockNote, RepairPolicy, TurnBoundary, in_progress_tool_loop, plan_binding_repair,
};
pub use rules::{BindingContext, BindingRules, Outcome, Provider};
pub use server_clearing::{MAX_RESTORED_BYTES, ServerClearing, clear_on_server};
pub use signed::{BlockRef, SignedBlock, SignedKind, same_on_wire, signed_blocks};
pub use stale::{stale_thinking, thinking_names};
