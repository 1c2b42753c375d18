//! Key redaction in error messages: the key is scrubbed before the message is cut to its
//! display length, and a key prefix of 8+ chars left by the cut is scrubbed too. A
//! property test over arbitrary texts, keys and positions, and a real server that echoes
//! the key exactly across the cut.

#![cfg(feature = "http")]

use crate::http_support;

use http_support::{KEY, PROTOCOLS, Server, backend, error};
use llm_compactor::backend::http::{MIN_PARTIAL_SECRET, Secret};
use llm_compactor::summarize::{Summarizer, SummaryRequest};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the text around it and wherever the cut falls, no piece of the key of
    /// `MIN_PARTIAL_SECRET` chars that starts the key survives, and the output is never
    /// longer than the limit plus the ellipsis.
    #[test]
    fn no_key_prefix_survives_the_cut(
        before in "[a-z ]{0,80}",
        after in "[a-z ]{0,80}",
        key in "SK-[A-Z0-9]{5,40}",
        copies in 1usize..3,
        max in 1usize..200,
    ) {
        let secret = Secret::new(key.clone());
        let text = format!("{before}{}{after}", key.repeat(copies));
        let shown = secret.redact_cut(&text, max);
        prop_assert!(!shown.contains(&key[..MIN_PARTIAL_SECRET]), "{shown:?} leaks {key}");
        prop_assert!(shown.chars().count() <= max + 1, "{shown:?} longer than {max}");
        // Nothing is cut when it fits: the scrubbed text comes back whole.
        let whole = secret.redact(&text);
        if whole.trim().chars().count() <= max {
            prop_assert_eq!(shown, whole.trim());
        }
    }
}

#[tokio::test]
async fn a_key_echoed_across_the_display_cut_is_scrubbed_whole() {
    let request = SummaryRequest {
        system: "Summarize.".into(),
        transcript: "[user]\nhi".into(),
        max_output_tokens: 16,
        prefill: String::new(),
    };
    for protocol in PROTOCOLS {
        // The server echoes the key so that it straddles every position around the cut
        // (the message shown starts with the status, e.g. "HTTP 401 Unauthorized: ").
        for pad in 300..500 {
            let message = format!("{}invalid x-api-key: {KEY} (check it)", "e".repeat(pad));
            let server = Server::always(error(protocol, 401, "authentication_error", &message)).await;
            let failure = backend(protocol, &server.base_url(protocol))
                .summarize(request.clone(), &CancellationToken::new())
                .await
                .unwrap_err();
            assert!(
                !failure.message.contains(&KEY[..MIN_PARTIAL_SECRET]),
                "{protocol:?} pad {pad}: {}",
                failure.message
            );
            assert!(failure.message.chars().count() <= 501, "{}", failure.message);
        }
    }
}
