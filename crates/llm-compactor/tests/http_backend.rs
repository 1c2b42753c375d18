//! The HTTP summarizer backends against real servers on 127.0.0.1, for both protocols:
//! what goes over the wire, and which `FailureKind` (and so which class) every fault is
//! reported as. Each test also asserts how many requests the server saw: the backend
//! itself never retries.

#![cfg(feature = "http")]

use crate::http_support;

use std::time::{Duration, Instant};

use http_support::{
    Canned, Fault, KEY, PROTOCOLS, RawServer, SHORT_TIMEOUT, Server, backend, builder, dead_addr, error, httpdate_in,
    short, success,
};
use llm_compactor::Usage;
use llm_compactor::backend::http::{HttpBackend, HttpConfigError, MaxTokensField, Protocol};
use llm_compactor::message::Message;
use llm_compactor::summarize::{
    FailureClass, FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn request() -> SummaryRequest {
    SummaryRequest {
        system: "Summarize the transcript.".into(),
        transcript: "[user]\nfix the bug\n[assistant]\n-> calls fs_read({\"path\":\"a.rs\"})".into(),
        max_output_tokens: 512,
        prefill: String::new(),
    }
}

async fn summarize(backend: &HttpBackend) -> Result<SummaryReply, SummarizerError> {
    backend.summarize(request(), &CancellationToken::new()).await
}

async fn failure(protocol: Protocol, canned: Canned) -> (SummarizerError, usize) {
    let server = Server::always(canned).await;
    let error = summarize(&backend(protocol, &server.base_url(protocol)))
        .await
        .unwrap_err();
    (error, server.count())
}

#[tokio::test]
async fn success_reports_text_and_usage() {
    for protocol in PROTOCOLS {
        let server = Server::always(success(protocol, "The user asked to fix a bug.", false)).await;
        let reply = summarize(&backend(protocol, &server.base_url(protocol))).await.unwrap();
        assert_eq!(reply.text, "The user asked to fix a bug.");
        assert_eq!(reply.stop, StopReason::Complete);
        // OpenAI's prompt_tokens already includes the cached; Anthropic's three add up.
        let expected = Usage {
            input_tokens: 1200,
            output_tokens: 80,
            cache_read_tokens: 1024,
            cache_write_tokens: 0,
        };
        assert_eq!(reply.usage, expected, "{protocol:?}");
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn the_server_receives_model_budget_auth_and_placement() {
    for protocol in PROTOCOLS {
        let server = Server::always(success(protocol, "ok", false)).await;
        summarize(&backend(protocol, &server.base_url(protocol))).await.unwrap();
        let seen = server.requests();
        assert_eq!(seen.len(), 1);
        let (headers, body) = (&seen[0].headers, &seen[0].body);
        let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(header("content-type").as_deref(), Some("application/json"));
        match protocol {
            Protocol::OpenAi => {
                assert_eq!(seen[0].path, "/v1/chat/completions");
                assert_eq!(header("authorization"), Some(format!("Bearer {KEY}")));
                assert_eq!(header("x-api-key"), None);
                assert_eq!(body["model"], "gpt-4o-mini");
                // Not api.openai.com: the field every compatible server knows.
                assert_eq!(body["max_tokens"], 512);
                assert_eq!(
                    body["messages"][0],
                    json!({"role": "system", "content": "Summarize the transcript."})
                );
                assert_eq!(
                    body["messages"][1],
                    json!({"role": "user", "content": request().transcript})
                );
                assert_eq!(body["messages"].as_array().unwrap().len(), 2);
            }
            Protocol::Anthropic => {
                assert_eq!(seen[0].path, "/v1/messages");
                assert_eq!(header("x-api-key").as_deref(), Some(KEY));
                assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
                assert_eq!(header("authorization"), None);
                assert_eq!(body["model"], "claude-haiku-4-5");
                assert_eq!(body["max_tokens"], 512);
                assert_eq!(body["system"], "Summarize the transcript.");
                let transcript = request().transcript;
                assert_eq!(
                    body["messages"],
                    json!([{"role": "user", "content": [{"type": "text", "text": transcript}]}])
                );
            }
        }
    }
}

#[tokio::test]
async fn max_completion_tokens_and_extra_headers_when_asked() {
    let server = Server::always(success(Protocol::OpenAi, "ok", false)).await;
    let backend = builder(Protocol::OpenAi, &server.base_url(Protocol::OpenAi))
        .max_tokens_field(MaxTokensField::MaxCompletionTokens)
        .header("OpenAI-Organization", "org-42")
        .build()
        .unwrap();
    summarize(&backend).await.unwrap();
    let seen = &server.requests()[0];
    assert_eq!(seen.body["max_completion_tokens"], 512);
    assert!(seen.body.get("max_tokens").is_none());
    assert_eq!(seen.headers["openai-organization"], "org-42");
}

#[tokio::test]
async fn a_truncated_answer_says_so() {
    for protocol in PROTOCOLS {
        let server = Server::always(success(protocol, "The user asked", true)).await;
        let reply = summarize(&backend(protocol, &server.base_url(protocol))).await.unwrap();
        assert_eq!(
            (reply.stop, reply.text.as_str()),
            (StopReason::Truncated, "The user asked")
        );
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn client_errors_abort() {
    for protocol in PROTOCOLS {
        for (status, kind) in [
            (400, "invalid_request_error"),
            (401, "authentication_error"),
            (402, "billing_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
        ] {
            let (error, count) = failure(protocol, error(protocol, status, kind, "  nope, sorry  ")).await;
            assert_eq!(error.kind, FailureKind::Http { status }, "{protocol:?}");
            assert_eq!(error.class(), FailureClass::Abort);
            assert!(error.message.ends_with(": nope, sorry"), "{}", error.message);
            assert_eq!(count, 1);
        }
    }
}

#[tokio::test]
async fn rate_limits_advance_and_carry_retry_after() {
    for protocol in PROTOCOLS {
        let plain = error(protocol, 429, "rate_limit_error", "slow down");
        let (error_plain, count) = failure(protocol, plain.clone()).await;
        assert_eq!(
            (error_plain.kind.clone(), error_plain.class()),
            (FailureKind::Http { status: 429 }, FailureClass::Advance)
        );
        assert_eq!((error_plain.retry_after, count), (None, 1));

        let (error_secs, count) = failure(protocol, plain.clone().header("retry-after", "7")).await;
        assert_eq!((error_secs.retry_after, count), (Some(Duration::from_secs(7)), 1));
        assert_eq!(error_secs.class(), FailureClass::Advance);

        let date = httpdate_in(Duration::from_secs(20));
        let (error_date, count) = failure(protocol, plain.header("retry-after", &date)).await;
        let wait = error_date.retry_after.expect("an HTTP-date Retry-After");
        assert!(
            wait > Duration::from_secs(15) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        assert_eq!(count, 1);
    }
}

#[tokio::test]
async fn server_errors_retry_same() {
    for protocol in PROTOCOLS {
        for status in [500, 503] {
            let (error, count) = failure(protocol, error(protocol, status, "overloaded_error", "busy")).await;
            assert_eq!(error.kind, FailureKind::Http { status });
            assert_eq!(error.class(), FailureClass::RetrySame);
            assert_eq!(count, 1);
        }
        let (error, _) = failure(protocol, Canned::text(502, "<html>Bad Gateway</html>")).await;
        assert_eq!(error.kind, FailureKind::Http { status: 502 });
        assert_eq!(error.message, "HTTP 502 Bad Gateway: <html>Bad Gateway</html>");
        let (error, _) = failure(protocol, Canned::text(418, "teapot")).await;
        assert_eq!(error.class(), FailureClass::Advance, "any other status advances");
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::Silent).await;
        let started = Instant::now();
        let error = summarize(&short(protocol, &server.base_url(protocol)))
            .await
            .unwrap_err();
        assert!(started.elapsed() >= SHORT_TIMEOUT);
        assert_eq!(error.kind, FailureKind::Timeout, "{}", error.message);
        assert_eq!(error.class(), FailureClass::Advance);
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn a_port_with_nothing_listening_is_a_connect_failure() {
    for protocol in PROTOCOLS {
        let addr = dead_addr().await;
        let error = summarize(&backend(protocol, &http_support::base_url(protocol, addr)))
            .await
            .unwrap_err();
        assert_eq!(error.kind, FailureKind::Connect, "{}", error.message);
        assert_eq!(error.class(), FailureClass::RetrySame);
    }
}

#[tokio::test]
async fn a_reset_mid_body_retries_the_same() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::ResetMidBody).await;
        let error = summarize(&backend(protocol, &server.base_url(protocol)))
            .await
            .unwrap_err();
        assert_eq!(error.kind, FailureKind::Other, "{}", error.message);
        assert_eq!(error.class(), FailureClass::RetrySame);
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn a_slow_body_runs_into_the_overall_timeout() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::Trickle).await;
        let error = summarize(&short(protocol, &server.base_url(protocol)))
            .await
            .unwrap_err();
        assert_eq!(error.kind, FailureKind::Timeout, "{}", error.message);
        assert_eq!(error.class(), FailureClass::Advance);
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn unparsable_answers_advance() {
    for protocol in PROTOCOLS {
        let (error, count) = failure(protocol, Canned::text(200, "<html>captive portal</html>")).await;
        assert_eq!(
            (error.kind.clone(), error.class(), count),
            (FailureKind::Parse, FailureClass::Advance, 1)
        );

        let no_text = match protocol {
            Protocol::OpenAi => json!({"choices": [{"message": {"role": "assistant"}}], "usage": {"prompt_tokens": 9}}),
            Protocol::Anthropic => json!({"id": "msg", "usage": {"input_tokens": 9, "output_tokens": 0}}),
        };
        let (error, count) = failure(protocol, Canned::json(200, no_text)).await;
        assert_eq!(
            (error.kind.clone(), count),
            (FailureKind::Parse, 1),
            "{}",
            error.message
        );
        assert_eq!(
            error.usage.input_tokens, 9,
            "a failed call still reports what it was billed"
        );
    }
}

#[tokio::test]
async fn an_empty_completion_is_a_response_failure() {
    for protocol in PROTOCOLS {
        let (error, count) = failure(protocol, success(protocol, " \n ", false)).await;
        assert_eq!(error.kind, FailureKind::Empty);
        assert_eq!(error.class(), FailureClass::Response);
        assert_eq!(error.usage.output_tokens, 80);
        assert_eq!(count, 1);
    }
}

#[tokio::test]
async fn a_cancel_ends_a_request_promptly() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::Silent).await;
        let backend = builder(protocol, &server.base_url(protocol))
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let cancel = CancellationToken::new();
        let received = server.received.clone();
        let trigger = cancel.clone();
        let cancelled_at = tokio::spawn(async move {
            received.notified().await;
            trigger.cancel();
            Instant::now()
        });
        let error = backend.summarize(request(), &cancel).await.unwrap_err();
        let returned = Instant::now();
        let elapsed = returned - cancelled_at.await.unwrap();
        assert_eq!(error.kind, FailureKind::Cancelled);
        assert!(
            elapsed < Duration::from_millis(250),
            "took {elapsed:?} after the cancel"
        );
        assert_eq!(server.count(), 1);
    }
}

#[tokio::test]
async fn an_already_cancelled_token_sends_nothing() {
    for protocol in PROTOCOLS {
        let server = Server::always(success(protocol, "ok", false)).await;
        let cancel = CancellationToken::new();
        cancel.cancel();
        let error = backend(protocol, &server.base_url(protocol))
            .summarize(request(), &cancel)
            .await
            .unwrap_err();
        assert_eq!(error.kind, FailureKind::Cancelled);
        assert_eq!(server.count(), 0);
    }
}

#[tokio::test]
async fn context_length_errors_are_recognised_for_each_family() {
    let cases = [
        // OpenAI (and OpenRouter, Azure): the code.
        (
            Protocol::OpenAi,
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130567 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        ),
        // vLLM.
        (
            Protocol::OpenAi,
            400,
            json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4608 in the messages, 512 in the completion).", "type": "BadRequestError", "param": null, "code": 400}),
        ),
        // llama.cpp server.
        (
            Protocol::OpenAi,
            400,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}),
        ),
        // Ollama.
        (
            Protocol::OpenAi,
            400,
            json!({"error": "input length exceeds the context length"}),
        ),
        // Anthropic.
        (
            Protocol::Anthropic,
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208511 tokens > 200000 maximum"}}),
        ),
        (
            Protocol::Anthropic,
            413,
            json!({"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum allowed number of bytes."}}),
        ),
    ];
    for (protocol, status, body) in cases {
        let (error, count) = failure(protocol, Canned::json(status, body.clone())).await;
        assert_eq!(
            error.kind,
            FailureKind::ContextLengthExceeded { status: Some(status) },
            "{body}"
        );
        assert_eq!(error.kind.status(), Some(status));
        assert_eq!(error.class(), FailureClass::Abort);
        assert_eq!(count, 1);
    }
    // An ordinary 400 stays an ordinary 400.
    let (error, _) = failure(
        Protocol::OpenAi,
        error(
            Protocol::OpenAi,
            400,
            "invalid_request_error",
            "max_tokens must be <= 8192",
        ),
    )
    .await;
    assert_eq!(error.kind, FailureKind::Http { status: 400 });
}

#[tokio::test]
async fn the_key_never_leaks() {
    for protocol in PROTOCOLS {
        // A server that echoes the key back in its error, as some do.
        let echo = error(
            protocol,
            401,
            "authentication_error",
            &format!("Incorrect API key provided: {KEY}."),
        );
        let server = Server::always(echo).await;
        let backend = builder(protocol, &server.base_url(protocol))
            .header("X-Proxy-Token", "proxy-SECRET-abc")
            .build()
            .unwrap();
        let error = summarize(&backend).await.unwrap_err();
        assert_eq!(error.kind, FailureKind::Http { status: 401 });
        for text in [
            error.message.clone(),
            error.to_string(),
            format!("{error:?}"),
            format!("{backend:?}"),
            format!(
                "{:?}",
                builder(protocol, "http://127.0.0.1:1").header("X-Proxy-Token", "proxy-SECRET-abc")
            ),
        ] {
            assert!(!text.contains("SECRET"), "leaked: {text}");
        }
        assert!(
            error.message.contains("Incorrect API key provided: ***"),
            "{}",
            error.message
        );
    }
}

#[tokio::test]
async fn keys_come_from_the_named_variable() {
    let server = Server::always(success(Protocol::OpenAi, "ok", false)).await;
    let base = server.base_url(Protocol::OpenAi);
    let from_env = |name: &str| (name == "MY_GATEWAY_KEY").then(|| "gw-key".to_owned());
    let backend = HttpBackend::openai("m")
        .base_url(&base)
        .api_key_env("MY_GATEWAY_KEY")
        .build_with_env(from_env)
        .unwrap();
    summarize(&backend).await.unwrap();
    assert_eq!(server.requests()[0].headers["authorization"], "Bearer gw-key");

    // A local OpenAI-compatible server needs no key: the default variable may be unset.
    let keyless = HttpBackend::openai("m")
        .base_url(&base)
        .build_with_env(|_| None)
        .unwrap();
    assert!(!keyless.has_api_key());
    summarize(&keyless).await.unwrap();
    assert!(server.requests()[1].headers.get("authorization").is_none());
    assert_eq!(server.count(), 2);

    let missing = HttpBackend::openai("m")
        .api_key_env("NOT_SET_ANYWHERE")
        .build_with_env(|_| None)
        .unwrap_err();
    assert_eq!(
        missing,
        HttpConfigError::MissingApiKey {
            env: "NOT_SET_ANYWHERE".into()
        }
    );
    let anthropic = HttpBackend::anthropic("claude-x").build_with_env(|_| None).unwrap_err();
    assert_eq!(
        anthropic,
        HttpConfigError::MissingApiKey {
            env: "ANTHROPIC_API_KEY".into()
        }
    );
}

#[tokio::test]
async fn chat_sends_a_whole_conversation() {
    let server = Server::always(success(Protocol::Anthropic, "Paris.", false)).await;
    let backend = backend(Protocol::Anthropic, &server.base_url(Protocol::Anthropic));
    let messages = [Message::system("Be terse."), Message::user("Capital of France?")];
    let reply = backend
        .chat("", &messages, 16, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.text, "Paris.");
    let body = &server.requests()[0].body;
    assert_eq!(body["system"], "Be terse.");
    assert_eq!(body["max_tokens"], 16);
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn builder_validation_and_defaults() {
    let bad = HttpBackend::openai("m")
        .base_url("ftp://example.com")
        .build_with_env(|_| None)
        .unwrap_err();
    assert!(matches!(bad, HttpConfigError::InvalidBaseUrl { .. }));
    let creds = HttpBackend::openai("m")
        .base_url("http://user:pw@host/v1")
        .build_with_env(|_| None)
        .unwrap_err();
    assert!(!creds.to_string().contains("pw"), "{creds}");
    assert_eq!(
        HttpBackend::openai(" ").build_with_env(|_| None).unwrap_err(),
        HttpConfigError::EmptyModel
    );
    let zero = HttpBackend::openai("m")
        .timeout(Duration::ZERO)
        .build_with_env(|_| None)
        .unwrap_err();
    assert_eq!(zero, HttpConfigError::ZeroTimeout { which: "overall" });
    let header = HttpBackend::openai("m")
        .header("bad header", "x")
        .build_with_env(|_| None)
        .unwrap_err();
    assert!(matches!(header, HttpConfigError::InvalidHeader { .. }));

    let openai = HttpBackend::openai("gpt-4o-mini").build_with_env(|_| None).unwrap();
    assert_eq!(openai.endpoint(), "https://api.openai.com/v1/chat/completions");
    assert_eq!(
        (openai.name(), openai.input_room()),
        ("openai:gpt-4o-mini", Some(112_000))
    );
    let anthropic = HttpBackend::anthropic("claude-sonnet-4-5")
        .build_with_env(|_| Some("k".into()))
        .unwrap();
    assert_eq!(anthropic.endpoint(), "https://api.anthropic.com/v1/messages");
    assert_eq!(anthropic.input_room(), Some(184_000));
    let with_v1 = HttpBackend::anthropic("c")
        .base_url("https://proxy.example/v1/")
        .build_with_env(|_| Some("k".into()))
        .unwrap();
    assert_eq!(with_v1.endpoint(), "https://proxy.example/v1/messages");
    let local = HttpBackend::openai("qwen3:8b")
        .base_url("http://localhost:11434/v1")
        .build_with_env(|_| None)
        .unwrap();
    assert_eq!(local.input_room(), Some(6_000), "unknown models get a small, safe room");
}
