//! Prepared compaction in the proxy (issue 28), over real HTTP on 127.0.0.1: with
//! preparation on, rounds past the trigger go out while the summary is still held (no
//! round waits for it), the finished pass is installed at a later round through the
//! ordinary record (a `prepared-compaction` line, then the pass), counted in `/metrics`;
//! with `--summarizer-key client` the background summary request is the agent's request
//! as the upstream received it plus one instruction.

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use compactor_proxy::{ClientKeySummarizer, PrepareConfig, ProxyConfig};
use llm_compactor::backend::http::HttpBackend;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::summarize::{StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use llm_compactor::{Compactor, CompactorConfig, Usage};
use serde_json::{Value, json};
use support::{metric, metrics, post_chat, proxy_with, upstream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Answers only when the test releases it.
struct Gated {
    release: Semaphore,
}

#[async_trait]
impl Summarizer for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    async fn summarize(
        &self,
        _request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.release.acquire().await.unwrap().forget();
        Ok(SummaryReply::new(
            "The user asked questions; they were answered.",
            StopReason::Complete,
            Usage {
                input_tokens: 50,
                output_tokens: 10,
                ..Usage::default()
            },
        ))
    }
}

fn prepare() -> Option<PrepareConfig> {
    Some(PrepareConfig {
        ratio: 0.5,
        ..PrepareConfig::default()
    })
}

/// One round of the chat: the client's whole history, and the answer appended.
async fn round(proxy: &str, session: &str, key: Option<&str>, messages: &mut Vec<Value>, i: usize) {
    messages.push(json!({"role": "user", "content": format!("question {i}: {}", "q".repeat(300))}));
    let response = post_chat(proxy, session, key, &json!({"model": "m", "messages": messages})).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    messages.push(answer["choices"][0]["message"].clone());
}

fn prepared_total(text: &str, fate: &str) -> f64 {
    metric(text, &format!("compactor_proxy_prepared_total{{fate=\"{fate}\"}}"))
}

/// Prepared passes installed, as they were or amended.
fn installs(text: &str) -> f64 {
    prepared_total(text, "installed") + prepared_total(text, "amended")
}

/// A preparing proxy (4k budget, no aging) whose summarizer answers only when the test
/// releases it, in front of the scripted upstream, on its own store.
async fn gated_proxy() -> (support::Upstream, Arc<dyn SessionStore>, Arc<Gated>, support::Proxy) {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let gated = Arc::new(Gated {
        release: Semaphore::new(0),
    });
    let config = CompactorConfig::builder(4_000)
        .keep_recent(4)
        .age_observations(false)
        .build()
        .unwrap();
    let compactor = Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(gated.clone()));
    let builder = ProxyConfig::builder(&up.url(), compactor, store.clone()).prepare(prepare());
    let proxy = proxy_with(builder, store.clone()).await;
    (up, store, gated, proxy)
}

#[tokio::test]
async fn rounds_past_the_trigger_do_not_wait_for_the_summary_and_the_pass_is_installed_later() {
    let (up, store, gated, proxy) = gated_proxy().await;
    let mut messages = vec![json!({"role": "system", "content": "You are a terse assistant."})];
    let mut i = 0;
    // Up to the prepare threshold and well past the trigger (2,800) while the summary
    // is held: every round is answered (a round that waited would hang, and the client's
    // timeout would fail the test).
    while support::metric(
        &metrics(&proxy.url()).await,
        "compactor_proxy_prepared_total{fate=\"started\"}",
    ) < 1.0
    {
        round(&proxy.url(), "s", None, &mut messages, i).await;
        i += 1;
    }
    // Past the trigger (2,800), not past the budget (4,000): those rounds would wait.
    while up.received().last().unwrap().tokens() <= 2_900 {
        round(&proxy.url(), "s", None, &mut messages, i).await;
        i += 1;
        assert!(i < 200);
    }
    let held = up.received();
    assert!(
        held.last().unwrap().tokens() > 2_800,
        "past the trigger: {}",
        held.last().unwrap().tokens()
    );
    assert!(
        held.windows(2)
            .all(|p| p[1].wire_conversation().starts_with(p[0].wire_conversation())),
        "nothing was compacted while the summary was held"
    );
    assert_eq!(
        metric(&metrics(&proxy.url()).await, "compactor_proxy_compactions_total"),
        0.0
    );
    // The summary arrives; a later round installs the pass.
    gated.release.add_permits(1);
    let mut installed_at = None;
    for _ in 0..40 {
        round(&proxy.url(), "s", None, &mut messages, i).await;
        i += 1;
        if installs(&metrics(&proxy.url()).await) >= 1.0 {
            installed_at = Some(up.received().len() - 1);
            break;
        }
    }
    let at = installed_at.expect("the prepared pass was installed");
    let received = up.received();
    let sent = &received[at];
    assert!(
        sent.tokens() < received[at - 1].tokens(),
        "the install shrank the request"
    );
    assert!(
        sent.wire_conversation().iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("The user asked questions"))),
        "the prepared summary is in the request"
    );
    // Every round since the snapshot is kept verbatim after the summary: the last
    // client message is the last one sent.
    assert_eq!(
        sent.wire_conversation().last().unwrap()["content"],
        messages[messages.len() - 2]["content"]
    );
    let text = metrics(&proxy.url()).await;
    assert_eq!(metric(&text, "compactor_proxy_compactions_total"), 1.0);
    let exported = export_jsonl(store.as_ref(), "s").await.unwrap();
    let fates: Vec<&str> = exported
        .lines()
        .filter(|l| l.contains("\"type\":\"prepared-compaction\""))
        .collect();
    assert_eq!(fates.len(), 1, "{exported}");
    assert!(
        fates[0].contains("\"fate\":\"amended\""),
        "a newer request since the snapshot: {}",
        fates[0]
    );
    // The line comes before the pass it installed.
    let line_at = exported.find("\"type\":\"prepared-compaction\"").unwrap();
    let pass_at = exported.find("\"type\":\"compaction\"").unwrap();
    assert!(line_at < pass_at);
}

#[tokio::test]
async fn with_the_clients_key_the_background_summary_reads_the_agents_request() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let summarizer = ClientKeySummarizer::new(
        HttpBackend::openai("summarizer-model")
            .base_url(format!("{}/v1", up.url()))
            .no_api_key()
            .build()
            .unwrap(),
    );
    let config = CompactorConfig::builder(4_000)
        .keep_recent(4)
        .age_observations(false)
        .build()
        .unwrap();
    let compactor =
        Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(summarizer.clone())));
    let builder = ProxyConfig::builder(&up.url(), compactor, store.clone())
        .summarizer_key_from_client(&summarizer)
        .prepare(prepare());
    let proxy = proxy_with(builder, store.clone()).await;
    let mut messages = vec![json!({"role": "system", "content": "You are a terse assistant."})];
    for i in 0..40 {
        round(&proxy.url(), "c", Some("sk-client-1"), &mut messages, i).await;
        if installs(&metrics(&proxy.url()).await) >= 1.0 {
            break;
        }
    }
    let text = metrics(&proxy.url()).await;
    let exported = export_jsonl(store.as_ref(), "c").await.unwrap();
    let fates: Vec<&str> = exported.lines().filter(|l| l.contains("prepared-compaction")).collect();
    // A chat has a newer user request every round: the installs are amendments.
    assert!(installs(&text) >= 1.0, "{text}\n{fates:?}");
    let received = up.received();
    let (index, summary) = received
        .iter()
        .enumerate()
        .find(|(_, r)| {
            r.wire_conversation()
                .last()
                .and_then(|m| m["content"].as_str())
                .is_some_and(|c| c.contains("The conversation to summarize is everything above this message"))
        })
        .expect("a cache-reading summary request");
    // It is an agent request the upstream received, unchanged, plus the instruction.
    let agent = received[..index]
        .iter()
        .rev()
        .find(|r| r.body["model"] == "m")
        .expect("the agent's request before it");
    let sent = summary.wire_conversation();
    assert_eq!(&sent[..sent.len() - 1], agent.wire_conversation());
    assert_eq!(summary.body["model"], "m", "the agent's own model");
    assert_eq!(summary.authorization.as_deref(), Some("Bearer sk-client-1"));
    assert!(!exported.contains("sk-client"));
}

/// Issue 38: a history the client really edited goes on in a new transcript, but not as
/// a stranger. The new branch inherits what the session's bills taught its counter (here
/// 1,500 tokens of framing the messages do not show): counted raw, the edited request
/// went out billed over its 4,000 budget.
#[tokio::test]
async fn an_edited_history_keeps_the_calibration() {
    let up = upstream().await;
    up.script
        .usage_overhead
        .store(1_500, std::sync::atomic::Ordering::Relaxed);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = support::proxy(&up.url(), 4_000, store.clone()).await;
    let mut messages = vec![json!({"role": "system", "content": "You are a terse assistant."})];
    for i in 0..3 {
        round(&proxy.url(), "edit", None, &mut messages, i).await;
    }
    // The client edits its first question and sends a history of 2,600 tokens of
    // messages at once (a pasted log, say): under the trigger (2,800) counted raw, over
    // the budget as billed.
    messages[1] = json!({"role": "user", "content": "question 0, asked again differently"});
    let mut i = 3;
    let count = |messages: &[Value]| {
        let body = json!({"model": "m", "messages": messages});
        let parsed =
            llm_compactor::format::Document::from_value(body, Some(llm_compactor::format::Format::OpenAi), "r");
        llm_compactor::count::TokenCounter::count_messages(&HeuristicCounter, parsed.unwrap().messages())
    };
    while count(&messages) < 2_600 {
        messages.push(json!({"role": "user", "content": format!("note {i}: {}", "n".repeat(300))}));
        messages.push(json!({"role": "assistant", "content": format!("noted {i}")}));
        i += 1;
    }
    let response = post_chat(&proxy.url(), "edit", None, &json!({"model": "m", "messages": messages})).await;
    assert_eq!(response.status(), 200);
    let billed = up.received().last().unwrap().tokens() + 1_500;
    assert!(
        billed <= 4_000,
        "the edited request went out billed at {billed}, over its 4,000 budget"
    );
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 2, "the session and the branch its edit started");
}

/// A pass prepared for a history the client then edits cannot stand for the new one:
/// it is dropped and counted (`fate="abandoned"`).
#[tokio::test]
async fn an_edited_history_abandons_the_prepared_pass() {
    let (_up, _store, gated, proxy) = gated_proxy().await;
    let mut messages = vec![json!({"role": "system", "content": "You are a terse assistant."})];
    let mut i = 0;
    while prepared_total(&metrics(&proxy.url()).await, "started") < 1.0 {
        round(&proxy.url(), "abandon", None, &mut messages, i).await;
        i += 1;
        assert!(i < 40);
    }
    messages[1] = json!({"role": "user", "content": "question 0, asked again differently"});
    round(&proxy.url(), "abandon", None, &mut messages, i).await;
    let text = metrics(&proxy.url()).await;
    assert_eq!(prepared_total(&text, "abandoned"), 1.0, "{text}");
    gated.release.add_permits(100);
}
