//! The HTTP summarizer's redirect policy against two real servers on 127.0.0.1 (two
//! ports: two origins): a redirect to another origin is never followed, so the second
//! server never sees the key (`x-api-key` or `Authorization`, nor a custom auth header),
//! and the failure is a clear abort-class error; a redirect within the origin is followed
//! with the key.

#![cfg(feature = "http")]

use crate::http_support;

use http_support::{Canned, KEY, PROTOCOLS, Server, builder, success};
use llm_compactor::backend::http::Protocol;
use llm_compactor::summarize::{FailureClass, FailureKind, Summarizer, SummaryRequest};
use tokio_util::sync::CancellationToken;

fn request() -> SummaryRequest {
    SummaryRequest {
        system: "Summarize the transcript.".into(),
        transcript: "[user]\nfix the bug".into(),
        max_output_tokens: 64,
        prefill: String::new(),
    }
}

fn endpoint_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::OpenAi => "/v1/chat/completions",
        Protocol::Anthropic => "/v1/messages",
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_and_the_key_never_reaches_it() {
    for protocol in PROTOCOLS {
        for status in [301u16, 302, 303, 307, 308] {
            let elsewhere = Server::always(success(protocol, "stolen", false)).await;
            let target = format!("http://{}{}", elsewhere.addr, endpoint_path(protocol));
            let origin = Server::always(Canned::text(status, "moved").header("location", &target)).await;
            let backend = builder(protocol, &origin.base_url(protocol))
                .header("x-custom-auth", http_support::KEY)
                .build()
                .unwrap();
            let error = backend
                .summarize(request(), &CancellationToken::new())
                .await
                .expect_err("a cross-origin redirect must fail");
            assert_eq!(error.kind, FailureKind::Unavailable, "{protocol:?} {status}: {error}");
            assert_eq!(error.class(), FailureClass::Abort);
            assert!(
                error.message.contains("another origin") && error.message.contains(&elsewhere.addr.to_string()),
                "{protocol:?} {status}: {}",
                error.message
            );
            assert!(!error.message.contains(KEY));
            assert_eq!(origin.count(), 1, "{protocol:?} {status}");
            // The other origin saw nothing at all, so certainly no credential.
            assert_eq!(elsewhere.count(), 0, "{protocol:?} {status}: the redirect was followed");
            for seen in elsewhere.requests() {
                for header in ["x-api-key", "authorization", "x-custom-auth"] {
                    assert!(seen.headers.get(header).is_none());
                }
            }
        }
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_key() {
    for protocol in PROTOCOLS {
        let server = Server::start(move |n| match n {
            0 => Canned::text(307, "moved").header("location", "/moved/endpoint"),
            _ => success(protocol, "## Goals\nfix the bug", false),
        })
        .await;
        let backend = builder(protocol, &server.base_url(protocol)).build().unwrap();
        let reply = backend
            .summarize(request(), &CancellationToken::new())
            .await
            .expect("a same-origin redirect is followed");
        assert!(reply.text.starts_with("## Goals"));
        let seen = server.requests();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].path, "/moved/endpoint");
        let key_of = |s: &http_support::Seen| match protocol {
            Protocol::OpenAi => s.headers.get("authorization").map(|v| v.to_str().unwrap().to_owned()),
            Protocol::Anthropic => s.headers.get("x-api-key").map(|v| v.to_str().unwrap().to_owned()),
        };
        for s in &seen {
            assert!(key_of(s).is_some_and(|k| k.ends_with(KEY)), "{protocol:?}: key missing");
        }
    }
}

#[tokio::test]
async fn a_redirect_loop_within_the_origin_ends_in_an_error() {
    let protocol = Protocol::OpenAi;
    let server = Server::always(Canned::text(307, "again").header("location", "/v1/chat/completions")).await;
    let backend = builder(protocol, &server.base_url(protocol)).build().unwrap();
    let error = backend
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Unavailable, "{error}");
    assert!(error.message.contains("redirects"), "{}", error.message);
    assert_eq!(server.count(), llm_compactor::backend::http::MAX_REDIRECTS + 1);
}
