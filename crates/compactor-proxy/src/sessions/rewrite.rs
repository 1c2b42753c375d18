//! The rewrite of a session: the replacement the upstream sees instead of the client's
//! leading messages, how a request is matched against it, and how a new one is made to
//! stand for the client's messages (after a pass, or the turns an expansion added).

use std::sync::Arc;

use llm_compactor::message::{Message, conversation_digest};
use llm_compactor::session::Lines;
use llm_compactor::store::Rewrite;

use super::{SessionState, backend_error, without_ids};
use crate::config::ProxyConfig;
use crate::error::ProxyError;

impl SessionState {
    /// Keeps `rewrite` and its decoded replacement.
    pub(super) fn set_rewrite(&mut self, rewrite: Option<Rewrite>) -> Result<(), ProxyError> {
        self.replacement = match &rewrite {
            Some(r) => Some(Arc::new(
                serde_json::from_str(&r.replacement).map_err(|e| backend_error(format!("bad rewrite: {e}")))?,
            )),
            None => None,
        };
        // A rewrite read back from the store: whether its pass left stale thinking is
        // not recorded, so every signed block in the replacement counts as stale (asking
        // the provider to drop blocks that are valid drops none).
        self.stale_thinking = self
            .replacement
            .as_deref()
            .map(|r| super::binding::thinking_names(r))
            .unwrap_or_default();
        self.rewrite = rewrite;
        self.removed = None;
        self.verified = None;
        Ok(())
    }

    /// The rewrite's replacement when the request's leading messages match it.
    pub(super) fn matching_replacement(&mut self, client: &[Message]) -> Option<(usize, Arc<Vec<Message>>)> {
        let rewrite = self.rewrite.as_ref()?;
        let replacement = self.replacement.clone()?;
        let len = rewrite.original_len;
        if client.len() < len {
            return None;
        }
        let prefix = &client[..len];
        // The digest check below ignores ids, names and extras; so does this one, which
        // also does not walk the extras (a Responses turn keeps its original items there).
        let seen = self
            .verified
            .as_ref()
            .is_some_and(|v| v.len() == prefix.len() && v.iter().zip(prefix).all(|(a, b)| a.eq_for_digest(b)));
        if !seen {
            if conversation_digest(prefix) != rewrite.original_digest {
                return None;
            }
            self.verified = Some(Arc::new(prefix.to_vec()));
        }
        Some((len, replacement))
    }

    /// Makes the replayer's conversation the replacement for the client's messages
    /// `client` (after a pass, or the turns an expansion added): `lines` are appended
    /// first (a rewrite must never name what the record lacks), then the rewrite is
    /// written and kept. The replacement, without ids.
    pub(super) async fn stand_for(
        &mut self,
        config: &ProxyConfig,
        lines: &mut Lines,
        client: &[Message],
    ) -> Result<Vec<Message>, ProxyError> {
        let messages = without_ids(self.replayer.messages());
        let generation = self.rewrite.as_ref().map_or(0, |r| r.generation);
        let rewrite = Rewrite {
            original_len: client.len(),
            original_digest: conversation_digest(client),
            replacement: serde_json::to_string(&messages)
                .map_err(|e| ProxyError::Internal(format!("cannot encode the rewrite: {e}")))?,
            generation: generation + 1,
        };
        self.append(config, lines).await?;
        if !config.store.set_rewrite(&self.store_key, generation, &rewrite).await? {
            tracing::warn!(session = %self.key, "the rewrite changed under us; reloading the session next round");
            self.loaded = false;
        }
        self.replacement = Some(Arc::new(messages.clone()));
        self.rewrite = Some(rewrite);
        self.removed = None;
        self.verified = Some(Arc::new(client.to_vec()));
        Ok(messages)
    }
}
