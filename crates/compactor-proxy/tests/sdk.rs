//! The proxy as a user meets it: the official `openai` and `anthropic` Python SDKs
//! (from PyPI, in the venv `scripts/python-sdks.sh` makes) pointed at it, a scripted
//! upstream on 127.0.0.1 behind it, and a real agent trajectory replayed through it.

use crate::support;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Message, Role};
use serde_json::{Value, json};
use support::{metric, metrics, proxy, python, run_python, upstream};

/// A proxy whose upstream is down.
async fn dead_proxy() -> support::Proxy {
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    proxy(&url, 100_000, Arc::new(MemoryStore::new())).await
}

async fn sdk_checks(script: &str, header: fn(&support::Received) -> Option<String>, key: &str) {
    let Some(python) = python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 100_000, store.clone()).await;
    let dead = dead_proxy().await;
    let out = run_python(
        &python,
        script,
        &[],
        &[("PROXY", proxy.url()), ("DEAD_PROXY", dead.url())],
    )
    .await;
    for check in ["plain ok", "stream ok", "tools ok", "401 ok", "429 ok", "502 ok"] {
        assert!(out.contains(check), "{check} missing:\n{out}");
    }
    let received = up.received();
    if script == "openai_client.py" {
        assert!(out.contains("responses ok"), "responses ok missing:\n{out}");
        assert!(received.iter().any(|r| r.path == "/v1/responses"));
    }
    for r in &received {
        assert_eq!(
            header(r).as_deref(),
            Some(key),
            "the client's key reaches the upstream: {r:?}"
        );
    }
    for session in store.sessions().await.unwrap() {
        let exported = export_jsonl(store.as_ref(), &session.session).await.unwrap();
        assert!(!exported.contains(key), "no credential in the store");
    }
}

#[tokio::test]
async fn the_official_openai_sdk_works_through_the_proxy() {
    sdk_checks("openai_client.py", |r| r.authorization.clone(), "Bearer sk-test-openai").await;
}

#[tokio::test]
async fn the_official_anthropic_sdk_works_through_the_proxy() {
    // The SDK sends its key as `x-api-key` or (newer versions) as a bearer token.
    sdk_checks(
        "anthropic_client.py",
        |r| {
            r.api_key.clone().or_else(|| {
                r.authorization
                    .as_deref()
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .map(str::to_owned)
            })
        },
        "sk-ant-test",
    )
    .await;
}

fn data_dir() -> PathBuf {
    std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

/// The longest tau-bench airline trajectory (OpenAI messages with tool calls).
pub(crate) fn trajectory() -> Option<Vec<Value>> {
    let path = data_dir().join("trajectories/tau-bench/gpt-4o-airline.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("SKIPPED: no trajectory at {} (set LLM_COMPACTOR_DATA)", path.display());
        return None;
    };
    let runs: Vec<Value> = serde_json::from_str(&text).unwrap();
    runs.into_iter()
        .map(|run| run["traj"].as_array().cloned().unwrap_or_default())
        .max_by_key(|traj| serde_json::to_string(traj).unwrap().len())
}

/// Every tool result answers a call made earlier in the same request, and every call is
/// answered.
pub(crate) fn assert_no_orphans(messages: &[Message], round: usize) {
    let mut open: HashSet<String> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        if message.role == Role::Tool {
            let id = message.tool_call_id.clone().unwrap_or_default();
            assert!(
                open.remove(&id),
                "round {round}: message {i} answers unknown call {id:?}"
            );
        }
        for call in &message.tool_calls {
            open.insert(call.id.clone());
        }
    }
    assert!(open.is_empty(), "round {round}: unanswered calls {open:?}");
}

/// What a trajectory played through the proxy must show, whichever API it spoke
/// (`conversation`: the body's field holding the conversation): every request within
/// the budget with no orphan and no unanswered call, at least one compaction, the prefix
/// kept by at least 90% of the other rounds, one session that never started over, and
/// its transcript replaying to exactly what the upstream last saw.
async fn assert_run_kept_its_promises(
    proxy: &str,
    store: &dyn SessionStore,
    received: &[support::Received],
    budget: usize,
    conversation: &str,
) {
    for (round, request) in received.iter().enumerate() {
        assert!(
            request.tokens() <= budget,
            "round {round}: {} tokens over the budget",
            request.tokens()
        );
        assert_no_orphans(&request.messages(), round);
    }
    let compactions = metric(&metrics(proxy).await, "compactor_proxy_compactions_total") as usize;
    assert!(compactions >= 1, "a {budget}-token budget must compact this run");
    let shared = received
        .windows(2)
        .filter(|pair| {
            let (prev, next) = (
                pair[0].body[conversation].as_array().unwrap(),
                pair[1].body[conversation].as_array().unwrap(),
            );
            next.len() >= prev.len() && next[..prev.len()] == prev[..]
        })
        .count();
    let eligible = received.len() - 1 - compactions;
    assert!(
        shared * 10 >= eligible * 9,
        "only {shared} of {eligible} non-compaction rounds kept the previous prefix"
    );
    eprintln!(
        "trajectory ({conversation}): {} rounds, {compactions} compactions, {shared}/{eligible} prefix-stable",
        received.len()
    );
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "one session, never started over: {sessions:?}");
    let replayed = support::replayed(store, &sessions[0].session).await;
    assert_eq!(
        replayed,
        received.last().unwrap().messages(),
        "export + replay equals what the upstream last saw"
    );
}

/// Plays `traj` through the proxy at `proxy` with the official `openai` SDK, declaring
/// `tools` (`tests/py/trajectory_loop.py`), and checks it took `rounds` rounds.
pub(crate) async fn play_trajectory(python: &PathBuf, proxy: &str, traj: &[Value], tools: &[Value], rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("traj.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&json!({"messages": traj, "tools": tools})).unwrap(),
    )
    .unwrap();
    let out = run_python(
        python,
        "trajectory_loop.py",
        &[file.to_str().unwrap()],
        &[("PROXY", proxy.to_owned())],
    )
    .await;
    assert!(out.contains(&format!("rounds {rounds}")), "{out}");
}

/// Budget of the chat-trajectory replays.
const REPLAY_BUDGET: usize = 4_000;

/// The longest tau-bench trajectory played by the official `openai` SDK through a proxy
/// that `builder` configures (from the upstream's URL and the store; SQLite in a temp
/// dir), checked with [`assert_run_kept_its_promises`]. The proxy and the temp dir it
/// writes in, or `None` when the SDK venv or the data is absent (skipped).
async fn replayed_chat(
    builder: impl FnOnce(&str, Arc<dyn SessionStore>) -> compactor_proxy::ProxyConfigBuilder,
) -> Option<(support::Proxy, tempfile::TempDir)> {
    let python = python()?;
    let traj = trajectory()?;
    let up = upstream().await;
    let replies: Vec<Value> = traj.iter().filter(|m| m["role"] == "assistant").cloned().collect();
    up.script.replies.lock().unwrap().extend(replies.clone());
    let dir = tempfile::tempdir().unwrap();
    let store = llm_compactor::store::open_store(&format!("sqlite:{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let proxy = support::proxy_with(builder(&up.url(), store.clone()), store.clone()).await;
    play_trajectory(&python, &proxy.url(), &traj, &[], replies.len()).await;
    let received = up.received();
    assert_eq!(received.len(), replies.len());
    assert_run_kept_its_promises(&proxy.url(), store.as_ref(), &received, REPLAY_BUDGET, "messages").await;
    Some((proxy, dir))
}

#[tokio::test]
async fn a_real_trajectory_replayed_through_the_proxy_stays_in_budget_keeps_its_prefix_and_replays() {
    replayed_chat(|up, store| compactor_proxy::ProxyConfig::builder(up, support::compactor(REPLAY_BUDGET), store))
        .await;
}

/// The same trajectory and SDK through a proxy that prepares its passes in the background
/// (issue 28): the passes are installed from the preparation, and the run keeps the same
/// promises (in budget, no orphan, prefix kept, export + replay equals what the upstream
/// last saw).
#[tokio::test]
async fn a_real_trajectory_through_a_preparing_proxy_installs_prepared_passes() {
    let config = llm_compactor::CompactorConfig::builder(REPLAY_BUDGET)
        .keep_recent(4)
        .build()
        .unwrap();
    let compactor = Arc::new(
        llm_compactor::Compactor::new(config, Arc::new(llm_compactor::count::HeuristicCounter))
            .with_summarizer(Arc::new(llm_compactor::backend::LedgerSummarizer)),
    );
    let Some((proxy, _dir)) = replayed_chat(|up, store| {
        compactor_proxy::ProxyConfig::builder(up, compactor, store)
            .prepare(Some(compactor_proxy::PrepareConfig::default()))
    })
    .await
    else {
        return;
    };
    let text = metrics(&proxy.url()).await;
    let installed = metric(&text, "compactor_proxy_prepared_total{fate=\"installed\"}")
        + metric(&text, "compactor_proxy_prepared_total{fate=\"amended\"}");
    assert!(installed >= 1.0, "a prepared pass was installed:\n{text}");
}

/// One chat message of a trajectory as Responses input items (a system message is the
/// request's `instructions` instead).
fn as_items(message: &Value) -> Vec<Value> {
    let text = message["content"].as_str().unwrap_or_default();
    match message["role"].as_str() {
        Some("assistant") => {
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(json!({"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text, "annotations": []}]}));
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                items.push(json!({"type": "function_call", "call_id": call["id"],
                                  "name": call["function"]["name"], "arguments": call["function"]["arguments"]}));
            }
            items
        }
        Some("tool") => {
            vec![json!({"type": "function_call_output", "call_id": message["tool_call_id"], "output": text})]
        }
        _ => vec![json!({"role": "user", "content": [{"type": "input_text", "text": text}]})],
    }
}

/// The same real trajectory, played on the Responses API: the agent sends its whole,
/// growing `input` each round, as `client.responses.create` users do with `store: false`.
#[tokio::test]
async fn a_real_trajectory_on_the_responses_api_stays_in_budget_keeps_its_prefix_and_replays() {
    let Some(traj) = trajectory() else { return };
    let up = upstream().await;
    let replies: Vec<Value> = traj.iter().filter(|m| m["role"] == "assistant").cloned().collect();
    up.script.replies.lock().unwrap().extend(replies.clone());
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 4_000;
    let proxy = proxy(&up.url(), budget, store.clone()).await;
    let instructions = traj[0]["content"].as_str().unwrap().to_owned();
    assert_eq!(traj[0]["role"], "system");
    let mut i = traj.iter().position(|m| m["role"] == "assistant").unwrap();
    let mut input: Vec<Value> = traj[1..i].iter().flat_map(as_items).collect();
    while i < traj.len() {
        let body = json!({"model": "replay", "instructions": instructions, "input": input, "store": false});
        let r = support::client()
            .post(format!("{}/v1/responses", proxy.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "round at message {i}");
        let answer: Value = r.json().await.unwrap();
        input.extend(answer["output"].as_array().unwrap().iter().cloned());
        i += 1;
        while i < traj.len() && traj[i]["role"] != "assistant" {
            input.extend(as_items(&traj[i]));
            i += 1;
        }
    }
    let received = up.received();
    assert_eq!(received.len(), replies.len());
    for request in &received {
        assert_eq!(request.body["instructions"], instructions.as_str());
    }
    assert_run_kept_its_promises(&proxy.url(), store.as_ref(), &received, budget, "input").await;
}
