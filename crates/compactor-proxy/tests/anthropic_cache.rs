//! Anthropic prompt caching through the proxy: a real trajectory replayed as a Messages
//! client against an upstream that bills the way Anthropic's cache does
//! (`support::anthropic_cache`). A client that marks no breakpoint reads nothing from the
//! cache without the proxy's `auto` placement and most of its input with it; a client
//! that marks its own sees them forwarded unchanged.

use crate::support;

use std::path::PathBuf;

use compactor_proxy::{ProxyConfig, WireOptions};
use llm_compactor::format::{Document, Format};
use llm_compactor::plan::breakpoints::{BreakpointPolicy, CacheMode, count_breakpoints};
use serde_json::{Value, json};
use support::anthropic_cache::{CacheUpstream, cache_upstream};
use support::{client, compactor, proxy_with};

fn data_dir() -> PathBuf {
    std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

/// The longest tau-bench airline trajectory, as an Anthropic `{system, messages}`.
pub(crate) fn trajectory() -> Option<Value> {
    let path = data_dir().join("trajectories/tau-bench/gpt-4o-airline.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("SKIPPED: no trajectory at {} (set LLM_COMPACTOR_DATA)", path.display());
        return None;
    };
    let runs: Vec<Value> = serde_json::from_str(&text).unwrap();
    let traj = runs
        .into_iter()
        .map(|run| run["traj"].as_array().cloned().unwrap_or_default())
        .max_by_key(|traj| serde_json::to_string(traj).unwrap().len())?;
    let document = Document::from_value(json!({ "messages": traj }), Some(Format::OpenAi), "traj").unwrap();
    Some(document.to_format_lossy(Format::Anthropic).unwrap().0)
}

pub(crate) fn tools() -> Value {
    json!([
        {"name":"get_reservation_details","description":"Get the details of a reservation by its id.","input_schema":{"type":"object","properties":{"reservation_id":{"type":"string"}},"required":["reservation_id"]}},
        {"name":"get_user_details","description":"Get the details of a user, with their reservations.","input_schema":{"type":"object","properties":{"user_id":{"type":"string"}},"required":["user_id"]}},
        {"name":"update_reservation_flights","description":"Change the flights of a reservation.","input_schema":{"type":"object","properties":{"reservation_id":{"type":"string"},"flights":{"type":"array"}},"required":["reservation_id","flights"]}}
    ])
}

/// Marks the last block of `system` and of the last message, as a careful client does.
fn with_client_marks(request: &mut Value) {
    let mark = json!({"type":"ephemeral"});
    if let Some(text) = request["system"].as_str().map(str::to_owned) {
        request["system"] = json!([{"type":"text","text":text,"cache_control":mark}]);
    }
    let last = request["messages"].as_array_mut().unwrap().last_mut().unwrap();
    if let Some(text) = last["content"].as_str().map(str::to_owned) {
        last["content"] = json!([{"type":"text","text":text}]);
    }
    let blocks = last["content"].as_array_mut().unwrap();
    let block = blocks.last_mut().unwrap();
    block["cache_control"] = mark;
}

/// Replays the trajectory through a proxy with `mode` and `budget`; every round sends
/// the whole history up to the next assistant turn. Returns what the client sent.
async fn replay(up: &CacheUpstream, mode: CacheMode, budget: usize, client_marks: bool) -> Vec<Value> {
    replay_into(up, mode, budget, client_marks).await.0
}

/// [`replay`], and the proxy's store.
async fn replay_into(
    up: &CacheUpstream,
    mode: CacheMode,
    budget: usize,
    client_marks: bool,
) -> (Vec<Value>, std::sync::Arc<dyn llm_compactor::store::SessionStore>) {
    let conversation = trajectory().unwrap();
    let store = llm_compactor::store::open_store("memory:").await.unwrap();
    let wire = WireOptions {
        anthropic_cache: BreakpointPolicy {
            mode,
            ..BreakpointPolicy::default()
        },
        ..WireOptions::default()
    };
    let builder = ProxyConfig::builder(&up.url(), compactor(budget), store.clone()).wire(wire);
    let proxy = proxy_with(builder, store.clone()).await;
    let messages = conversation["messages"].as_array().unwrap();
    let mut sent = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        let mut request = json!({"model":"claude-sonnet-4-5","max_tokens":1024,"tools":tools(),
            "system": conversation["system"], "messages": messages[..i]});
        if client_marks {
            with_client_marks(&mut request);
        }
        let response = client()
            .post(format!("{}/v1/messages", proxy.url()))
            .header("x-api-key", "sk-ant-test")
            .header(
                "x-claude-code-session-id",
                format!("cache-{mode:?}-{budget}-{client_marks}"),
            )
            .json(&request)
            .send()
            .await
            .unwrap();
        assert!(response.headers().contains_key(compactor_proxy::OVERHEAD_HEADER));
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "round {i}: {status} {body}");
        sent.push(request);
    }
    (sent, store)
}

fn report(name: &str, up: &CacheUpstream) -> f64 {
    let share = up.read_share_after_first();
    let bills = up.bills();
    let most = bills.iter().map(|b| b.breakpoints).max().unwrap_or(0);
    println!(
        "cache reads after the first request ({name}): {:.1}% over {} requests, at most {most} breakpoints",
        share * 100.0,
        bills.len()
    );
    share
}

#[tokio::test]
async fn a_client_without_breakpoints_reads_the_cache_only_with_auto() {
    if trajectory().is_none() {
        return;
    }
    let off = cache_upstream().await;
    replay(&off, CacheMode::Off, 200_000, false).await;
    assert_eq!(report("no breakpoints, --anthropic-cache off", &off), 0.0);

    let auto = cache_upstream().await;
    replay(&auto, CacheMode::Auto, 200_000, false).await;
    let share = report("no breakpoints, --anthropic-cache auto", &auto);
    assert!(share >= 0.85, "auto read {:.1}% from the cache", share * 100.0);
    assert!(auto.bills().iter().all(|b| b.breakpoints <= 4));
}

#[tokio::test]
async fn a_client_with_its_own_breakpoints_sees_them_unchanged() {
    if trajectory().is_none() {
        return;
    }
    let up = cache_upstream().await;
    let sent = replay(&up, CacheMode::Auto, 200_000, true).await;
    let received = up.state.bodies.lock().unwrap().clone();
    assert_eq!(received.len(), sent.len());
    for (round, (a, b)) in sent.iter().zip(&received).enumerate() {
        assert_eq!(a, b, "round {round}: the client's request was changed");
        assert_eq!(count_breakpoints(b), 2);
    }
    report(
        "client breakpoints (system + last message), --anthropic-cache auto",
        &up,
    );
}

#[tokio::test]
async fn compaction_under_auto_keeps_the_cache_and_the_limit() {
    if trajectory().is_none() {
        return;
    }
    let up = cache_upstream().await;
    replay(&up, CacheMode::Auto, 6_000, false).await;
    report("no breakpoints, auto, compacting at a 6k budget", &up);
    assert!(up.bills().iter().all(|b| b.breakpoints <= 4));
    let marked = up
        .state
        .bodies
        .lock()
        .unwrap()
        .iter()
        .filter(|b| count_breakpoints(b) >= 2)
        .count();
    assert!(marked > 0);

    let own = cache_upstream().await;
    replay(&own, CacheMode::Auto, 6_000, true).await;
    report("client breakpoints, auto, compacting at a 6k budget", &own);
    assert!(own.bills().iter().all(|b| b.breakpoints <= 4));
}

/// Issue 38: a client that marks the last block of its last message moves the mark
/// every request (Claude Code does). The move is not a history edit: one transcript for
/// the session, never more than four marks forwarded, and the cache keeps being read
/// while the proxy compacts (each mode: auto, keep, off).
#[tokio::test]
async fn a_moving_client_mark_neither_forks_the_session_nor_piles_up() {
    if trajectory().is_none() {
        return;
    }
    for mode in [CacheMode::Auto, CacheMode::Keep, CacheMode::Off] {
        let up = cache_upstream().await;
        let (sent, store) = replay_into(&up, mode, 6_000, true).await;
        let sessions = store.sessions().await.unwrap();
        assert_eq!(
            sessions.len(),
            1,
            "{mode:?}: the session forked: {:?}",
            sessions.iter().map(|s| &s.session).collect::<Vec<_>>()
        );
        let received = up.state.bodies.lock().unwrap().clone();
        assert_eq!(received.len(), sent.len());
        assert!(
            received.iter().all(|b| count_breakpoints(b) <= 4),
            "{mode:?}: {:?}",
            received.iter().map(count_breakpoints).collect::<Vec<_>>()
        );
        let compacted = received
            .iter()
            .zip(&sent)
            .filter(|(r, s)| r["messages"].as_array().unwrap().len() < s["messages"].as_array().unwrap().len())
            .count();
        assert!(compacted > 0, "{mode:?}: no request was compacted");
        for (round, (r, s)) in received.iter().zip(&sent).enumerate() {
            let (theirs, ours) = (s["messages"].as_array().unwrap(), r["messages"].as_array().unwrap());
            assert_eq!(
                theirs.last(),
                ours.last(),
                "{mode:?} round {round}: the client's last message, its mark in place"
            );
            assert_eq!(r["system"], s["system"], "{mode:?} round {round}");
        }
        report(
            &format!("client marks moving every request, {mode:?}, compacting at 6k"),
            &up,
        );
    }
}
