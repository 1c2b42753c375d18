//! The flags of configured pins (issue 41, item 1): messages the user wants carried
//! whole in every summary's "Pinned instructions" section, beside the instruction files
//! the ledger pins on its own (`llm_compactor::plan::ledger::PinRules`).

/// Configured pins.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PinOpts {
    /// Pin every user message matching this regular expression (repeatable; the `regex`
    /// crate's syntax): kept whole in every summary, pass after pass.
    #[arg(long = "pin", value_name = "REGEX")]
    pub patterns: Vec<String>,
    /// Pin every result of this tool (repeatable), e.g. a memory tool's.
    #[arg(long = "pin-tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Pin the message with this id (repeatable).
    #[arg(long = "pin-id", value_name = "ID")]
    pub ids: Vec<String>,
}

impl PinOpts {
    /// The flags as the overlay's three lists (`None` where none was given).
    pub fn lists(&self) -> [Option<Vec<String>>; 3] {
        let some = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
        [some(&self.patterns), some(&self.tools), some(&self.ids)]
    }
}
