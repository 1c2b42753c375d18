//! [`PassContext`]: what one pass's summarizer may know of the request that runs it.
//!
//! Some summary requests depend on the agent request a pass was made for: the
//! cache-reading form sends the agent's own request plus one instruction
//! ([`crate::backend`]'s `AgentRequest`, with the `http` feature), a proxy's summarizer
//! pays with the key of the client whose request triggered the pass. That knowledge
//! belongs to the pass, not to the summarizer (shared by every pass) nor to the
//! compactor. So it travels explicitly: the caller puts it in
//! [`CompactOptions::pass`](crate::CompactOptions::pass) (or in a
//! [`RequestShape`](crate::session::RequestShape) for the `ContextManager`, which hands it
//! on to the background pass it spawns), and the compactor hands it to each call of
//! [`Summarizer::summarize_in`](super::Summarizer::summarize_in) and
//! [`Summarizer::input_room_in`](super::Summarizer::input_room_in).
//!
//! A pass context is a small map keyed by type: each layer reads the one value of the
//! type it defines and ignores the rest, so the library knows nothing of a proxy's
//! credentials and a proxy adds its own without a field here. Values are shared
//! (cloning a context clones `Arc`s) and never printed: `Debug` shows how many there are,
//! since they carry conversations and keys.

use std::any::{Any, TypeId};
use std::sync::Arc;

/// What one pass's summarizer may know of the request that runs it (see the module docs).
///
/// ```
/// use llm_compactor::summarize::PassContext;
///
/// #[derive(Debug, PartialEq)]
/// struct Caller(&'static str);
///
/// let pass = PassContext::new().with(Caller("agent-1"));
/// assert_eq!(pass.get::<Caller>(), Some(&Caller("agent-1")));
/// assert_eq!(pass.get::<u32>(), None);
/// // A value of the same type replaces the earlier one.
/// let pass = pass.with(Caller("agent-2"));
/// assert_eq!((pass.get::<Caller>(), pass.len()), (Some(&Caller("agent-2")), 1));
/// assert!(format!("{pass:?}").contains("values: 1"));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct PassContext {
    values: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
}

impl PassContext {
    /// An empty context: the summarizer knows nothing of the request (its ordinary
    /// summary request).
    pub fn new() -> Self {
        PassContext::default()
    }

    /// The same context holding `value` (in place of any earlier value of its type).
    pub fn with<T: Any + Send + Sync>(self, value: T) -> Self {
        self.with_shared(Arc::new(value))
    }

    /// [`PassContext::with`] of a value already shared.
    pub fn with_shared<T: Any + Send + Sync>(mut self, value: Arc<T>) -> Self {
        let id = TypeId::of::<T>();
        self.values.retain(|(held, _)| *held != id);
        self.values.push((id, value));
        self
    }

    /// The value of type `T`, if the context holds one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.values
            .iter()
            .find(|(held, _)| *held == id)
            .and_then(|(_, value)| value.downcast_ref::<T>())
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl std::fmt::Debug for PassContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The values are conversations and credentials: never in a log line.
        f.debug_struct("PassContext")
            .field("values", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_read_back_and_replaced_alone() {
        let pass = PassContext::new().with(7_u32).with(String::from("key"));
        assert_eq!(pass.get::<u32>(), Some(&7));
        assert_eq!(pass.get::<String>().map(String::as_str), Some("key"));
        let pass = pass.with(8_u32);
        assert_eq!((pass.get::<u32>(), pass.len()), (Some(&8), 2));
        assert!(PassContext::new().is_empty());
        assert_eq!(PassContext::new().get::<u32>(), None);
    }
}
