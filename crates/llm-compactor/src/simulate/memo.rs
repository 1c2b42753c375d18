//! A memoizing counter for the simulator's own use.
//!
//! A replay counts every message of the conversation at every request, which is quadratic
//! in the length of a trajectory; with an exact BPE counter that is most of the run time.
//! Messages are immutable once written, so their count is cached by a hash of everything
//! the count depends on (role, content, tool calls, tool_call_id, name).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::count::TokenCounter;
use crate::message::{Content, Message};

/// Wraps a counter and remembers each message's count.
pub(crate) struct MemoCounter {
    inner: Arc<dyn TokenCounter>,
    name: String,
    cache: Mutex<HashMap<u64, usize>>,
}

impl MemoCounter {
    pub(crate) fn new(inner: Arc<dyn TokenCounter>) -> Self {
        let name = inner.name().to_owned();
        MemoCounter {
            inner,
            name,
            cache: Mutex::new(HashMap::new()),
        }
    }
}

fn key(message: &Message) -> u64 {
    // DefaultHasher::new() has fixed keys: deterministic within and across runs.
    let mut h = DefaultHasher::new();
    message.role.as_str().hash(&mut h);
    match &message.content {
        Content::Absent => 0u8.hash(&mut h),
        Content::Null => 1u8.hash(&mut h),
        Content::Text(text) => {
            2u8.hash(&mut h);
            text.hash(&mut h);
        }
        Content::Parts(_) => {
            3u8.hash(&mut h);
            message.content.to_value().to_string().hash(&mut h);
        }
    }
    for call in &message.tool_calls {
        (&call.id, &call.name, &call.arguments).hash(&mut h);
    }
    message.tool_call_id.hash(&mut h);
    message.name.hash(&mut h);
    h.finish()
}

impl TokenCounter for MemoCounter {
    fn name(&self) -> &str {
        &self.name
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        let k = key(message);
        if let Some(n) = self.cache.lock().ok().and_then(|c| c.get(&k).copied()) {
            return n;
        }
        let n = self.inner.count_message(message);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(k, n);
        }
        n
    }
}
