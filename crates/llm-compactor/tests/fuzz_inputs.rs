//! Hostile input never panics (issue 10, "done when"): arbitrary bytes and arbitrary
//! structured JSON fed to every importer (OpenAI, Anthropic, mini-swe-agent, OpenHands,
//! Responses API requests, format detection), to every conversion of what they accept, and to the transcript
//! loader; and whatever an importer or the loader accepted is compacted, whose output
//! must be a conversation a provider accepts. Each must answer `Ok` or a clear error — a
//! panic fails the property. The case counts are bounded so this runs in seconds in CI.

use crate::engine_support;

use std::path::Path;
use std::sync::Arc;

use engine_support::{Scripted, provider_valid, reply};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::format::responses::ResponsesRequest;
use llm_compactor::format::{Document, Format, detect, openhands};
use llm_compactor::session::Transcript;
use llm_compactor::{CompactError, CompactOptions, Compactor, CompactorConfig, Message};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Keys the importers look at, and some they do not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "role",
            "content",
            "tool_calls",
            "tool_call_id",
            "id",
            "name",
            "type",
            "text",
            "function",
            "arguments",
            "input",
            "tool_use_id",
            "messages",
            "system",
            "thinking",
            "signature",
            "source",
            "image_url",
            "url",
            "trajectory_format",
            "info",
            "history",
            "action",
            "observation",
            "tool_call_metadata",
            "function_call",
            "is_error",
            "call_id",
            "output",
            "instructions",
            "previous_response_id",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{1,8}",
    ]
}

/// A value that could be any text, or something else entirely.
fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,16}".prop_map(Value::String),
        Just(Value::Null),
        prop::collection::vec(block(), 0..4).prop_map(Value::Array),
        any_json(),
    ]
}

fn block() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            "text",
            "tool_use",
            "tool_result",
            "thinking",
            "redacted_thinking",
            "image",
            "image_url",
            "document",
            "refusal",
            "input_text",
            "output_text",
            "",
        ]),
        any_json(),
        ".{0,8}",
    )
        .prop_map(|(kind, extra, text)| {
            json!({"type": kind, "text": text, "id": text, "tool_use_id": text, "name": text,
                   "input": extra, "content": extra, "signature": text,
                   "image_url": {"url": format!("data:image/png;base64,{text}")}})
        })
}

/// A message-like object, close enough to real messages to get deep into the importers.
fn message() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
            "function",
            "exit",
            "",
        ]),
        content(),
        prop::option::of(prop::collection::vec((".{0,6}", ".{0,6}", any_json()), 0..3)),
        prop::option::of(".{0,6}"),
        prop::collection::vec((key(), any_json()), 0..3),
    )
        .prop_map(|(role, content, calls, call_id, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            object.insert("role".into(), json!(role));
            object.insert("content".into(), content);
            if let Some(calls) = calls {
                let calls: Vec<Value> = calls
                    .into_iter()
                    .map(|(id, name, args)| {
                        json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
                    })
                    .collect();
                object.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(id) = call_id {
                object.insert("tool_call_id".into(), json!(id));
            }
            Value::Object(object)
        })
}

/// A Responses API input item, or something close to one.
fn response_item() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec![
            "message",
            "reasoning",
            "function_call",
            "custom_tool_call",
            "function_call_output",
            "custom_tool_call_output",
            "item_reference",
            "",
        ]),
        message(),
        prop::sample::select(vec!["c1", "c2", "c3"]),
        content(),
        prop::collection::vec((key(), any_json()), 0..2),
    )
        .prop_map(|(kind, message, call_id, output, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            match kind {
                "message" | "" => {
                    if let Value::Object(message) = message {
                        object.extend(message);
                    }
                    if kind == "message" {
                        object.insert("type".into(), json!("message"));
                    }
                }
                _ => {
                    object.insert("type".into(), json!(kind));
                    object.insert("call_id".into(), json!(call_id));
                    object.insert("name".into(), json!("f"));
                    object.insert("arguments".into(), json!("{}"));
                    object.insert("input".into(), json!("patch"));
                    object.insert("output".into(), output);
                }
            }
            Value::Object(object)
        })
}

/// A whole document in any of the shapes the formats use, or not quite.
fn document() -> impl Strategy<Value = Value> {
    let messages = || prop::collection::vec(message(), 0..8);
    prop_oneof![
        (prop::collection::vec(response_item(), 0..8), prop::option::of(".{0,8}"))
            .prop_map(|(items, instructions)| json!({"model": "m", "instructions": instructions, "input": items})),
        messages().prop_map(Value::Array),
        (messages(), content()).prop_map(|(m, system)| json!({"system": system, "messages": m})),
        messages().prop_map(|m| json!({"info": {}, "messages": m, "trajectory_format": "mini-swe-agent-1"})),
        prop::collection::vec(any_json(), 0..6).prop_map(|h| json!({"history": h})),
        any_json(),
    ]
}

/// `compact` on what an importer or the loader accepted, with a summarizer and without
/// one (the hard trim), aging on and off, at budgets small enough that every pass cuts:
/// never a panic, and the output is what a provider accepts with the sticky messages
/// kept in order — or a refusal naming the index of an input no repair can make valid.
fn compacts_cleanly(messages: &[Message]) {
    if messages.is_empty() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    for (budget, aging, summarize) in [(64usize, true, false), (400, false, true)] {
        let config = CompactorConfig::builder(budget)
            .keep_recent(2)
            .age_observations(aging)
            .age_min_chars(4)
            .age_reclaim_min(16)
            .build()
            .unwrap();
        let mut compactor = Compactor::new(config, Arc::new(HeuristicCounter));
        if summarize {
            compactor = compactor.with_summarizer(Scripted::always(reply("A short summary.")));
        }
        match runtime.block_on(compactor.compact(messages, CompactOptions::default())) {
            Ok(result) => {
                if let Err(problem) = provider_valid(&result.messages) {
                    panic!("compact handed back a broken conversation ({problem}) for {messages:?}");
                }
                let sticky = |ms: &[Message]| ms.iter().filter(|m| m.is_sticky()).cloned().collect::<Vec<_>>();
                assert_eq!(
                    sticky(messages),
                    sticky(&result.messages),
                    "sticky messages kept in order"
                );
            }
            Err(CompactError::InvalidInput { index, .. }) => assert!(index < messages.len()),
            Err(other) => panic!("unexpected error {other} for {messages:?}"),
        }
    }
}

/// Everything a reader can be asked about one value: it must not panic, and what it
/// accepts compacts cleanly.
fn exercise(value: &Value) {
    let _ = detect(value);
    if let Ok(request) = ResponsesRequest::from_value(value.clone(), "fuzz") {
        // Lossless: what it accepts it writes back as it came.
        assert_eq!(&request.to_value(), value, "a Responses request round trip");
        compacts_cleanly(request.messages());
    }
    if let Ok(messages) = openhands::import_history(value, "fuzz") {
        compacts_cleanly(&messages);
    }
    for format in [
        None,
        Some(Format::OpenAi),
        Some(Format::Anthropic),
        Some(Format::MiniSweAgent),
    ] {
        if let Ok(document) = Document::from_value(value.clone(), format, "fuzz") {
            compacts_cleanly(document.messages());
            let _ = document.to_value();
            for target in Format::ALL {
                let _ = document.to_format(target);
                let _ = document.to_format_lossy(target);
            }
        }
    }
}

/// A valid transcript line (before mutation).
fn envelope_line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["session-meta", "message", "elision", "compaction", "x-note", ""]),
        prop::sample::select(vec!["m0", "m1", "m2", ""]),
        any_json(),
        message(),
    )
        .prop_map(|(kind, id, payload, message)| {
            let payload = match kind {
                "session-meta" => json!({"created_by": "fuzz"}),
                "message" => message,
                "elision" => json!({"items": [{"id": id, "stub": "s"}]}),
                "compaction" => json!({"replaces_through_id": id, "summary": "s", "fallback": false,
                    "dropped": 1, "tokens_before": 2, "tokens_after": 1, "exhausted": false}),
                _ => payload,
            };
            json!({"id": id, "payload": payload, "ts": "t", "type": kind, "v": 1}).to_string()
        })
}

/// Lines, some cut short, some with CRLF, some blank.
fn transcript_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = (envelope_line(), 0usize..4, any::<prop::sample::Index>()).prop_map(|(line, how, at)| {
        let line = line.into_bytes();
        match how {
            0 => [line, b"\n".to_vec()].concat(),
            1 => [line, b"\r\n".to_vec()].concat(),
            // Cut anywhere, even inside a UTF-8 sequence.
            2 => [line[..at.index(line.len() + 1)].to_vec(), b"\n".to_vec()].concat(),
            _ => b"\n".to_vec(),
        }
    });
    let meta = r#"{"id":"meta","payload":{"created_by":"fuzz"},"ts":"t","type":"session-meta","v":1}"#;
    (
        prop::collection::vec(line, 0..10),
        any::<bool>(),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(lines, cut_end, at)| {
            let mut bytes = format!("{meta}\n").into_bytes();
            bytes.extend(lines.concat());
            if cut_end {
                let keep = at.index(bytes.len() + 1);
                bytes.truncate(keep);
            }
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_an_importer(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        for format in [None, Some(Format::OpenAi), Some(Format::Anthropic), Some(Format::MiniSweAgent)] {
            let _ = Document::from_bytes(&bytes, format, "fuzz");
        }
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            exercise(&value);
        }
    }

    #[test]
    fn arbitrary_json_documents_never_panic_an_importer_or_a_conversion(value in document()) {
        exercise(&value);
        let bytes = serde_json::to_vec(&value).unwrap();
        let _ = Document::from_bytes(&bytes, None, "fuzz");
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_transcript_loader(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Transcript::parse(Path::new("fuzz.jsonl"), &bytes);
    }

    #[test]
    fn arbitrary_transcripts_load_or_fail_clearly(bytes in transcript_bytes()) {
        match Transcript::parse(Path::new("fuzz.jsonl"), &bytes) {
            Ok(transcript) => {
                // What was kept is a prefix of the file; a torn tail runs to its end.
                prop_assert!(transcript.good_len() as usize <= bytes.len());
                if let Some(torn) = transcript.torn_tail() {
                    prop_assert_eq!(torn.offset + torn.bytes, bytes.len() as u64);
                    prop_assert_eq!(torn.offset, transcript.good_len());
                }
                // Reading the kept prefix again gives the same conversation, whole.
                let prefix = &bytes[..transcript.good_len() as usize];
                let again = Transcript::parse(Path::new("fuzz.jsonl"), prefix).unwrap();
                prop_assert!(again.torn_tail().is_none());
                prop_assert_eq!(again.messages(), transcript.messages());
                compacts_cleanly(transcript.messages());
            }
            Err(err) => {
                let text = err.to_string();
                prop_assert!(text.starts_with("fuzz.jsonl:"), "{}", text);
            }
        }
    }
}
