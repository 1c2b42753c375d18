//! Sessions for the report's tests: a real trajectory run through the library's own
//! agent-loop glue ([`ContextManager`]), so the transcript has the passes a real run
//! would (elision epochs, compactions, repairs) at the requests where they happened; and
//! the browser the tests drive.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use compactor_report::recorded_usage;
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::format::Document;
use llm_compactor::message::{Message, Role};
use llm_compactor::session::{ContextManager, RequestShape, Session, SessionOptions, Transcript};
use llm_compactor::{Compactor, CompactorConfig};
use tokio_util::sync::CancellationToken;

/// The real trajectories (`$LLM_COMPACTOR_DATA`, default `../shared/data` beside the repo).
pub fn data_dir() -> PathBuf {
    std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

/// The mini-swe-agent trajectories, largest first; `None` after a notice when absent.
pub fn trajectories() -> Option<Vec<PathBuf>> {
    let dir = data_dir().join("trajectories/mini-swe-agent");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("SKIPPED: no trajectories at {} (set LLM_COMPACTOR_DATA)", dir.display());
        return None;
    };
    let mut files: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
        .map(|p| (std::fs::metadata(&p).map_or(0, |m| m.len()), p))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Some(files.into_iter().map(|(_, p)| p).collect())
}

/// The compactor of the test runs: `budget`, observation aging on, the model-free ledger
/// summarizer, the heuristic counter.
pub fn compactor(budget: usize) -> Arc<Compactor> {
    let config = CompactorConfig::builder(budget).age_observations(true).build().unwrap();
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)))
}

/// Plays `messages` as an agent run under `compactor`: each assistant turn is a request
/// (prepared, compacting when needed, then answered with the turn and its recorded
/// usage), every other message is pushed. Returns the transcript's path in `dir`.
pub async fn play(messages: Vec<Message>, compactor: Arc<Compactor>, dir: &Path) -> PathBuf {
    let path = dir.join("run.jsonl");
    let session = Session::create(&path, SessionOptions::new()).unwrap();
    let mut manager = ContextManager::new(compactor, session).with_max_forced_compactions(100);
    for message in messages {
        if message.role == Role::Assistant {
            match manager.prepare(RequestShape::default(), CancellationToken::new()).await {
                Ok(_) => {}
                // An exhausted pass is written too; the run goes on as an agent's would.
                Err(llm_compactor::session::ManagerError::ContextExhausted { .. }) => {}
                Err(e) => panic!("prepare: {e}"),
            }
            let usage = recorded_usage(&message);
            manager.record_response(usage, "m", [message]).unwrap();
        } else {
            manager.push(message).unwrap();
        }
    }
    path
}

/// A trajectory file played as an agent run (see [`play`]).
pub async fn play_trajectory(trajectory: &Path, budget: usize, dir: &Path) -> PathBuf {
    let document = Document::read_path(trajectory, None).unwrap();
    play(document.into_messages(), compactor(budget), dir).await
}

/// The transcript's pass lines (repair, elision, compaction), in order.
pub fn pass_lines(path: &Path) -> Vec<llm_compactor::session::Entry> {
    Transcript::read(path)
        .unwrap()
        .entries()
        .iter()
        .filter(|e| matches!(e.record.kind(), "repair" | "elision" | "compaction"))
        .cloned()
        .collect()
}

pub mod browser;
#[allow(unused_imports)]
pub use browser::*;
