//! Support for the counting tests and bench: real conversations, sampled.

use std::path::Path;

use llm_compactor::format::Document;
use llm_compactor::message::Message;

/// The messages of a mini-swe-agent trajectory file, read by the real format module.
pub fn mini_swe_agent_messages(path: &Path) -> Vec<Message> {
    Document::read_path(path, None)
        .expect("the trajectory is a readable conversation")
        .into_messages()
}

/// Up to `per_file` messages spread evenly over the conversation (first and last
/// included).
pub fn sample<T: Clone>(items: &[T], per_file: usize) -> Vec<T> {
    if items.len() <= per_file {
        return items.to_vec();
    }
    (0..per_file)
        .map(|i| items[i * (items.len() - 1) / (per_file - 1).max(1)].clone())
        .collect()
}
