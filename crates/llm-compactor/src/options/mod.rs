//! One options overlay: the user-settable compaction options as data, read by every
//! front end (the CLI's flags, the Python keywords, the Node options object, the proxy's
//! engine flags) and applied here, once.
//!
//! [`OptionsOverlay`] holds every option as an `Option` (absent: the library's default),
//! deserializes from JSON with unknown keys refused, and turns into the library's types:
//! [`OptionsOverlay::config`] (the validated [`crate::CompactorConfig`]),
//! [`OptionsOverlay::counter`], [`OptionsOverlay::ledger`],
//! [`OptionsOverlay::compactor`], [`OptionsOverlay::pass_options`] and, for the
//! summarizers the library knows by name, [`OptionsOverlay::summarizer`]. Every refusal
//! is an [`OverlayError`] naming the option, which each front end spells its own way
//! (`--summarizer-cmd`, `summarizer_cmd`, `summarizerCmd`).
//!
//! Adding an option is one field in [`OptionsOverlay`] and one line in
//! [`OptionsOverlay::apply`] (or in the method that uses it).

mod door;
mod error;
mod overlay;
mod summarizer;

pub use error::OverlayError;
pub use overlay::{DEFAULT_BUDGET, DEFAULT_COUNTER, OptionsOverlay};
