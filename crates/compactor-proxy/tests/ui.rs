//! The inspector (`--ui`): off by default (404, and nothing goes upstream); on, it lists
//! the sessions and shows each one's report, live, without a key or a header value and
//! with the conversation's markup escaped; and in a real browser (Chromium through
//! Playwright) its pages load nothing but themselves, draw the chart, and match the
//! store's transcript.

use crate::browser;
use crate::support;

use std::sync::Arc;

use compactor_proxy::ProxyConfig;
use compactor_report::{ReportOptions, report_of_jsonl};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};
use support::{client, proxy, proxy_with, upstream};

const KEY: &str = "sk-test-SECRET-KEY-0123456789";
const HEADER_VALUE: &str = "HEADER-VALUE-should-never-show";
const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";
const SESSION: &str = "inspected";

async fn get(url: &str) -> reqwest::Response {
    client().get(url).send().await.unwrap()
}

#[tokio::test]
async fn the_inspector_is_off_unless_asked_for() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 10_000, Arc::new(MemoryStore::new())).await;
    for path in ["/ui", "/ui/", "/ui/session/anything"] {
        let response = get(&format!("{}{path}", proxy.url())).await;
        assert_eq!(response.status(), 404, "{path}");
    }
    assert!(up.received().is_empty(), "/ui is never passed upstream");
}

/// A proxy with the inspector on, its compactor summarizing with the ledger under a small
/// budget, and one session driven through it with a key, an extra header, and markup in
/// every message, until it has compacted.
async fn inspected() -> (support::Upstream, support::Proxy) {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let config = CompactorConfig::builder(2_000).keep_recent(4).build().unwrap();
    let compactor =
        Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)));
    let proxy = proxy_with(
        ProxyConfig::builder(&up.url(), compactor, store.clone()).ui(true),
        store,
    )
    .await;
    let mut messages = vec![json!({"role": "system", "content": "You are an agent."})];
    for i in 0..30 {
        messages.push(json!({"role": "user", "content": format!("question {i} {HOSTILE} {}", "q".repeat(300))}));
        let answer: Value = client()
            .post(format!("{}/v1/chat/completions", proxy.url()))
            .header("x-compactor-session", SESSION)
            .header("x-custom-header", HEADER_VALUE)
            .bearer_auth(KEY)
            .json(&json!({"model": "m", "messages": messages}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        messages.push(answer["choices"][0]["message"].clone());
    }
    let exported = export_jsonl(proxy.store.as_ref(), SESSION).await.unwrap();
    assert!(exported.contains("\"type\":\"compaction\""), "the session compacted");
    (up, proxy)
}

#[tokio::test]
async fn the_inspector_shows_sessions_and_reports_without_keys_or_headers() {
    let (_up, proxy) = inspected().await;
    let index = get(&format!("{}/ui", proxy.url())).await;
    assert_eq!(index.status(), 200);
    let csp = index.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    let index = index.text().await.unwrap();
    assert!(index.contains(&format!("href=\"/ui/session/{SESSION}\"")), "{index}");
    assert!(
        index.contains("named by the client (header:x-compactor-session)"),
        "{index}"
    );
    // A session a known client named with its own id says so (the tier recorded in the
    // session's meta line, not guessed from the key).
    let answered = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .header("x-claude-code-session-id", "cc-1")
        .bearer_auth(KEY)
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let index = get(&format!("{}/ui", proxy.url())).await.text().await.unwrap();
    assert!(
        index.contains("the session id the client sends (header:x-claude-code-session-id)"),
        "{index}"
    );

    let page = get(&format!("{}/ui/session/{SESSION}", proxy.url())).await;
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = page.text().await.unwrap();
    assert!(
        page.contains("class=\"pass-row compaction\""),
        "a compaction in the pass table"
    );
    assert!(page.contains("href=\"/ui\""), "a way back to the list");
    for html in [&index, &page] {
        for secret in [KEY, HEADER_VALUE, "Bearer"] {
            assert!(!html.contains(secret), "{secret} shown");
        }
        assert!(!html.contains("<img") && !html.contains("<script"), "markup is escaped");
    }
    assert!(
        page.contains("&#60;img src=x onerror=alert(1)&#62;"),
        "and shown as text"
    );
    let missing = get(&format!("{}/ui/session/no-such-session", proxy.url())).await;
    assert_eq!(missing.status(), 404);

    // A key with a slash, a space and markup is one path segment, and text on the page.
    let odd = "team a/run <7>";
    let answer = client()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .header("x-compactor-session", odd)
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let index = get(&format!("{}/ui", proxy.url())).await.text().await.unwrap();
    let href = "/ui/session/team%20a%2Frun%20%3C7%3E";
    assert!(index.contains(&format!("href=\"{href}\"")), "{index}");
    assert!(index.contains("team a/run &#60;7&#62;"));
    let page = get(&format!("{}{href}", proxy.url())).await;
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("team a/run &#60;7&#62;"));
}

// Multi-threaded: the browser is driven by a blocking child process while the proxy
// serves it from this runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_inspector_in_a_browser() {
    if browser::browser().is_none() {
        return;
    }
    let (_up, proxy) = inspected().await;
    let origin = format!("{}/", proxy.url());
    let index = browser::check_page(&format!("{}/ui", proxy.url()));
    assert_eq!(index["status"], 200);
    assert_eq!(index["console_errors"], json!([]));
    let requests = index["requests"].as_array().unwrap();
    assert!(
        requests.iter().all(|r| r.as_str().unwrap().starts_with(&origin)),
        "{requests:?}"
    );
    let sessions = index["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["key"], SESSION);
    let href = sessions[0]["href"].as_str().unwrap();

    // The session's page is the report of the store's transcript, as it is now.
    let seen = browser::check_page(&format!("{}{href}", proxy.url()));
    let exported = export_jsonl(proxy.store.as_ref(), SESSION).await.unwrap();
    let compactor = CompactorConfig::builder(2_000).keep_recent(4).build().unwrap();
    let report = report_of_jsonl(
        SESSION,
        exported.as_bytes(),
        &ReportOptions::new(Arc::new(HeuristicCounter)).limits_of(&compactor),
    )
    .unwrap();
    assert!(!report.passes.is_empty());
    browser::assert_page(&seen, &report, &origin);
    assert_eq!(
        sessions[0]["requests"].as_str().unwrap(),
        report.totals.requests.to_string(),
        "the list's numbers are the report's"
    );
}

/// Issue 44: the inspector shows every conversation, so on an address other than
/// loopback the proxy refuses to serve it without a token; with one, `/ui` answers 401
/// until the token is presented (as a bearer token or a browser's Basic login).
#[tokio::test]
async fn the_inspector_needs_a_token_off_loopback_and_checks_it() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let open = ProxyConfig::builder(&up.url(), support::compactor(10_000), store.clone())
        .ui(true)
        .build()
        .unwrap();
    let exposed = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let refused = compactor_proxy::serve(open, exposed, std::future::pending()).await;
    let problem = refused.expect_err("refused to start").to_string();
    assert!(problem.contains("--ui-token-env"), "{problem}");

    let guarded = ProxyConfig::builder(&up.url(), support::compactor(10_000), store.clone())
        .ui(true)
        .ui_token(Some("tok-123".into()));
    let proxy = proxy_with(guarded, store).await;
    for path in ["/ui", "/ui/session/x"] {
        let url = format!("{}{path}", proxy.url());
        let response = get(&url).await;
        assert_eq!(response.status(), 401, "{path}");
        assert!(response.headers().contains_key("www-authenticate"));
        let wrong = client().get(&url).bearer_auth("tok-12").send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{path}");
    }
    let ok = client()
        .get(format!("{}/ui", proxy.url()))
        .bearer_auth("tok-123")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let basic = client()
        .get(format!("{}/ui", proxy.url()))
        .basic_auth("me", Some("tok-123"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 200);
    assert!(up.received().is_empty(), "/ui is never passed upstream");
}
