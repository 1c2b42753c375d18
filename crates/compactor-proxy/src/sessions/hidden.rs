//! The turns an expansion added (`--expand-tool`, see [`crate::expand`]): recorded in the
//! session's transcript, and stood for by its rewrite.
//!
//! The upstream saw the conversation, then the model's `compactor_expand` call and its
//! result; the client saw neither. The transcript gets both (export + replay rebuilds
//! what the upstream saw), and the rewrite now maps the client's messages of this round
//! to the conversation with them: the client's next request, which lacks them, goes
//! upstream with them in place — the model keeps what it read and the prompt cache its
//! prefix.

use llm_compactor::message::Message;
use llm_compactor::session::{Lines, Record};

use super::{SessionState, backend_error};
use crate::config::ProxyConfig;
use crate::error::ProxyError;

impl SessionState {
    /// Records `hidden`, which followed the first `before` messages of `store_key`'s
    /// conversation in the round whose client sent `client`. Nothing is recorded when
    /// the session moved on meanwhile (another round, another transcript): the next
    /// request then goes as the client sends it.
    pub(crate) async fn record_hidden(
        &mut self,
        config: &ProxyConfig,
        store_key: &str,
        before: usize,
        client: &[Message],
        hidden: Vec<Message>,
    ) -> Result<(), ProxyError> {
        self.sync(config).await?;
        if self.store_key != store_key || self.replayer.messages().len() != before {
            tracing::info!(session = %self.key, "the session moved on during an expansion; its turns are not kept");
            return Ok(());
        }
        let mut lines = Lines::default();
        for message in hidden {
            lines
                .push(&mut self.replayer, Record::Message(message))
                .map_err(backend_error)?;
        }
        self.stand_for(config, &mut lines, client).await?;
        Ok(())
    }
}
