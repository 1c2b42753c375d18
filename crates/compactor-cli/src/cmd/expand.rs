//! `compactor session expand` and `compactor proxy expand`: the original messages behind
//! the handles a summary or a stub names (`[#3fa9c01b2e]`, or a `#first..#last` range).
//!
//! A handle is resolved only within the transcript it is asked of (a session file, or
//! one session of the proxy's store): a guessed handle, or one of another session, is
//! "not found". The messages come back as recorded, content byte for byte (`--json`:
//! each message in the library's JSON form, with its id).

use std::path::PathBuf;

use llm_compactor::session::Transcript;
use llm_compactor::store::open_store;
use llm_compactor::summarize::render_message;
use serde_json::json;

use crate::error::CliError;

/// `compactor session expand`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  compactor session expand run.jsonl '#3fa9c01b2e'\n  compactor session expand run.jsonl '#3fa9c01b2e..#77d0e1aa42' --json\n  compactor session expand --store postgres://… SESSION '#3fa9c01b2e'"
)]
pub struct SessionExpandArgs {
    /// The transcript (JSONL), or with `--store` the session key.
    pub session: String,
    /// The handles (`#` and ten hex digits) or ranges (`#first..#last`).
    #[arg(required = true)]
    pub handles: Vec<String>,
    /// Print `{"expansions": [{"handle", "found", "messages"}]}` instead of text.
    #[arg(long)]
    pub json: bool,
    /// Read the session from this store (`sqlite:PATH`, `memory:`, `postgres://…`).
    #[arg(long)]
    pub store: Option<String>,
}

/// Runs `compactor session expand` (and, with the store given, `compactor proxy expand`).
/// Exits with a failure when a handle is not found (after printing what was).
///
/// # Errors
/// The transcript cannot be read, or a handle is not found.
pub fn run(args: SessionExpandArgs) -> Result<(), CliError> {
    let transcript = match &args.store {
        None => Transcript::read(&PathBuf::from(&args.session)).map_err(CliError::failed)?,
        Some(url) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CliError::failed)?;
            runtime.block_on(async {
                let store = open_store(url)
                    .await
                    .map_err(|e| CliError::Usage(format!("--store: {e}")))?;
                Transcript::from_store(store.as_ref(), &args.session)
                    .await
                    .map_err(CliError::failed)
            })?
        }
    };
    print(&transcript, &args.handles, args.json)
}

fn print(transcript: &Transcript, handles: &[String], as_json: bool) -> Result<(), CliError> {
    let originals = transcript.originals();
    let mut missing = 0;
    let mut expansions = Vec::new();
    let mut text = String::new();
    for handle in handles {
        let found = llm_compactor::session::expand_in(&originals, handle);
        match &found {
            Some(expansion) => {
                text.push_str(&format!("=== {handle}: {} message(s) ===\n", expansion.messages.len()));
                for message in &expansion.messages {
                    text.push_str(&render_message(message, usize::MAX));
                }
            }
            None => {
                missing += 1;
                text.push_str(&format!("=== {handle}: not found in this session ===\n"));
            }
        }
        expansions.push(json!({
            "handle": handle,
            "found": found.is_some(),
            "messages": found.map(|e| e.messages).unwrap_or_default(),
        }));
    }
    let out = if as_json {
        serde_json::to_string_pretty(&json!({ "expansions": expansions })).map_err(CliError::failed)?
    } else {
        text.trim_end().to_owned()
    };
    crate::io::write_output(None, &out)?;
    if missing > 0 {
        return Err(CliError::Failed(format!(
            "{missing} handle(s) not found in this session"
        )));
    }
    Ok(())
}
