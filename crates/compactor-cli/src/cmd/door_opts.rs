//! The flags of budgets at the door (issue 41, item 3): a tool result over its tool's
//! cap becomes a head/tail preview with its handle, media beyond the newest N (or over
//! the request's byte ceiling) a placeholder (`llm_compactor::plan::door`).
//!
//! Off by default in `compact`, `plan`, `eval` and `session compact` (their results are
//! byte for byte what they were); on by default in `proxy`, which sets
//! [`DoorOpts::default_on`] (see docs/budgets-and-instructions.md for why). Any of the
//! numbers turns it on; `--door=false` turns it off.

use super::ranges;

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
