//! The pure planning core: cut, pairs, call identity, elision eligibility, stubs,
//! assembly, hard-trim planning and validation, the repair of broken input, the pinning
//! of a sticky turn's answers, the token cap of the recent window, the cost policy
//! (when a pass pays), and [`binding`]: which signed and sealed provider state (thinking
//! signatures, encrypted reasoning, compaction items) an edit invalidates, and the
//! remedy.
//!
//! Every decision a compaction makes is taken here, by functions of their arguments
//! only: no I/O, no async, no clock, no randomness. That is what lets the async shell in
//! [`crate::compactor`] stay thin, lets a session replay reproduce a pass byte for byte,
//! and lets `compactor plan` show what a pass would do without doing it.

mod aging_index;
mod assemble;
pub mod binding;
pub mod breakpoints;
mod cut;
pub mod door;
mod eligibility;
mod elision;
mod failed;
mod fenwick;
pub mod grounding;
mod handle;
mod identity;
pub mod ledger;
mod pairs;
mod pinned;
pub mod policy;
pub mod prepared;
mod pricing;
mod recent;
mod repair;
mod stub;
mod trim;
mod validate;

pub use aging_index::AgingIndex;
pub(crate) use assemble::notice_content;
pub use assemble::{SUMMARY_HEADER, apply_elisions, assemble, summary_content};
pub use binding::{
    BindingContext, BindingRepair, BindingReport, BindingRules, BlockNote, BlockRef, Invalid, InvalidReason, Outcome,
    PrefixChange, Provider, Recovery, RecoveryCause, RepairPolicy, SignedBlock, SignedKind, TurnBoundary,
    in_progress_tool_loop, invalidated, plan_binding_repair, recover_from_error, same_on_wire, signed_blocks,
};
pub(crate) use cut::recent_start;
pub use cut::{Layout, layout, layout_with};
pub use door::{DoorRules, content_bytes, door, is_door_preview, media_placeholder, preview_text};
pub use eligibility::{AgingRules, Eligible, EligibleReason, eligible, reclaimable_pool};
pub use elision::Elision;
pub use failed::is_failed_result;
pub use handle::{
    HANDLE_DIGITS, expandable_stub_text, expansion_unit, handle_for_id, handle_for_position, handle_of,
    handle_ranges_in, handles_in, is_handle, resolve_handle, resolve_range, resolve_request,
};
pub use identity::call_identity;
pub use pairs::Pairs;
pub use pinned::pinned;
pub use policy::{CostPolicy, CostReceipt, EpochDecision, TriggerAction};
pub use pricing::{Pricing, Tokens, UnknownPricing};
pub use recent::{Truncation, cut_middle, fit_recent, window_cap};
pub use repair::{Repair, RepairError, SYNTHETIC_ANSWER, apply_repairs, plan_repairs};
pub use stub::{is_stub, stub_text};
pub use trim::{TrimChoice, TrimPlan, TrimSearch};
pub use validate::{Violation, validate};
