//! Property test of Anthropic breakpoint placement over generated Messages requests:
//! tools, `system` as a string or blocks, images, tool results with nested blocks,
//! thinking and server-side compaction blocks, client breakpoints anywhere (the top-level
//! automatic field included), with and without a proxy rewrite of the leading messages.
//!
//! Invariants: never more than four breakpoints; every breakpoint on a block that may
//! carry one; TTLs still in Anthropic's order (1h before 5m); the client's own
//! breakpoints never moved, except those inside replaced messages, which become one at
//! the end of the replacement; `off` changes nothing; `auto` adds only `cache_control`.

use llm_compactor::plan::breakpoints::{
    BreakpointPolicy, CACHE_CONTROL, CacheMode, CacheTtl, MAX_BREAKPOINTS, can_carry, count_breakpoints, keeps_as_sent,
    place_breakpoints,
};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Clone, Debug)]
enum Block {
    Text(bool),
    Image,
    Thinking,
    ToolUse,
    ToolResult(u8),
    Compaction,
}

fn block(b: &Block, k: usize) -> Value {
    match b {
        Block::Text(empty) => json!({"type":"text","text": if *empty { String::new() } else { format!("text {k}") }}),
        Block::Image => {
            json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}})
        }
        Block::Thinking => json!({"type":"thinking","thinking":"hmm","signature":"sig"}),
        Block::ToolUse => json!({"type":"tool_use","id":format!("call{k}"),"name":"read","input":{"path":"a"}}),
        Block::ToolResult(0) => json!({"type":"tool_result","tool_use_id":format!("call{k}"),"content":"out"}),
        Block::ToolResult(n) => json!({"type":"tool_result","tool_use_id":format!("call{k}"),
            "content": (0..*n).map(|i| json!({"type":"text","text":format!("r{i}")})).collect::<Vec<_>>()}),
        Block::Compaction => json!({"type":"compaction","content":"opaque"}),
    }
}

fn any_block() -> impl Strategy<Value = Block> {
    prop_oneof![
        any::<bool>().prop_map(Block::Text),
        Just(Block::Image),
        Just(Block::Thinking),
        Just(Block::ToolUse),
        (0u8..3).prop_map(Block::ToolResult),
        Just(Block::Compaction),
    ]
}

#[derive(Clone, Debug)]
enum Content {
    Text(bool),
    Blocks(Vec<Block>),
}

fn any_content() -> impl Strategy<Value = Content> {
    prop_oneof![
        any::<bool>().prop_map(Content::Text),
        prop::collection::vec(any_block(), 0..4).prop_map(Content::Blocks),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    tools: usize,
    system: Option<Content>,
    messages: Vec<Content>,
    marks: Vec<usize>,
    top_level: bool,
    rewrite: Option<(usize, usize)>,
    mode: CacheMode,
    ttl: CacheTtl,
}

fn any_case() -> impl Strategy<Value = Case> {
    (
        0usize..3,
        prop::option::of(any_content()),
        prop::collection::vec(any_content(), 1..8),
        prop::collection::vec(0usize..64, 0..5),
        any::<bool>(),
        prop::option::of((1usize..8, 0usize..3)),
        prop_oneof![Just(CacheMode::Auto), Just(CacheMode::Keep), Just(CacheMode::Off)],
        prop_oneof![Just(CacheTtl::FiveMinutes), Just(CacheTtl::OneHour)],
    )
        .prop_map(|(tools, system, messages, marks, top_level, rewrite, mode, ttl)| Case {
            tools,
            system,
            messages,
            marks,
            top_level,
            rewrite,
            mode,
            ttl,
        })
}

fn content_value(content: &Content, k: &mut usize) -> Value {
    match content {
        Content::Text(empty) => Value::String(if *empty { String::new() } else { format!("say {k}") }),
        Content::Blocks(blocks) => Value::Array(
            blocks
                .iter()
                .map(|b| {
                    *k += 1;
                    block(b, *k)
                })
                .collect(),
        ),
    }
}

/// A JSON pointer to every place a client may put a breakpoint, in request order.
fn markable(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in request["tools"].as_array().into_iter().flatten().enumerate() {
        out.push(format!("/tools/{i}"));
    }
    for (i, b) in request["system"].as_array().into_iter().flatten().enumerate() {
        if can_carry(b) {
            out.push(format!("/system/{i}"));
        }
    }
    for (m, message) in request["messages"].as_array().into_iter().flatten().enumerate() {
        for (b, block) in message["content"].as_array().into_iter().flatten().enumerate() {
            if can_carry(block) {
                out.push(format!("/messages/{m}/content/{b}"));
            }
            for (i, inner) in block["content"].as_array().into_iter().flatten().enumerate() {
                if can_carry(inner) {
                    out.push(format!("/messages/{m}/content/{b}/content/{i}"));
                }
            }
        }
    }
    out
}

/// The TTLs of every breakpoint, in the order Anthropic reads the request.
fn ttls(request: &Value) -> Vec<bool> {
    let mut out = Vec::new();
    let mut visit = |v: &Value| {
        if let Some(mark) = v.get(CACHE_CONTROL).filter(|m| !m.is_null()) {
            out.push(mark.get("ttl").and_then(Value::as_str) == Some("1h"));
        }
    };
    for t in request["tools"].as_array().into_iter().flatten() {
        visit(t);
    }
    for b in request["system"].as_array().into_iter().flatten() {
        visit(b);
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            visit(block);
            for inner in block["content"].as_array().into_iter().flatten() {
                visit(inner);
            }
        }
    }
    out
}

/// Every marked block may carry a mark (tools always may).
fn marks_are_valid(request: &Value) -> bool {
    let system_ok = request["system"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|b| b.get(CACHE_CONTROL).is_none() || can_carry(b));
    let messages_ok = request["messages"].as_array().into_iter().flatten().all(|m| {
        m["content"].as_array().into_iter().flatten().all(|b| {
            (b.get(CACHE_CONTROL).is_none() || can_carry(b))
                && b["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .all(|i| i.get(CACHE_CONTROL).is_none() || can_carry(i))
        })
    });
    system_ok && messages_ok
}

/// The request with every mark removed and every non-empty string content as one
/// text block: what `auto` may change, taken away.
fn unmarked(request: &Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                o.shift_remove(CACHE_CONTROL);
                for (k, x) in o.iter_mut() {
                    if (k == "content" || k == "system")
                        && let Value::String(s) = x
                        && !s.is_empty()
                    {
                        *x = json!([{"type":"text","text":s.clone()}]);
                    }
                    walk(x);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = request.clone();
    walk(&mut v);
    v
}

fn build(case: &Case) -> (Value, Value) {
    let mut k = 0;
    let mut client = json!({"model":"claude","max_tokens":64});
    if case.tools > 0 {
        client["tools"] = Value::Array(
            (0..case.tools)
                .map(|i| json!({"name":format!("t{i}"),"input_schema":{"type":"object"}}))
                .collect(),
        );
    }
    if let Some(system) = &case.system {
        client["system"] = content_value(system, &mut k);
    }
    client["messages"] = Value::Array(
        case.messages
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": content_value(c, &mut k)}))
            .collect(),
    );
    let places = markable(&client);
    let budget = MAX_BREAKPOINTS - usize::from(case.top_level);
    let mut chosen: Vec<usize> = if places.is_empty() {
        Vec::new()
    } else {
        case.marks.iter().map(|&m| m % places.len()).collect()
    };
    chosen.sort_unstable();
    chosen.dedup();
    chosen.truncate(budget);
    // The earlier ones 1h, the later 5m: Anthropic's order.
    let hours = chosen.len() / 2;
    for (n, &at) in chosen.iter().enumerate() {
        let mark = if n < hours {
            json!({"type":"ephemeral","ttl":"1h"})
        } else {
            json!({"type":"ephemeral"})
        };
        client.pointer_mut(&places[at]).unwrap()[CACHE_CONTROL] = mark;
    }
    if case.top_level {
        client[CACHE_CONTROL] = json!({"type":"ephemeral"});
    }
    let mut outgoing = client.clone();
    if let Some((replaced, summary_len)) = case.rewrite {
        let messages = client["messages"].as_array().unwrap();
        let replaced = replaced.min(messages.len());
        let mut out: Vec<Value> = (0..summary_len)
            .map(|i| json!({"role":"user","content":[{"type":"text","text":format!("SUMMARY {i}")}]}))
            .collect();
        out.extend_from_slice(&messages[replaced..]);
        outgoing["messages"] = Value::Array(out);
    }
    (client, outgoing)
}

fn is_ordered(ttls: &[bool]) -> bool {
    ttls.windows(2).all(|w| w[0] || !w[1])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn placement_keeps_every_rule(case in any_case()) {
        let (client, before) = build(&case);
        let mut out = before.clone();
        let policy = BreakpointPolicy { mode: case.mode, ttl: case.ttl };
        let placement = place_breakpoints(&client, &mut out, &policy);
        let client_marks = count_breakpoints(&client);
        prop_assert!(client_marks <= MAX_BREAKPOINTS);
        // The shortcut for a request forwarded as sent never skips a change.
        let mut as_sent = client.clone();
        if keeps_as_sent(&client, &policy) {
            prop_assert!(!place_breakpoints(&client, &mut as_sent, &policy).changed());
            prop_assert_eq!(&as_sent, &client);
        }
        prop_assert!(count_breakpoints(&out) <= MAX_BREAKPOINTS, "{} breakpoints", count_breakpoints(&out));
        prop_assert_eq!(placement.total, count_breakpoints(&out));
        prop_assert!(marks_are_valid(&out));
        prop_assert!(is_ordered(&ttls(&out)), "TTL order broken: {:?}", ttls(&out));
        if case.mode == CacheMode::Off {
            prop_assert_eq!(&out, &before);
            return Ok(());
        }
        // Outside the messages nothing of the client's moves.
        prop_assert_eq!(&out[CACHE_CONTROL], &client[CACHE_CONTROL]);
        if client_marks > 0 || case.mode == CacheMode::Keep {
            prop_assert_eq!(&out["tools"], &client["tools"]);
            prop_assert_eq!(&out["system"], &client["system"]);
            prop_assert_eq!(placement.added, 0);
        }
        // The client's messages the rewrite kept are byte for byte the client's, marks
        // included (unless auto added one to a client that marked none).
        let theirs = client["messages"].as_array().unwrap();
        let ours = out["messages"].as_array().unwrap();
        let kept = match case.rewrite {
            Some((replaced, _)) => theirs.len() - replaced.min(theirs.len()),
            None => theirs.len(),
        };
        let replacement = ours.len() - kept;
        if client_marks > 0 || case.mode == CacheMode::Keep {
            prop_assert_eq!(&ours[replacement..], &theirs[theirs.len() - kept..]);
            let replaced_marks: usize = theirs[..theirs.len() - kept]
                .iter()
                .map(|m| count_breakpoints(&json!({"messages":[m]})))
                .sum();
            let in_replacement = count_breakpoints(&json!({"messages": ours[..replacement].to_vec()}));
            prop_assert!(in_replacement <= 1);
            prop_assert_eq!(in_replacement, placement.moved);
            if replaced_marks == 0 || replacement == 0 {
                prop_assert_eq!(placement.moved, 0);
            }
            if replaced_marks > 0 && replacement > 0 {
                // The summary can carry one; it moved there.
                prop_assert_eq!(placement.moved, 1);
            }
        } else {
            // Auto on a client that marked none: only marks added, nothing else changed.
            prop_assert_eq!(unmarked(&out), unmarked(&before));
            prop_assert!(placement.added <= 3);
        }
    }
}
