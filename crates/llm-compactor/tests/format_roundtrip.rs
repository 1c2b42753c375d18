//! Property tests: generated wire conversations of every format, with arbitrary extra
//! keys, content shapes and tool calls, come back as the identical JSON value after an
//! import and an export; conversions always re-import; and Anthropic → OpenAI →
//! Anthropic is lossless on the subset the module docs promise.

use llm_compactor::format::{Document, Format};
use llm_compactor::message::Role;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(("[a-z]{1,6}", inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Extra keys that no format models (prefixed so they never collide with modeled ones).
fn extras() -> impl Strategy<Value = Map<String, Value>> {
    vec(("x_[a-z]{1,6}", any_json()), 0..3).prop_map(|kv| kv.into_iter().collect())
}

fn with(mut object: Map<String, Value>, extra: Map<String, Value>) -> Value {
    for (k, v) in extra {
        object.entry(k).or_insert(v);
    }
    Value::Object(object)
}

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(o) => o,
        _ => unreachable!(),
    }
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,16}"
}

/// An OpenAI content part.
fn openai_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), extras()).prop_map(|(t, x)| with(obj(json!({"type": "text", "text": t})), x)),
        "[a-z:/.]{1,20}".prop_map(|u| json!({"type": "image_url", "image_url": {"url": u, "detail": "low"}})),
        (text(), extras()).prop_map(|(t, x)| with(obj(json!({"type": "thinking", "thinking": t})), x)),
        ("[a-z_]{1,8}", extras()).prop_map(|(k, x)| with(obj(json!({"type": k})), x)),
        any_json().prop_map(|v| json!({"type": "text", "text": v})),
    ]
}

/// `None` is an absent `content` key.
fn openai_content() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        text().prop_map(|t| Some(Value::String(t))),
        vec(openai_part(), 0..4).prop_map(|p| Some(Value::Array(p))),
    ]
}

fn openai_tool_call() -> impl Strategy<Value = Value> {
    (
        "call_[a-z0-9]{1,6}",
        "[a-z_]{1,8}",
        prop_oneof![any_json().prop_map(|v| v.to_string()), text()],
        extras(),
        extras(),
        option::of(0u32..4),
        any::<bool>(),
    )
        .prop_map(|(id, name, arguments, x_call, x_fn, index, typed)| {
            let mut function = obj(json!({"name": name, "arguments": arguments}));
            function.extend(x_fn);
            let mut call = Map::new();
            if let Some(index) = index {
                call.insert("index".into(), json!(index));
            }
            call.insert("function".into(), Value::Object(function));
            call.insert("id".into(), json!(id));
            if typed {
                call.insert("type".into(), json!("function"));
            }
            with(call, x_call)
        })
}

fn openai_message(require_tool_call_id: bool) -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("system"),
            Just("developer"),
            Just("user"),
            Just("assistant"),
            Just("tool"),
            Just("exit")
        ],
        openai_content(),
        prop_oneof![
            2 => Just(None),
            1 => Just(Some(Value::Null)),
            1 => Just(Some(json!([]))),
            3 => vec(openai_tool_call(), 1..3).prop_map(|c| Some(Value::Array(c))),
        ],
        option::of(prop_oneof![
            Just(Value::Null),
            "call_[a-z0-9]{1,6}".prop_map(Value::String)
        ]),
        option::of(prop_oneof![Just(Value::Null), "[a-z]{1,6}".prop_map(Value::String)]),
        extras(),
        any::<bool>(),
    )
        .prop_map(move |(role, content, calls, call_id, name, x, content_first)| {
            let mut m = Map::new();
            if content_first && let Some(c) = &content {
                m.insert("content".into(), c.clone());
            }
            m.insert("role".into(), json!(role));
            if let Some(c) = content {
                m.entry("content").or_insert(c);
            }
            if let Some(calls) = calls {
                m.insert("tool_calls".into(), calls);
            }
            match call_id {
                Some(id) => {
                    m.insert("tool_call_id".into(), id);
                }
                None if role == "tool" && require_tool_call_id => {
                    m.insert("tool_call_id".into(), json!("call_x"));
                }
                None => {}
            }
            if role == "tool" && require_tool_call_id && m["tool_call_id"].is_null() {
                m.insert("tool_call_id".into(), json!("call_y"));
            }
            if let Some(name) = name {
                m.insert("name".into(), name);
            }
            with(m, x)
        })
}

fn openai_document() -> impl Strategy<Value = Value> {
    prop_oneof![
        vec(openai_message(true), 0..6).prop_map(Value::Array),
        (vec(openai_message(true), 0..6), extras(), option::of("[a-z0-9-]{1,10}")).prop_map(|(msgs, x, model)| {
            let mut o = Map::new();
            if let Some(model) = model {
                o.insert("model".into(), json!(model));
            }
            o.insert("messages".into(), Value::Array(msgs));
            with(o, x)
        }),
    ]
}

fn mini_swe_agent_document() -> impl Strategy<Value = Value> {
    (vec(openai_message(false), 0..6), any_json(), "[a-z_-]{1,12}").prop_map(|(msgs, info, id)| {
        json!({"info": info, "messages": msgs, "trajectory_format": "mini-swe-agent-1.1", "instance_id": id})
    })
}

fn anthropic_block(role: &'static str) -> impl Strategy<Value = Value> {
    let common = prop_oneof![
        (text(), extras()).prop_map(|(t, x)| with(obj(json!({"type": "text", "text": t})), x)),
        ("[a-z/]{1,10}", "[A-Za-z0-9+/]{0,12}")
            .prop_map(|(m, d)| json!({"type": "image", "source": {"type": "base64", "media_type": m, "data": d}})),
        ("[a-z_]{1,10}", extras()).prop_map(|(k, x)| with(obj(json!({"type": k})), x)),
    ];
    let special = match role {
        "assistant" => prop_oneof![
            (text(), text()).prop_map(|(t, s)| json!({"type": "thinking", "thinking": t, "signature": s})),
            "[a-z0-9]{0,8}".prop_map(|d| json!({"type": "redacted_thinking", "data": d})),
            ("toolu_[a-z0-9]{1,4}", "[a-z_]{1,8}", any_json(), extras()).prop_map(|(id, name, input, x)| with(
                obj(json!({"type": "tool_use", "id": id, "name": name, "input": input})),
                x
            )),
        ]
        .boxed(),
        _ => (
            "toolu_[a-z0-9]{1,4}",
            prop_oneof![
                Just(None),
                text().prop_map(|t| Some(json!(t))),
                vec(
                    prop_oneof![
                        text().prop_map(|t| json!({"type": "text", "text": t})),
                        Just(json!({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}})),
                    ],
                    0..3
                )
                .prop_map(|b| Some(Value::Array(b))),
            ],
            option::of(any::<bool>()),
            extras(),
        )
            .prop_map(|(id, content, is_error, x)| {
                let mut b = obj(json!({"type": "tool_result", "tool_use_id": id}));
                if let Some(c) = content {
                    b.insert("content".into(), c);
                }
                if let Some(e) = is_error {
                    b.insert("is_error".into(), json!(e));
                }
                with(b, x)
            })
            .boxed(),
    };
    prop_oneof![common, special]
}

fn anthropic_message() -> impl Strategy<Value = Value> {
    (
        prop_oneof![4 => Just("user"), 4 => Just("assistant"), 1 => Just("system")],
        any::<u8>(),
        extras(),
    )
        .prop_flat_map(|(role, shape, x)| {
            let content = match shape % 4 {
                0 => text().prop_map(|t| Some(json!(t))).boxed(),
                1 => Just(None).boxed(),
                _ => vec(
                    anthropic_block(if role == "assistant" { "assistant" } else { "user" }),
                    0..5,
                )
                .prop_map(|b| Some(Value::Array(b)))
                .boxed(),
            };
            content.prop_map(move |c| {
                let mut m = obj(json!({"role": role}));
                if let Some(c) = c {
                    m.insert("content".into(), c);
                }
                with(m, x.clone())
            })
        })
}

fn anthropic_document() -> impl Strategy<Value = Value> {
    (
        option::of(prop_oneof![
            Just(Value::Null),
            text().prop_map(Value::String),
            vec(
                (text(), extras()).prop_map(|(t, x)| with(obj(json!({"type": "text", "text": t})), x)),
                0..3
            )
            .prop_map(Value::Array),
        ]),
        vec(anthropic_message(), 0..6),
        extras(),
        any::<bool>(),
    )
        .prop_map(|(system, msgs, x, system_last)| {
            let mut o = obj(json!({"model": "claude", "max_tokens": 1024}));
            if !system_last && let Some(s) = &system {
                o.insert("system".into(), s.clone());
            }
            o.insert("messages".into(), Value::Array(msgs));
            if system_last && let Some(s) = system {
                o.insert("system".into(), s);
            }
            with(o, x)
        })
}

fn round_trip(value: &Value, format: Format) -> Result<(), TestCaseError> {
    let bytes = serde_json::to_vec_pretty(value).unwrap();
    let doc = Document::from_bytes(&bytes, Some(format), "generated.json")
        .map_err(|e| TestCaseError::fail(format!("import failed: {e}")))?;
    prop_assert_eq!(&doc.to_value(), value);
    // Detection agrees with the generator.
    let detected = Document::from_bytes(&bytes, None, "generated.json").map(|d| d.format());
    // (An OpenAI conversation holding Anthropic-only block types reads as Anthropic; an
    // Anthropic one without `system` or such blocks reads as OpenAI: both by design.)
    let anthropic_blocks = [
        "\"tool_use\"",
        "\"tool_result\"",
        "\"thinking\"",
        "\"redacted_thinking\"",
        "\"image\"",
    ]
    .iter()
    .any(|t| String::from_utf8_lossy(&bytes).contains(t));
    let expect_detected = match format {
        Format::OpenAi => !anthropic_blocks,
        Format::Anthropic => value.get("system").is_some(),
        Format::MiniSweAgent => true,
    };
    if expect_detected {
        prop_assert_eq!(detected, Ok(format));
    }
    // Every conversion re-imports as its target format.
    // (A message of a role no target knows that carries tool calls has no faithful form:
    // the conversion refuses it, naming its index, rather than dropping it.)
    let unmappable = doc
        .messages()
        .iter()
        .position(|m| matches!(m.role, Role::Other(_)) && !m.tool_calls.is_empty());
    for target in Format::ALL {
        let converted = match (doc.to_format(target), unmappable) {
            (Err(e), Some(index)) if target != format => {
                prop_assert_eq!(e.index, Some(index));
                continue;
            }
            (converted, _) => converted.unwrap(),
        };
        let again = Document::from_value(converted.clone(), Some(target), "converted.json")
            .map_err(|e| TestCaseError::fail(format!("{format} -> {target} does not re-import: {e}\n{converted:#}")))?;
        prop_assert_eq!(again.to_value(), converted);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn openai_round_trips(value in openai_document()) {
        round_trip(&value, Format::OpenAi)?;
    }

    #[test]
    fn mini_swe_agent_round_trips(value in mini_swe_agent_document()) {
        round_trip(&value, Format::MiniSweAgent)?;
    }

    #[test]
    fn anthropic_round_trips(value in anthropic_document()) {
        round_trip(&value, Format::Anthropic)?;
    }
}

/// Anthropic conversations on the lossless subset: alternating turns starting with the
/// user, non-empty text, base64 images in user turns, object tool inputs, tool results
/// of text first in their turn, no extras.
fn lossless_anthropic_document() -> impl Strategy<Value = Value> {
    let nonempty = || "\\PC{1,12}";
    let user_block = prop_oneof![
        nonempty().prop_map(|t| json!({"type": "text", "text": t})),
        ("image/(png|jpeg)", "[A-Za-z0-9+/]{1,12}")
            .prop_map(|(m, d)| json!({"type": "image", "source": {"type": "base64", "media_type": m, "data": d}})),
    ];
    let tool_result = (
        "toolu_[a-z0-9]{1,6}",
        prop_oneof![
            text().prop_map(Value::String),
            vec(nonempty().prop_map(|t| json!({"type": "text", "text": t})), 1..3).prop_map(Value::Array),
        ],
    )
        .prop_map(|(id, content)| json!({"type": "tool_result", "tool_use_id": id, "content": content}));
    let user = prop_oneof![
        nonempty().prop_map(Value::String),
        (vec(tool_result, 0..3), vec(user_block, 0..3))
            .prop_filter("non-empty", |(r, b)| !r.is_empty() || !b.is_empty())
            .prop_map(|(r, b)| Value::Array(r.into_iter().chain(b).collect())),
    ];
    let object_input = vec(("[a-z]{1,5}", any_json()), 0..3).prop_map(|kv| Value::Object(kv.into_iter().collect()));
    let tool_use = ("toolu_[a-z0-9]{1,6}", "[a-z_]{1,8}", object_input)
        .prop_map(|(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    let assistant = prop_oneof![
        nonempty().prop_map(Value::String),
        (
            vec(nonempty().prop_map(|t| json!({"type": "text", "text": t})), 0..3),
            vec(tool_use, 0..3)
        )
            .prop_filter("non-empty", |(t, u)| !t.is_empty() || !u.is_empty())
            .prop_map(|(t, u)| Value::Array(t.into_iter().chain(u).collect())),
    ];
    let system = option::of(prop_oneof![
        nonempty().prop_map(Value::String),
        vec(nonempty().prop_map(|t| json!({"type": "text", "text": t})), 1..3).prop_map(Value::Array),
    ]);
    (
        system,
        vec((user, assistant), 0..4),
        option::of(Just(())),
        any::<bool>(),
    )
        .prop_map(|(system, turns, params, end_with_user)| {
            let mut messages = Vec::new();
            for (u, a) in turns {
                messages.push(json!({"role": "user", "content": u}));
                messages.push(json!({"role": "assistant", "content": a}));
            }
            if !end_with_user {
                messages.pop();
            }
            let mut o = Map::new();
            if params.is_some() {
                o.insert("model".into(), json!("claude-x"));
                o.insert("max_tokens".into(), json!(512));
            }
            if let Some(s) = system {
                o.insert("system".into(), s);
            }
            o.insert("messages".into(), Value::Array(messages));
            Value::Object(o)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn anthropic_to_openai_and_back_is_lossless_on_its_subset(value in lossless_anthropic_document()) {
        let doc = Document::from_value(value.clone(), Some(Format::Anthropic), "a.json").unwrap();
        prop_assert_eq!(&doc.to_value(), &value);
        let openai = doc.to_format(Format::OpenAi).unwrap();
        let via = Document::from_value(openai.clone(), Some(Format::OpenAi), "o.json").unwrap();
        let back = via.to_format(Format::Anthropic).unwrap();
        prop_assert_eq!(back, value, "through {:#}", openai);
    }
}

/// Issue 38: Claude Code writes a tool result as `{"tool_use_id", "type", "content",
/// "is_error": false}`; import then export gives back the same bytes (key order and the
/// `false` included), so a request the proxy rewrites and a replayed transcript are the
/// client's bytes.
#[test]
fn a_tool_result_block_keeps_its_key_order_and_is_error_false() {
    let wire = r#"{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"a.txt","is_error":false},{"type":"text","text":"<system-reminder>x</system-reminder>"}]}]}"#;
    let document = Document::from_bytes(wire.as_bytes(), Some(Format::Anthropic), "cc").unwrap();
    assert_eq!(serde_json::to_string(&document.to_value()).unwrap(), wire);
    let canonical =
        r#"{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}"#;
    let document = Document::from_bytes(canonical.as_bytes(), Some(Format::Anthropic), "sdk").unwrap();
    assert!(
        document.messages()[0].extras.keys().all(|k| !k.contains("key_order")),
        "no hint where the order is the exporter's"
    );
    assert_eq!(serde_json::to_string(&document.to_value()).unwrap(), canonical);
    // The same block marked (it was the last one): the same record once the mark is read
    // out, so a mark that moves on never reads as an edit.
    let marked = wire.replace(
        r#""is_error":false}"#,
        r#""is_error":false,"cache_control":{"type":"ephemeral"}}"#,
    );
    let mut read = Document::from_bytes(marked.as_bytes(), Some(Format::Anthropic), "cc")
        .unwrap()
        .into_messages();
    llm_compactor::plan::breakpoints::strip_marks(&mut read);
    let mut plain = Document::from_bytes(wire.as_bytes(), Some(Format::Anthropic), "cc")
        .unwrap()
        .into_messages();
    llm_compactor::plan::breakpoints::strip_marks(&mut plain);
    assert_eq!(read, plain);
}
