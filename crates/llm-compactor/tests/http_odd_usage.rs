//! A summary whose server reports odd usage numbers (negative, 1e30, fractional, a
//! string, absurdly large) is accepted, with the usage treated as unknown.

#![cfg(feature = "http")]

use crate::http_support;

use http_support::{Canned, PROTOCOLS, Server, backend};
use llm_compactor::Usage;
use llm_compactor::backend::http::Protocol;
use llm_compactor::summarize::{Summarizer, SummaryRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn answer(protocol: Protocol, usage: Value) -> Canned {
    let body = match protocol {
        Protocol::OpenAi => json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "## Goals\nship"},
                         "finish_reason": "stop"}],
            "usage": usage,
        }),
        Protocol::Anthropic => json!({
            "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "## Goals\nship"}],
            "stop_reason": "end_turn",
            "usage": usage,
        }),
    };
    Canned::json(200, body)
}

#[tokio::test]
async fn odd_usage_numbers_do_not_reject_the_summary() {
    let request = SummaryRequest {
        system: "Summarize.".into(),
        transcript: "[user]\nhi".into(),
        max_output_tokens: 64,
        prefill: String::new(),
    };
    for protocol in PROTOCOLS {
        let (input, output) = match protocol {
            Protocol::OpenAi => ("prompt_tokens", "completion_tokens"),
            Protocol::Anthropic => ("input_tokens", "output_tokens"),
        };
        let odd = [
            json!(-1),
            json!(1e30),
            json!(12.5),
            json!("many"),
            json!(u64::MAX),
            json!(5_000_000_000_000u64),
        ];
        for value in odd {
            let usage = json!({ input: value.clone(), output: 7 });
            let server = Server::always(answer(protocol, usage)).await;
            let reply = backend(protocol, &server.base_url(protocol))
                .summarize(request.clone(), &CancellationToken::new())
                .await
                .unwrap_or_else(|e| panic!("{protocol:?} {value}: {e}"));
            assert_eq!(reply.text, "## Goals\nship");
            assert_eq!(reply.usage, Usage::default(), "{protocol:?} {value}");
        }
        // Anthropic's cache counts are summed into the input: no overflow either.
        if protocol == Protocol::Anthropic {
            let usage = json!({"input_tokens": 10, "output_tokens": 2,
                               "cache_read_input_tokens": u64::MAX, "cache_creation_input_tokens": u64::MAX});
            let server = Server::always(answer(protocol, usage)).await;
            let reply = backend(protocol, &server.base_url(protocol))
                .summarize(request.clone(), &CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(reply.usage, Usage::default());
        }
        // Sane numbers are kept.
        let server = Server::always(answer(protocol, json!({ input: 100, output: 7 }))).await;
        let reply = backend(protocol, &server.base_url(protocol))
            .summarize(request.clone(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (100, 7));
    }
}
