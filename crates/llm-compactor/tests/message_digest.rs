//! A message's digest is streamed into its hash (no intermediate JSON values): its bytes
//! must be exactly those of the definition, SHA-256 of the canonical JSON (keys sorted at
//! every depth, serde_json's compact rendering) of the digest object. The reference here
//! builds that object and sorts it the slow way, independently of the crate's writer.
//!
//! The same for a message on the transcript: its content is serialized straight from the
//! message, and must be exactly the JSON of [`Content::to_value`]; its line is written by
//! hand, and must be exactly serde_json's rendering of the envelope around the message.

use llm_compactor::message::digest::digest_value;
use llm_compactor::message::{
    Content, Message, Part, Role, ToolCall, canonical_arguments, canonical_json, conversation_digest, message_digest,
};
use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::session::{ContextManager, Record, Session, SessionOptions, encode_line};
use llm_compactor::{Compactor, CompactorConfig};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Keys sorted at every depth, by building a sorted copy (the old implementation).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                out.insert(key.clone(), sorted(&object[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn reference_digest(message: &Message) -> String {
    let text = serde_json::to_string(&sorted(&digest_value(message))).expect("serializes");
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Text with what JSON must escape: quotes, backslashes, control characters, non-ASCII.
fn arb_text() -> impl Strategy<Value = String> {
    "[a-z \"\\\\\n\t\u{0}\u{1f}\u{7f}é日🙂<>&/]{0,24}"
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        arb_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-d_A-Z]{1,4}", inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn arb_content() -> impl Strategy<Value = Content> {
    let part = prop_oneof![
        // Extras keys include `type` and `text`, which the part's own fields repeat.
        (
            arb_text(),
            proptest::collection::vec(("[a-z]{1,3}|type|text", arb_json()), 0..2)
        )
            .prop_map(|(text, extras)| {
                Part::Text {
                    text,
                    extras: extras.into_iter().collect(),
                }
            }),
        arb_text().prop_map(|thinking| Part::Thinking {
            thinking,
            extras: Map::new(),
        }),
        "[a-z0-9]{1,6}".prop_map(|id| Part::ToolUse { id }),
        arb_json().prop_map(Part::Other),
    ];
    prop_oneof![
        Just(Content::Absent),
        Just(Content::Null),
        arb_text().prop_map(Content::Text),
        proptest::collection::vec(part, 0..4).prop_map(Content::Parts),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::System),
        Just(Role::Developer),
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool),
        arb_text().prop_map(Role::Other),
    ];
    let call =
        (arb_text(), arb_text(), arb_text()).prop_map(|(id, name, arguments)| ToolCall::new(id, name, arguments));
    (
        role,
        arb_content(),
        proptest::collection::vec(call, 0..3),
        proptest::option::of(arb_text()),
        proptest::option::of(any::<u32>()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(role, content, calls, tool_call_id, depth, sticky, sysprompt)| {
            let mut message = Message::new(role, "");
            message.content = content;
            message.tool_calls = calls;
            message.tool_call_id = tool_call_id;
            message.depth = depth;
            message.sticky = sticky;
            message.sysprompt = sysprompt;
            message
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_streamed_digest_is_the_digest_of_the_sorted_object(message in arb_message()) {
        prop_assert_eq!(message_digest(&message), reference_digest(&message));
    }

    #[test]
    fn a_conversation_digest_is_the_digest_of_the_joined_message_digests(
        messages in proptest::collection::vec(arb_message(), 0..6),
    ) {
        let joined: Vec<String> = messages.iter().map(reference_digest).collect();
        let reference = hex::encode(Sha256::digest(joined.join("\n").as_bytes()));
        prop_assert_eq!(conversation_digest(&messages), reference);
    }

    /// `eq_for_digest` stands in for a digest comparison (the proxy's check that a
    /// request still starts with the prefix it rewrote): what it calls equal must digest
    /// equal, whatever the ids, names and extras; a change to a digested field is seen.
    #[test]
    fn messages_equal_for_the_digest_have_the_same_digest(
        message in arb_message(),
        other in arb_message(),
        id in proptest::option::of(arb_text()),
        name in proptest::option::of(arb_text()),
        extras in proptest::collection::vec(("[a-z]{1,3}", arb_json()), 0..3),
        call_extras in proptest::collection::vec(("[a-z]{1,3}", arb_json()), 0..2),
        field in 0usize..9,
    ) {
        let mut twin = message.clone();
        twin.id = id;
        twin.name = name;
        twin.extras = extras.into_iter().collect();
        if let Some(call) = twin.tool_calls.first_mut() {
            call.extras = call_extras.into_iter().collect();
        }
        prop_assert!(message.eq_for_digest(&twin));
        prop_assert_eq!(message_digest(&message), message_digest(&twin));
        prop_assert_eq!(message.eq_for_digest(&other), message_digest(&message) == message_digest(&other));
        // One digested field changed: not equal, and indeed another digest.
        let mut changed = twin.clone();
        match field % 9 {
            0 => changed.role = if changed.role == Role::User { Role::Assistant } else { Role::User },
            1 => changed.content = Content::Text(format!("{}x", changed.content.text())),
            2 => changed.sticky = !changed.sticky,
            3 => changed.sysprompt = !changed.sysprompt,
            4 => changed.tool_call_id = Some(format!("{}x", changed.tool_call_id.clone().unwrap_or_default())),
            5 => changed.depth = Some(changed.depth.map_or(0, |d| d.wrapping_add(1))),
            6 => changed.tool_calls.push(ToolCall::new("c", "n", "{}")),
            k => match changed.tool_calls.first_mut() {
                Some(call) if k == 7 => call.arguments.push('x'),
                Some(call) => call.name.push('x'),
                None => changed.tool_calls.push(ToolCall::new("c", "n", "{}")),
            },
        }
        prop_assert!(!message.eq_for_digest(&changed));
        prop_assert_ne!(message_digest(&message), message_digest(&changed));
    }

    #[test]
    fn content_is_serialized_as_its_value(content in arb_content()) {
        prop_assert_eq!(
            serde_json::to_string(&content).expect("serializes"),
            serde_json::to_string(&content.to_value()).expect("serializes")
        );
    }

    #[test]
    fn a_message_line_is_serde_jsons_envelope(
        message in arb_message(),
        id in arb_text(),
        name in proptest::option::of(arb_text()),
        extras in proptest::collection::vec(("[a-z]{1,3}", arb_json()), 0..3),
        call_extras in proptest::collection::vec(("[a-z]{1,3}", arb_json()), 0..2),
    ) {
        let mut message = message.with_id(id.clone());
        message.name = name;
        message.extras = extras.into_iter().collect();
        if let Some(call) = message.tool_calls.first_mut() {
            call.extras = call_extras.into_iter().collect();
        }
        let ts = "2025-01-01T00:00:00.000000Z";
        let reference = serde_json::to_string(&json!({
            "id": id, "payload": message, "ts": ts, "type": "message", "v": 1
        }))
        .expect("serializes");
        prop_assert_eq!(encode_line(&id, ts, &Record::Message(message)).expect("encodes"), reference + "\n");
    }

    #[test]
    fn canonical_arguments_are_the_sorted_copy_rendered(
        // Plain keys without `q` (below, `q` is spelled as an escape): such an object
        // takes the fast path, whose string values are copied or decoded.
        members in proptest::collection::vec((prop_oneof![1 => arb_text(), 3 => "[a-p]{1,4}".prop_map(String::from)], arb_json()), 0..5),
        pretty in any::<bool>(),
        escaped_slashes in any::<bool>(),
        unicode_escapes in any::<bool>(),
    ) {
        // An object as a model writes its arguments: spaced or not, with `\/` escapes
        // (in keys too) or not; the fast path must render what the value renders.
        let object = Value::Object(members.into_iter().collect());
        let mut text = if pretty {
            serde_json::to_string_pretty(&object).expect("serializes")
        } else {
            serde_json::to_string(&object).expect("serializes")
        };
        if escaped_slashes {
            text = text.replace('/', "\\/");
        }
        if unicode_escapes {
            // `q` spelled as a `\u` escape (not a hex digit, in no keyword, in no escape
            // serde_json writes): the fast path must decode it, in keys and values.
            text = text.replace('q', "\\u0071");
        }
        let reference = serde_json::to_string(&sorted(&object)).expect("serializes");
        prop_assert_eq!(canonical_arguments(&text), reference);
    }

    #[test]
    fn canonical_json_is_the_sorted_copy_rendered(value in arb_json()) {
        prop_assert_eq!(canonical_json(&value), serde_json::to_string(&sorted(&value)).expect("serializes"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A `ContextManager` chains into its conversation's prefix digests the digests the
    /// transcript took from the lines it wrote (the content's literal hashed in place):
    /// every prefix must still digest to `conversation_digest` of its messages, whether the
    /// chain was digested up to the append (the calibrated loop asks every round) or not.
    #[test]
    fn a_managers_prefix_digests_are_the_digests_of_its_messages(
        batches in proptest::collection::vec(
            (proptest::collection::vec(arb_message(), 0..4), any::<bool>(), any::<bool>()),
            1..5,
        ),
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let session = Session::create(dir.path().join("s.jsonl"), SessionOptions::new()).expect("a session");
        let config = CompactorConfig::builder(usize::MAX / 4).build().expect("a valid configuration");
        let compactor = Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)));
        let mut manager = ContextManager::new(compactor, session);
        for (batch, ask_first, one_by_one) in batches {
            if ask_first {
                let n = manager.messages().len();
                prop_assert!(manager.conversation().prefix_digest(n).is_some());
            }
            if one_by_one {
                for message in batch {
                    manager.push(message).expect("an append");
                }
            } else {
                manager.record_response(None, "m", batch).expect("an append");
            }
            let messages = manager.messages();
            prop_assert_eq!(messages, manager.session().messages());
            for k in 0..=messages.len() {
                prop_assert_eq!(
                    manager.conversation().prefix_digest(k).expect("a prefix"),
                    conversation_digest(&messages[..k])
                );
            }
        }
    }
}

/// The digest's buffer is kept per thread between digests: a message rendered after a
/// longer one (and after one big enough that the buffer is let go) is digested alone.
#[test]
fn a_digest_does_not_read_what_the_previous_digest_left_in_its_buffer() {
    let messages = [
        Message::tool("call_1", "x".repeat(3 << 20)),
        Message::user("short"),
        Message::assistant("a \"quoted\" line\nand another ".repeat(500)),
        Message::user("short"),
        Message::user(""),
    ];
    for message in &messages {
        assert_eq!(message_digest(message), reference_digest(message));
    }
    assert_eq!(
        conversation_digest(&messages),
        hex::encode(Sha256::digest(
            messages
                .iter()
                .map(reference_digest)
                .collect::<Vec<_>>()
                .join("\n")
                .as_bytes()
        ))
    );
}

#[test]
fn canonical_arguments_decode_exactly_the_escapes_serde_json_does_not_write() {
    // Each escape alone in a value of a plain-keyed object (the fast path): the short
    // escapes stay as they are, `\/` and `\u` are decoded and written as serde_json
    // writes their chars.
    for (text, canonical) in [
        (r#"{"b": 1, "a": "\u0071"}"#, r#"{"a":"q","b":1}"#),
        (r#"{"a": "x\/y"}"#, r#"{"a":"x/y"}"#),
        (r#"{"a": "\u001F\u00e9\u0022"}"#, r#"{"a":"\u001fé\""}"#),
        (r#"{"a": "\"\\\n\t\r\b\f"}"#, r#"{"a":"\"\\\n\t\r\b\f"}"#),
        (r#"{"a": "\\u0071"}"#, r#"{"a":"\\u0071"}"#),
    ] {
        assert_eq!(canonical_arguments(text), canonical, "{text}");
    }
}

#[test]
fn a_known_message_keeps_its_known_digest() {
    // Pinned bytes: a digest stored by an earlier version (a calibrated record, a
    // session) must still match.
    let message =
        Message::assistant("run \"it\"").with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"cmd":"ls"}"#)]);
    let text = r#"{"content":"run \"it\"","role":"assistant","sticky":false,"sysprompt":false,"tool_calls":[{"arguments":"{\"cmd\":\"ls\"}","id":"c1","name":"bash"}]}"#;
    assert_eq!(message_digest(&message), hex::encode(Sha256::digest(text.as_bytes())));
    let value = json!({"b": [1.5, {"d": null, "c": "x"}], "a": true});
    assert_eq!(canonical_json(&value), r#"{"a":true,"b":[1.5,{"c":"x","d":null}]}"#);
}
