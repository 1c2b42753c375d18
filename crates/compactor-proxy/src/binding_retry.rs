//! The one retry of a request the upstream refused for the signed state it carried
//! (issue 39): the library reads the error and plans the removal; this module writes
//! the body that asks again. Its own file so that `routes` stays the routes.

use axum::http::HeaderMap;
use bytes::Bytes;

use crate::api::{self, Api};
use crate::provider_edits::{self, ProviderEdits};

/// The retry of a request the upstream refused for its signed state (the library reads
/// the error, `plan::binding::recover_from_error`): on Messages, a thinking block's
/// signature, answered by the same body asking for `drop_block`; on Responses,
/// `invalid_encrypted_content`, answered by the conversation without its sealed items and
/// the ids of the items they led to (`plan_binding_repair`; a refused compaction item,
/// which stands for history, is not dropped). `None` for any other error, a request that
/// asked already, or one no removal makes sendable.
pub(crate) fn binding_retry(
    api: Api,
    parsed: &api::Request,
    status: u16,
    error_body: &[u8],
    prepared: &crate::sessions::Prepared,
    headers: &HeaderMap,
) -> Option<(Bytes, HeaderMap)> {
    use llm_compactor::plan::binding::{
        BindingContext, BindingRules, RecoveryCause, RepairPolicy, plan_binding_repair, recover_from_error,
    };
    let text = std::str::from_utf8(error_body).ok()?;
    let recovery = recover_from_error(status, text, &prepared.messages)?;
    if !recovery.retryable() {
        return None;
    }
    match (api, recovery.cause) {
        (Api::Anthropic, RecoveryCause::InvalidSignature { .. }) => {
            let drop_block = ProviderEdits {
                drop_block: true,
                clear_keep: None,
            };
            // A retry is a second request: its body is not the round's, and not counted.
            provider_edits::apply(&prepared.body, headers, drop_block, &Default::default())
                .map(|(body, headers, _)| (body, headers))
        }
        (Api::Responses, RecoveryCause::InvalidEncryptedContent { .. }) => {
            let context = BindingContext::new(BindingRules::openai_responses());
            let repair = plan_binding_repair(
                &prepared.messages,
                &recovery.invalid,
                &context,
                &RepairPolicy::default(),
            );
            if !repair.sendable() {
                return None;
            }
            let (value, _) = parsed.wire.to_value(repair.messages);
            Some((Bytes::from(serde_json::to_vec(&value).ok()?), headers.clone()))
        }
        _ => None,
    }
}
