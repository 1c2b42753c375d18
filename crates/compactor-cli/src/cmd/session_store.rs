//! `compactor session export --store URL` and `compactor session import FILE --store URL`:
//! moving a session between its JSONL transcript and a shared store (`memory:`,
//! `postgres://…`).
//!
//! Both directions keep the bytes: import stores each transcript line as written (ids
//! and types read from the envelopes, the file must replay first), export writes the
//! stored lines back, so `import` then `export` gives the same file, and `session
//! replay` rebuilds the same conversation. Import is idempotent (a line whose id the
//! session already holds is skipped), so re-running it after a failure is safe.

use std::path::{Path, PathBuf};

use llm_compactor::session::Transcript;
use llm_compactor::store::{SessionStore, StoreError, events_from_jsonl, open_store};

use crate::error::CliError;

/// `compactor session export`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  compactor session export --store postgres://agent@db/sessions run-42 -o run-42.jsonl"
)]
pub struct ExportArgs {
    /// The store: `postgres://user:password@host:port/database`, or `memory:`. The
    /// password may also come from the environment variable instead of the command line.
    #[arg(long, env = "COMPACTOR_STORE", hide_env_values = true)]
    store: String,
    /// The session key in the store.
    session: String,
    /// The transcript to write (atomically), or `-` for stdout.
    #[arg(short, long)]
    output: PathBuf,
}

/// Runs `compactor session export`.
pub fn export(args: ExportArgs) -> Result<(), CliError> {
    let runtime = runtime()?;
    let events = runtime.block_on(async {
        let store = open(&args.store).await?;
        let events = store.events(&args.session, 0).await.map_err(CliError::failed)?;
        if events.is_empty() {
            return Err(CliError::failed(StoreError::NoSuchSession(args.session.clone())));
        }
        Ok(events)
    })?;
    // The export must replay (read as the stored lines, not parsed again from the text);
    // a store holding lines that do not is reported, not written.
    Transcript::from_lines(Path::new(&args.session), events.iter().map(|e| e.line.as_str()))
        .map_err(CliError::failed)?;
    let text: String = events.iter().map(|e| format!("{}\n", e.line)).collect();
    let lines = text.lines().count();
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let output = (args.output.as_os_str() != "-").then_some(args.output.as_path());
    crate::io::write_transcript_output(output, body)?;
    if let Some(path) = output {
        crate::out::stderr_line(&format!(
            "compactor: exported {lines} lines of session {:?} to {}",
            args.session,
            path.display()
        ))?;
    }
    Ok(())
}

/// Imports the transcript `file` into `store_url` under `key` (the file's stem when
/// None). Runs `compactor session import FILE --store URL`.
pub fn import(file: &str, store_url: &str, key: Option<String>) -> Result<(), CliError> {
    let bytes = crate::io::read_input(file)?;
    let path = Path::new(file);
    let transcript = Transcript::parse(path, &bytes).map_err(CliError::failed)?;
    if let Some(torn) = transcript.torn_tail() {
        return Err(CliError::Failed(format!(
            "{file}:{}: torn final line; repair the transcript (open it with `compactor session compact`) before importing",
            torn.line
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| CliError::Failed(format!("{file}: not UTF-8: {e}")))?;
    let events = events_from_jsonl(file, &text).map_err(CliError::failed)?;
    let key = match key {
        Some(key) => key,
        None => path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty() && *s != "-")
            .map(str::to_owned)
            .ok_or_else(|| CliError::Usage("name the session with --session KEY".to_owned()))?,
    };
    let runtime = runtime()?;
    let (before, after) = runtime.block_on(async {
        let store = open(store_url).await?;
        let before = store.events(&key, 0).await.map_err(CliError::failed)?;
        if let Some(conflict) = first_conflict(&before, &events) {
            return Err(CliError::Failed(format!(
                "session {key:?} in the store already holds a different transcript ({conflict}); choose another --session"
            )));
        }
        let after = store.append(&key, &events).await.map_err(CliError::failed)?;
        Ok((before.len(), after))
    })?;
    crate::out::stderr_line(&format!(
        "compactor: imported {} of {} lines into session {key:?} ({} already there)",
        after as usize - before,
        events.len(),
        before
    ))
}

/// Where the stored session and the file disagree: the store's lines must be a prefix of
/// the file's, or the file a prefix of the store's (a re-run), line for line.
fn first_conflict(
    stored: &[llm_compactor::store::StoredEvent],
    events: &[llm_compactor::store::NewEvent],
) -> Option<String> {
    stored
        .iter()
        .zip(events)
        .enumerate()
        .find(|(_, (s, e))| s.line != e.line)
        .map(|(i, _)| format!("line {} differs", i + 1))
}

async fn open(url: &str) -> Result<std::sync::Arc<dyn SessionStore>, CliError> {
    open_store(url).await.map_err(CliError::failed)
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::failed)
}
