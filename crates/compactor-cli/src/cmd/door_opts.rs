//! The flags of budgets at the door (issue 41, item 3): a tool result over its tool's
//! cap becomes a head/tail preview with its handle, media beyond the newest N (or over
//! the request's byte ceiling) a placeholder (`llm_compactor::plan::door`).
//!
//! Off by default in `compact`, `plan`, `eval` and `session compact` (their results are
//! byte for byte what they were); on by default in `proxy`, which sets
//! [`DoorOpts::default_on`] (see docs/budgets-and-instructions.md for why). Any of the
//! numbers turns it on; `--door=false` turns it off.

use llm_compactor::plan::DoorRules;

use super::ranges;
use crate::error::CliError;

/// Budgets at the door.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DoorOpts {
    /// Budgets at the door: tool results over their cap become a head/tail preview with
    /// a handle, media beyond the newest few a placeholder (default: off, on in `proxy`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub door: Option<bool>,
    /// The cap on one tool result, in tokens (4 chars each; default 20000).
    #[arg(long, value_name = "TOKENS", value_parser = ranges::tokens)]
    pub door_tool_cap: Option<usize>,
    /// The cap of one tool by name, in tokens (repeatable): `--door-tool-cap-for bash=7500`.
    #[arg(long, value_name = "NAME=TOKENS", value_parser = parse_tool_cap)]
    pub door_tool_cap_for: Vec<(String, usize)>,
    /// Chars of a capped result kept, head and tail (default 1600).
    #[arg(long, value_name = "N", value_parser = ranges::chars)]
    pub door_preview_chars: Option<usize>,
    /// Media parts kept, newest first (default 20; the unanswered turn's always).
    #[arg(long, value_name = "N", value_parser = ranges::messages)]
    pub door_keep_media: Option<usize>,
    /// Bytes of content over which the oldest media go (default 30000000).
    #[arg(long, value_name = "BYTES", value_parser = ranges::chars)]
    pub door_max_request_bytes: Option<usize>,
    /// On unless `--door=false` (the proxy's default). Not a flag.
    #[arg(skip)]
    pub default_on: bool,
}

fn parse_tool_cap(s: &str) -> Result<(String, usize), String> {
    let (name, tokens) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=TOKENS"))?;
    if name.trim().is_empty() {
        return Err(format!("{s:?}: the tool name is empty"));
    }
    Ok((name.trim().to_owned(), ranges::tokens(tokens)?))
}

impl DoorOpts {
    /// The door's rules, or `None` when it is off.
    ///
    /// # Errors
    /// A usage error for rules that cannot work (a preview not shorter than a cap).
    pub fn rules(&self) -> Result<Option<DoorRules>, CliError> {
        let tuned = self.door_tool_cap.is_some()
            || !self.door_tool_cap_for.is_empty()
            || self.door_preview_chars.is_some()
            || self.door_keep_media.is_some()
            || self.door_max_request_bytes.is_some();
        if !self.door.unwrap_or(self.default_on || tuned) {
            return Ok(None);
        }
        let mut rules = DoorRules::default();
        if let Some(v) = self.door_tool_cap {
            rules = rules.with_default_cap(v);
        }
        for (name, tokens) in &self.door_tool_cap_for {
            rules = rules.with_tool_cap(name.clone(), *tokens);
        }
        if let Some(v) = self.door_preview_chars {
            rules = rules.with_preview_chars(v);
        }
        if let Some(v) = self.door_keep_media {
            rules = rules.with_keep_media(v);
        }
        if let Some(v) = self.door_max_request_bytes {
            rules = rules.with_max_request_bytes(v);
        }
        if let Some(problem) = rules.problem() {
            return Err(CliError::Usage(format!("invalid configuration: {problem}")));
        }
        Ok(Some(rules))
    }
}
