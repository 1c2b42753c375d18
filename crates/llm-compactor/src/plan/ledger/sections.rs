//! The ledger's fixed words: its heading, the line naming the originals, and the titles
//! of its sections, written once.
//!
//! The renderer (`render.rs`) writes them and the carry (`carry.rs`) reads a rendered
//! ledger back at them, so they live below both: the carry depends on these words, not
//! on the renderer, and the renderer's tiers come from the carry without a cycle.
//! The commands' title has four forms, its legend naming only the marks its lines carry
//! (see `render.rs`); each starts with [`COMMANDS_RUN`], which is what a reader matches.

/// The heading line of a rendered ledger.
pub const LEDGER_HEADING: &str = "## Ledger (verbatim facts from the replaced messages; nothing here is inferred)";

/// The start of the line that names the range of every replaced message.
pub(crate) const ORIGINALS: &str = "Originals (every replaced message, verbatim, by the expand tool): ";

/// `commands_run!()`: the commands' title; `commands_run!(legend)`: one of its forms.
macro_rules! commands_run {
    () => {
        "Commands run"
    };
    ($legend:literal) => {
        concat!(commands_run!(), " (newest last", $legend, ")")
    };
}

/// The first section's title: the last user request, verbatim.
pub(crate) const LAST_USER_REQUEST: &str = "Last user request (verbatim)";
/// The errors still open, and failing tests.
pub(crate) const OPEN_ERRORS: &str = "Open errors and failing tests";
/// The files the replaced messages touched.
pub(crate) const FILES_TOUCHED: &str = "Files touched";
/// The start of the commands' title (its legend follows).
pub(crate) const COMMANDS_RUN: &str = commands_run!();
/// The errors a later result showed fixed.
pub(crate) const RESOLVED_ERRORS: &str = "Resolved errors";
/// The user's messages before the last request.
pub(crate) const EARLIER_USER_MESSAGES: &str = "Earlier user messages";
/// Identifiers the messages named.
pub(crate) const IDENTIFIERS_NAMED: &str = "Identifiers named";
/// The instruction files injected into user turns (the highest tier, rendered first).
pub(crate) const PINNED_INSTRUCTIONS: &str = "Pinned instructions (verbatim, kept before everything else)";

/// The commands' title when its lines carry exit marks and run counts.
pub(crate) const COMMANDS_EXITS_RUNS: &str = commands_run!("; ✓ exit 0, ✗ N exit status N, ×N runs");
/// The commands' title when its lines carry exit marks only.
pub(crate) const COMMANDS_EXITS: &str = commands_run!("; ✓ exit 0, ✗ N exit status N");
/// The commands' title when its lines carry run counts only.
pub(crate) const COMMANDS_RUNS: &str = commands_run!("; ×N runs");
/// The commands' title when its lines carry neither.
pub(crate) const COMMANDS_PLAIN: &str = commands_run!("");

/// The sections' titles (the commands' title is its start: its legend varies): what
/// [`super::parse_rendered`] splits a rendered ledger at. Rendered in this order, but for
/// the pinned instructions (listed last, so that the others keep their indices), which
/// come first.
pub const SECTION_TITLES: [&str; 8] = [
    LAST_USER_REQUEST,
    OPEN_ERRORS,
    FILES_TOUCHED,
    COMMANDS_RUN,
    RESOLVED_ERRORS,
    EARLIER_USER_MESSAGES,
    IDENTIFIERS_NAMED,
    PINNED_INSTRUCTIONS,
];

/// What a pinned block's own newlines are written as: indented by two spaces, so that a
/// line of the block that starts with `- ` does not read back as a new item.
pub(crate) const PINNED_INDENT: &str = "\n  ";
