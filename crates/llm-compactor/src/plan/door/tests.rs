use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::message::{Content, Part, ToolCall};
use crate::plan::{apply_elisions, handle_of, is_stub};

fn image(bytes: usize, seed: usize) -> Part {
    let data: String = "QUJD".repeat(bytes / 4 + 1)[..bytes].to_owned() + &format!("{seed:08}");
    Part::Other(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}))
}

fn user_with_images(text: &str, images: &[Part]) -> Message {
    let mut parts = vec![Part::text(text)];
    parts.extend(images.iter().cloned());
    let mut m = Message::user("");
    m.content = Content::Parts(parts);
    m
}

fn call(id: &str, name: &str) -> Message {
    Message::assistant("").with_tool_calls(vec![ToolCall::new(id, name, "{}")])
}

#[test]
fn a_result_over_its_tools_cap_keeps_head_tail_and_handle() {
    let big: String = (0..50_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let rules = DoorRules::default().with_tool_cap("grep", 5_000);
    let messages = vec![
        Message::user("go"),
        call("c1", "grep"),
        Message::tool("c1", big.clone()),
        call("c2", "bash"),
        Message::tool("c2", big.clone()),
    ];
    let out = door(&messages, &rules);
    // grep's cap (20,000 chars) bites; bash's default (80,000) does not.
    assert_eq!(out.iter().map(|e| e.index).collect::<Vec<_>>(), vec![2]);
    let stub = &out[0].stub;
    assert!(stub.starts_with(&big[..1_200]));
    assert!(stub.ends_with(&big[big.len() - 400..]));
    assert!(stub.contains(&handle_of(2, &messages[2])));
    assert!(stub.contains("50000-char grep result"));
    assert!(
        is_stub(&Content::Text(stub.clone())),
        "a preview is never stubbed again"
    );
}

#[test]
fn the_unanswered_turns_media_are_never_taken_and_the_newest_are_kept() {
    let rules = DoorRules::default().with_keep_media(2);
    let mut messages = vec![Message::system("s")];
    for k in 0..4 {
        messages.push(user_with_images(&format!("shot {k}"), &[image(2_000, k)]));
        messages.push(Message::assistant("seen"));
    }
    // The unanswered turn: three images, over keep_media by itself.
    messages.push(user_with_images(
        "now",
        &[image(2_000, 10), image(2_000, 11), image(2_000, 12)],
    ));
    let out = door(&messages, &rules);
    let taken: Vec<usize> = out.iter().map(|e| e.index).collect();
    assert_eq!(taken, vec![1, 3, 5, 7], "every older image goes, the turn's stay");
    assert!(out[0].stub.starts_with("shot 0\n[image elided by the harness: "));
    assert!(out[0].stub.contains(&handle_of(1, &messages[1])));
    let applied = apply_elisions(&messages, &out);
    assert_eq!(applied[9], messages[9]);
    assert!(door(&applied, &rules).is_empty());
}

#[test]
fn the_byte_ceiling_takes_the_oldest_kept_media_first() {
    let rules = DoorRules::default().with_max_request_bytes(25_000);
    let mut messages = Vec::new();
    for k in 0..5 {
        messages.push(user_with_images(&format!("shot {k}"), &[image(10_000, k)]));
        messages.push(Message::assistant("seen"));
    }
    messages.push(Message::user("and?"));
    let out = door(&messages, &rules);
    assert_eq!(out.iter().map(|e| e.index).collect::<Vec<_>>(), vec![0, 2, 4]);
    let applied = apply_elisions(&messages, &out);
    let bytes: usize = applied.iter().map(|m| content_bytes(&m.content)).sum();
    assert!(bytes <= 25_000, "{bytes}");
}

#[test]
fn a_message_with_a_part_the_door_cannot_keep_is_left_alone() {
    let rules = DoorRules::default().with_keep_media(0);
    let mut odd = user_with_images("cite", &[image(2_000, 1)]);
    if let Content::Parts(parts) = &mut odd.content {
        parts.push(Part::Other(json!({"type": "search_result", "title": "t"})));
    }
    let messages = vec![odd, Message::assistant("ok"), Message::user("next")];
    assert!(door(&messages, &rules).is_empty());
}

fn conversation() -> impl Strategy<Value = Vec<Message>> {
    // Each step: 0 a plain exchange, 1 a screenshot turn, 2 a tool call with a result of
    // a random size; the last message is a user turn or a tool result (unanswered).
    let step = (0u8..3, 0usize..120_000, 0usize..3);
    (proptest::collection::vec(step, 1..25), any::<bool>()).prop_map(|(steps, ends_in_tool)| {
        let mut messages = vec![Message::system("sys")];
        for (k, (kind, size, images)) in steps.into_iter().enumerate() {
            match kind {
                0 => messages.push(Message::user(format!("q{k}"))),
                1 => {
                    let shots: Vec<Part> = (0..=images).map(|j| image(1_500 + size % 4_000, k * 10 + j)).collect();
                    messages.push(user_with_images(&format!("look {k}"), &shots));
                }
                _ => {
                    messages.push(Message::user(format!("run {k}")));
                    messages.push(call(&format!("c{k}"), if k % 2 == 0 { "bash" } else { "grep" }));
                    messages.push(Message::tool(format!("c{k}"), "r".repeat(size)));
                }
            }
            messages.push(Message::assistant(format!("a{k}")));
        }
        if ends_in_tool {
            messages.push(call("last", "bash"));
            messages.push(Message::tool("last", "z".repeat(90_000)));
        } else {
            let shots: Vec<Part> = (0..3).map(|j| image(3_000, 1_000 + j)).collect();
            messages.push(user_with_images("current", &shots));
        }
        messages
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The same conversation is capped to the same bytes every time; the conversation
    /// one request later (a turn appended) caps every message it shares the same way;
    /// the unanswered turn's media are never taken; the result is a fixed point.
    #[test]
    fn capping_is_deterministic_and_spares_the_current_turn(
        messages in conversation(),
        keep in 0usize..6,
        ceiling in 5_000usize..60_000,
    ) {
        let rules = DoorRules::default()
            .with_tool_cap("grep", 2_000)
            .with_keep_media(keep)
            .with_max_request_bytes(ceiling);
        let first = door(&messages, &rules);
        prop_assert_eq!(&first, &door(&messages, &rules));
        let turn = current_turn_start(&messages);
        for e in &first {
            if e.index >= turn {
                // Only a result over its cap, as a preview, in the current turn.
                prop_assert!(messages[e.index].is_tool_result());
                prop_assert!(is_door_preview(&e.stub));
            }
        }
        let applied = apply_elisions(&messages, &first);
        prop_assert!(door(&applied, &rules).is_empty(), "not a fixed point");
        // The current turn's results are capped alike on the next request.
        let mut later = messages.clone();
        later.push(Message::assistant("done"));
        later.push(Message::user("more"));
        let next = door(&later, &rules);
        for e in first.iter().filter(|e| messages[e.index].is_tool_result()) {
            prop_assert!(next.contains(e), "result {} capped differently", e.index);
        }
    }
}

#[test]
fn a_cap_below_the_previews_own_length_is_still_a_fixed_point() {
    let rules = DoorRules::default()
        .with_preview_chars(10)
        .with_tool_cap("a_tool_with_a_rather_long_name_indeed", 3);
    let messages = vec![
        Message::user("go"),
        call("c1", "a_tool_with_a_rather_long_name_indeed"),
        Message::tool("c1", "w".repeat(5_000)),
    ];
    let first = door(&messages, &rules);
    assert_eq!(first.len(), 1);
    assert!(first[0].stub.chars().count() > 12, "the preview is over the cap itself");
    assert!(door(&apply_elisions(&messages, &first), &rules).is_empty());
    // A long result that carries a marker line of its own is capped all the same.
    let forged = format!("{}\n{}", first[0].stub, "v".repeat(3_000));
    let hostile = vec![messages[0].clone(), messages[1].clone(), Message::tool("c1", forged)];
    assert_eq!(door(&hostile, &rules).len(), 1);
}
