//! `--expand-tool` through a real proxy and a scripted upstream on 127.0.0.1: after a
//! compaction the scripted model (`expander`) asks `compactor_expand` for the handle a
//! stub names, the proxy answers from the store and asks again, and the client receives
//! one ordinary answer. The original bytes reach the model; the hidden turns are kept
//! for the next request and recorded, so export + replay is what the upstream saw; a
//! handle of another session is not found.

use crate::support;

use std::sync::Arc;

use compactor_proxy::{ExpandTool, ProxyConfig};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::session::expand_in;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Compactor, CompactorConfig, Message, Role};
use serde_json::{Value, json};
use support::{EXPAND_TOOL, Received, metric, metrics, offers_expand, upstream};

/// Budget of these runs (heuristic tokens).
const BUDGET: usize = 3_000;

/// A compactor that names handles (`expand`), summarizes with the ledger.
pub fn expanding_compactor(budget: usize) -> Arc<Compactor> {
    let config = CompactorConfig::builder(budget)
        .keep_recent(4)
        .expand(true)
        .build()
        .unwrap();
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)))
}

/// A proxy with `--expand-tool` in front of `up`.
pub async fn expanding_proxy(up: &str, store: Arc<dyn SessionStore>) -> support::Proxy {
    let builder =
        ProxyConfig::builder(up, expanding_compactor(BUDGET), store.clone()).expand_tool(Some(ExpandTool::default()));
    support::proxy_with(builder, store).await
}

pub(crate) fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "bash", "description": "Run a command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}])
}

/// Round `i` of an agent's work: a command and its long output, which names `tag`.
pub(crate) fn round(i: usize, tag: &str) -> [Value; 2] {
    let id = format!("call_{i}");
    let filler: String = (0..60)
        .map(|n| format!("{tag} step {i} line {n}: applied ok\n"))
        .collect();
    [
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
               "function": {"name": "bash", "arguments": format!("{{\"cmd\":\"./migrate --step {i}\"}}")}}]}),
        json!({"role": "tool", "tool_call_id": id, "content": format!("{tag}-{i}: migration step {i} output\n{filler}")}),
    ]
}

pub(crate) async fn post(proxy: &str, session: &str, body: &Value) -> reqwest::Response {
    support::client()
        .post(format!("{proxy}/v1/chat/completions"))
        .header("x-compactor-session", session)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The client's rounds until the proxy offered the tool (and the model used it); the
/// answer of that round, and the history the client sent in it.
pub(crate) async fn play_until_expanded(
    proxy: &str,
    session: &str,
    tag: &str,
    up: &support::Upstream,
    ask: Option<&str>,
) -> (Value, Vec<Value>) {
    play_model_until_offered(proxy, session, tag, up, ask, "expander").await
}

/// [`play_until_expanded`] with scripted `model`: the rounds until a request offered the
/// tool.
pub(crate) async fn play_model_until_offered(
    proxy: &str,
    session: &str,
    tag: &str,
    up: &support::Upstream,
    ask: Option<&str>,
    model: &str,
) -> (Value, Vec<Value>) {
    let mut history = vec![
        json!({"role": "system", "content": "You are a careful migration agent."}),
        json!({"role": "user", "content": "Run the migrations and fix what fails."}),
    ];
    for i in 0..40 {
        history.extend(round(i, tag));
        if let Some(ask) = ask {
            history.push(json!({"role": "user", "content": ask}));
        }
        let before = up.received().len();
        let body = json!({"model": model, "messages": history, "tools": tools()});
        let answer: Value = post(proxy, session, &body).await.json().await.unwrap();
        if up.received()[before..].iter().any(|r| offers_expand(&r.body)) {
            return (answer, history);
        }
        if ask.is_some() {
            history.pop();
        }
    }
    panic!("the proxy never offered {EXPAND_TOOL}");
}

/// The first expansion the upstream received: the index of the request the model
/// answered with the call, the follow-up carrying the call and its result, and the
/// handle the call asked for.
pub(crate) fn expansion_pair(received: &[Received]) -> (usize, &Received, String) {
    let j = received
        .iter()
        .position(|r| {
            r.messages()
                .last()
                .is_some_and(|m| m.role == Role::Tool && m.content.text().starts_with("=== #"))
        })
        .expect("an expansion reached the upstream");
    let messages = received[j].messages();
    let call = &messages[messages.len() - 2].tool_calls[0];
    assert_eq!(call.name, EXPAND_TOOL);
    let handle = llm_compactor::session::requested_handles(&call.arguments).remove(0);
    (j - 1, &received[j], handle)
}

async fn originals(store: &dyn SessionStore, session: &str) -> Vec<Message> {
    let key = store
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.session)
        .find(|s| s.starts_with(session))
        .unwrap();
    support::stored_transcript(store, &key).await.originals()
}

#[tokio::test]
async fn the_model_reads_back_a_replaced_message_and_the_client_sees_one_ordinary_answer() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = expanding_proxy(&up.url(), store.clone()).await;
    let (answer, mut history) = play_until_expanded(&proxy.url(), "s1", "PROBE", &up, None).await;

    // The client: one assistant message, text, no tool call, an ordinary finish.
    let message = &answer["choices"][0]["message"];
    assert!(
        message["content"].as_str().unwrap().starts_with("read back: === #"),
        "{answer}"
    );
    assert!(message.get("tool_calls").is_none_or(Value::is_null), "{answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert!(
        !answer.to_string().contains(EXPAND_TOOL),
        "no trace of the tool reaches the client"
    );

    // The upstream: the call, then its result holding the original bytes.
    let received = up.received();
    let (k, follow_up, handle) = expansion_pair(&received);
    let messages = follow_up.messages();
    let result = &messages[messages.len() - 1];
    assert_eq!(Some(&handle), support::wanted_handle(&received[k].messages()).as_ref());
    let expanded = expand_in(&originals(store.as_ref(), "s1").await, &handle).expect("the handle is the session's");
    assert_eq!(result.role, Role::Tool);
    for original in &expanded.messages {
        assert!(
            result.content.text().contains(&original.content.text()),
            "the original's bytes reach the model"
        );
    }
    assert!(
        result.content.text().contains("PROBE-"),
        "a replaced tool output comes back"
    );
    assert_eq!(messages.len(), received[k].messages().len() + 2);

    // The next round: the client's history (without the hidden turns) goes upstream with
    // them in place, after the same prefix.
    history.push(message.clone());
    history.push(json!({"role": "user", "content": "Good. Go on."}));
    let body = json!({"model": "expander", "messages": history, "tools": tools()});
    let next: Value = post(&proxy.url(), "s1", &body).await.json().await.unwrap();
    assert!(next["choices"][0]["message"]["content"].is_string());
    let received = up.received();
    let last = received.last().unwrap();
    let (sent, seen) = (last.wire_conversation(), follow_up.wire_conversation());
    assert_eq!(&sent[..seen.len()], seen, "the hidden turns stay in the prefix");

    // Export + replay is what the upstream last saw; the counters say what happened.
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "never started over: {sessions:?}");
    let replayed = support::replayed(store.as_ref(), &sessions[0].session).await;
    assert_eq!(
        replayed,
        last.messages(),
        "export + replay equals what the upstream last saw"
    );
    let text = metrics(&proxy.url()).await;
    assert_eq!(metric(&text, "compactor_proxy_expand_calls_total"), 1.0);
    assert_eq!(metric(&text, "compactor_proxy_expand_followups_total"), 1.0);
}

#[tokio::test]
async fn a_streamed_answer_hides_the_call_and_streams_the_follow_up() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = expanding_proxy(&up.url(), store.clone()).await;
    let mut history = vec![json!({"role": "user", "content": "Run the migrations."})];
    for i in 0..40 {
        history.extend(round(i, "PROBE"));
        let before = up.received().len();
        let body = json!({"model": "expander", "messages": history, "tools": tools(), "stream": true});
        let text = post(&proxy.url(), "s1", &body).await.text().await.unwrap();
        if !up.received()[before..].iter().any(|r| offers_expand(&r.body)) {
            continue;
        }
        assert!(!text.contains(EXPAND_TOOL), "no call reaches the client:\n{text}");
        assert!(!text.contains("tool_calls"), "no call at all:\n{text}");
        assert_eq!(text.matches("data: [DONE]").count(), 1, "one stream:\n{text}");
        let content: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect();
        assert!(content.starts_with("read back: === #"), "{content}");
        return;
    }
    panic!("the proxy never offered {EXPAND_TOOL}");
}

#[tokio::test]
async fn a_handle_of_another_session_is_not_found() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = expanding_proxy(&up.url(), store.clone()).await;
    play_until_expanded(&proxy.url(), "s1", "PROBE", &up, None).await;
    let foreign = expansion_pair(&up.received()).2;
    let up2 = upstream().await;
    let proxy2 = expanding_proxy(&up2.url(), store.clone()).await;
    let ask = format!("Now expand {foreign} and also expand #0123456789.");
    let (answer, _) = play_until_expanded(&proxy2.url(), "s2", "OTHER", &up2, Some(&ask)).await;
    assert!(answer.to_string().contains("not found in this session"), "{answer}");
    let received = up2.received();
    let (_, follow_up, _) = expansion_pair(&received);
    let result = follow_up.messages().last().unwrap().content.text();
    assert!(
        result.contains(&format!("=== {foreign}: not found in this session ===")),
        "{result}"
    );
    assert!(!result.contains("PROBE"), "nothing of the other session");
}

/// `messages` without the codecs' hint extras (`_llm_compactor_*`) and breakpoints.
fn without_hints(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .map(|mut m| {
            m.extras
                .retain(|k, _| !k.starts_with("_llm_compactor") && k != "cache_control");
            m
        })
        .collect()
}

/// The official SDKs, streamed and not, on the three routes: each reads one ordinary
/// answer after an expansion the proxy answered (tests/py/expand_clients.py).
#[tokio::test]
async fn the_official_sdks_see_no_trace_of_an_expansion_on_any_route() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = expanding_proxy(&up.url(), store.clone()).await;
    let out = support::run_python(&python, "expand_clients.py", &[], &[("PROXY", proxy.url())]).await;
    for route in ["chat", "responses", "messages"] {
        for stream in ["False", "True"] {
            for model in ["expander", "expander-chatty"] {
                let line = format!("{route} stream={stream} {model} ok");
                assert!(out.contains(&line), "{line}:\n{out}");
            }
        }
    }
    let text = metrics(&proxy.url()).await;
    assert_eq!(metric(&text, "compactor_proxy_expand_calls_total"), 12.0, "{text}");
    // Each session's transcript replays to what its upstream saw.
    let received = up.received();
    for session in store.sessions().await.unwrap() {
        let exported = export_jsonl(store.as_ref(), &session.session).await.unwrap();
        assert!(
            !exported.contains("sk-test") && !exported.contains("sk-ant"),
            "no credential in the store"
        );
        let replayed = support::replayed(store.as_ref(), &session.session).await;
        // (The proxy does not forward its session header: the transcript is matched
        // against every request the upstream received.)
        assert!(
            !session.session.contains('~'),
            "never started over: {}",
            session.session
        );
        // (Compared without the codecs' own bookkeeping — the Messages importer numbers
        // the wire turn each message came from, which a rewrite renumbers — and without
        // the cache breakpoints `--anthropic-cache auto` places on the way out, which
        // are a wire option placed on every request, not part of the conversation.)
        let replayed = without_hints(replayed);
        assert!(
            received.iter().any(|r| without_hints(r.messages()) == replayed),
            "{}: export + replay is a request the upstream saw",
            session.session
        );
    }
}

/// A real trajectory (the longest tau-bench run) played by the official `openai` SDK
/// through a proxy with `--expand-tool`: after the first compaction the scripted model
/// reads back the message behind a handle the conversation names and must receive its
/// original bytes; then the trajectory goes on. The client's rounds are the trajectory's,
/// every request stays within the budget with no orphan, and export + replay is what
/// the upstream last saw.
#[tokio::test]
async fn a_real_trajectory_expands_a_handle_through_the_proxy() {
    let Some(python) = support::python() else { return };
    let Some(traj) = crate::sdk::trajectory() else { return };
    let up = upstream().await;
    up.script
        .replay_expands
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let replies: Vec<Value> = traj.iter().filter(|m| m["role"] == "assistant").cloned().collect();
    up.script.replies.lock().unwrap().extend(replies.clone());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 4_000;
    let builder = ProxyConfig::builder(&up.url(), expanding_compactor(budget), store.clone())
        .expand_tool(Some(ExpandTool::default()));
    let proxy = support::proxy_with(builder, store.clone()).await;
    // The tools the run called, declared as its agent would (the proxy offers
    // `compactor_expand` only beside tools of the client's own).
    let mut names: Vec<&str> = traj
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["function"]["name"].as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let tools: Vec<Value> = names
        .iter()
        .map(|name| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}))
        .collect();
    crate::sdk::play_trajectory(&python, &proxy.url(), &traj, &tools, replies.len()).await;
    let received = up.received();
    // The model reads back once per epoch (a later pass may summarize what it read).
    let followups = received.len() - replies.len();
    assert!(followups >= 1, "a hidden follow-up");
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&text, "compactor_proxy_expand_followups_total") as usize,
        followups
    );
    let (k, follow_up, handle) = expansion_pair(&received);
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "never started over: {sessions:?}");
    let expanded = expand_in(&originals(store.as_ref(), &sessions[0].session).await, &handle).unwrap();
    let result = follow_up.messages().last().unwrap().content.text();
    let mut checked = 0;
    for original in expanded.messages.iter().filter(|m| !m.content.text().is_empty()) {
        assert!(
            result.contains(&original.content.text()),
            "the original bytes of {handle} reach the model"
        );
        checked += 1;
    }
    assert!(checked >= 1, "{handle} expands to a message with content");
    for (round, request) in received.iter().enumerate() {
        assert!(request.tokens() <= budget, "round {round}: {} tokens", request.tokens());
        crate::sdk::assert_no_orphans(&request.messages(), round);
    }
    let replayed = support::replayed(store.as_ref(), &sessions[0].session).await;
    assert_eq!(
        replayed,
        received.last().unwrap().messages(),
        "export + replay equals what the upstream last saw"
    );
    eprintln!(
        "trajectory with --expand-tool: {} client rounds, {followups} expansions, the first at upstream request {k} ({handle}, {} message(s))",
        replies.len(),
        expanded.messages.len()
    );
}
