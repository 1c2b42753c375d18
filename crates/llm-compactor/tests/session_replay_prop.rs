//! Property: any sequence of appends, elision epochs, compactions and reopenings, then
//! replay from disk, gives back exactly the live conversation, byte for byte.

use crate::session_support;

use llm_compactor::message::{Content, Message, Part, Role, ToolCall};
use llm_compactor::session::{Session, Transcript};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};
use session_support::{bytes_of, fixed_options, synthetic_result};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e12f64..1.0e12).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn extras() -> impl Strategy<Value = Map<String, Value>> {
    // Keys in generation order (not sorted): replay must keep that order.
    prop::collection::vec(("[a-z]{1,5}", json_value()), 0..3).prop_map(|pairs| pairs.into_iter().collect())
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        ("\\PC{0,20}", extras()).prop_map(|(text, mut object)| {
            object.insert("type".into(), json!("text"));
            object.insert("text".into(), json!(text));
            Part::from_value(Value::Object(object)).expect("an object is a part")
        }),
        "\\PC{0,20}".prop_map(|thinking| Part::from_value(
            json!({"type": "thinking", "thinking": thinking, "signature": "s"})
        )
        .expect("part")),
        extras().prop_map(|object| Part::from_value(Value::Object(object)).expect("an object is a part")),
        "[a-z0-9_]{1,8}".prop_map(|id| Part::ToolUse { id }),
    ]
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        Just(Content::Absent),
        Just(Content::Null),
        "\\PC{0,60}".prop_map(Content::Text),
        prop::collection::vec(part(), 0..3).prop_map(Content::Parts),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    (
        prop_oneof![
            Just(Role::System),
            Just(Role::User),
            Just(Role::Assistant),
            Just(Role::Tool),
            Just(Role::Other("exit".into()))
        ],
        content(),
        prop::collection::vec(("[a-z0-9]{1,6}", "[a-z_]{1,8}", "\\PC{0,16}", extras()), 0..2),
        prop::option::of("[a-z0-9]{1,6}"),
        prop::option::of("[a-z_]{1,8}"),
        (any::<bool>(), any::<bool>(), prop::option::of(0u32..5)),
        extras(),
    )
        .prop_map(
            |(role, content, calls, tool_call_id, name, (sticky, sysprompt, depth), extras)| {
                // A sticky message is rarer than a plain one in a real conversation.
                let sticky = sticky && sysprompt;
                Message {
                    id: None,
                    role,
                    content,
                    tool_calls: calls
                        .into_iter()
                        .map(|(id, name, arguments, extras)| ToolCall {
                            id,
                            name,
                            arguments,
                            extras,
                        })
                        .collect(),
                    tool_call_id,
                    name,
                    sticky,
                    sysprompt: sysprompt && depth.is_none() && !sticky,
                    depth: depth.filter(|d| *d == 0),
                    extras,
                }
            },
        )
}

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<Message>),
    Elide(Vec<Index>),
    Compact {
        cut: Index,
        summary: String,
        elide: Vec<Index>,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => prop::collection::vec(message(), 1..5).prop_map(Op::Append),
        2 => prop::collection::vec(any::<Index>(), 1..4).prop_map(Op::Elide),
        2 => (any::<Index>(), "\\PC{0,40}", prop::collection::vec(any::<Index>(), 0..3))
            .prop_map(|(cut, summary, elide)| Op::Compact { cut, summary, elide }),
        1 => Just(Op::Reopen),
    ]
}

fn stubs(indices: &[Index], len: usize) -> Vec<(usize, String)> {
    let mut chosen: Vec<usize> = indices.iter().map(|i| i.index(len)).collect();
    chosen.sort_unstable();
    chosen.dedup();
    chosen
        .into_iter()
        .map(|i| {
            (
                i,
                format!("[elided by the harness: {i}-char result; re-run the call if you need it again]"),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn replay_equals_the_live_conversation(ops in prop::collection::vec(op(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut session = Session::create(&path, fixed_options()).unwrap();
        let mut live: Vec<Message> = Vec::new();
        for op in ops {
            match op {
                Op::Append(messages) => {
                    for message in messages {
                        let stored = session.append_message(message.clone()).unwrap().clone();
                        prop_assert_eq!(stored.id.is_some(), true);
                        live.push(message.with_id(stored.id.unwrap()));
                    }
                }
                Op::Elide(indices) if !live.is_empty() => {
                    let result = synthetic_result(&live, -1, "", &stubs(&indices, live.len()));
                    let pass = session.record_result(&result).unwrap();
                    prop_assert!(pass.compaction_id.is_none());
                    live = result.messages;
                }
                Op::Compact { cut, summary, elide } if !live.is_empty() => {
                    let cut = cut.index(live.len());
                    let result = synthetic_result(&live, cut as i64, &summary, &stubs(&elide, live.len()));
                    let pass = session.record_result(&result).unwrap();
                    let id = pass.compaction_id.expect("a cut writes a compaction line");
                    live = result.messages;
                    let summary_at = live.iter().position(|m| m.id.is_none()).expect("the summary message");
                    live[summary_at].id = Some(id);
                }
                Op::Reopen => {
                    drop(session);
                    let (reopened, report) = Session::open(&path, fixed_options()).unwrap();
                    prop_assert!(report.repaired.is_none());
                    session = reopened;
                }
                Op::Elide(_) | Op::Compact { .. } => {}
            }
            prop_assert_eq!(bytes_of(session.messages()), bytes_of(&live));
        }
        let transcript = Transcript::read(&path).unwrap();
        prop_assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
        prop_assert_eq!(transcript.messages(), &live[..]);
    }
}
