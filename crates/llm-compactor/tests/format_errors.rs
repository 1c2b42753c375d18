//! Malformed input is an error naming the file, the message index and the problem;
//! never a panic.

use llm_compactor::format::{Document, Format, FormatError};

fn error(input: &[u8], format: Option<Format>) -> FormatError {
    match Document::from_bytes(input, format, "conv.json") {
        Ok(doc) => panic!("accepted: {doc:?}"),
        Err(err) => err,
    }
}

/// Asserts the error names the file, the message index and the problem, in its text.
fn assert_error(input: &str, format: Option<Format>, index: Option<usize>, problem: &str) {
    let err = error(input.as_bytes(), format);
    assert_eq!(err.source_name, "conv.json");
    assert_eq!(err.index, index, "{err}");
    assert!(err.problem.contains(problem), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("conv.json: "), "{text}");
    if let Some(i) = index {
        assert!(text.contains(&format!("message {i}: ")), "{text}");
    }
    assert!(text.contains(problem), "{text}");
}

#[test]
fn non_utf8_bytes() {
    let err = error(b"[{\"role\": \"user\", \"content\": \"caf\xe9\"}]", None);
    assert_eq!(err.to_string(), "conv.json: not valid UTF-8: invalid byte at offset 33");
}

#[test]
fn invalid_json_gives_line_and_column() {
    let err = error(b"[\n  {\"role\": \"user\",\n   \"content\": \"hi\",}\n]", None);
    assert_eq!(err.index, None);
    assert_eq!(
        err.to_string(),
        "conv.json: invalid JSON at line 3, column 20: trailing comma"
    );
}

/// An empty file (or only a byte-order mark and blank lines) says so, not "EOF while
/// parsing a value at line 1, column 0".
#[test]
fn empty_input_is_called_empty() {
    for input in [&b""[..], b"   \n\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\r\n"] {
        let err = error(input, None);
        assert!(
            err.problem.starts_with("empty: expected a conversation"),
            "{input:?}: {err}"
        );
    }
}

/// A file of one JSON value per line is another kind of file, not a broken conversation:
/// the error says what it is and what to do (serde_json alone says "trailing characters").
#[test]
fn json_lines_are_named_as_such() {
    let messages = "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"yo\"}\n";
    for input in [
        messages.to_owned(),
        messages.replace('\n', "\r\n"),
        format!("\u{feff}{messages}"),
    ] {
        assert_error(
            &input,
            None,
            None,
            "one JSON value per line (JSON Lines: line 1 is an object, line 2 another value)",
        );
        assert_error(&input, None, None, "`jq -s . FILE`");
    }
    // A compactor session transcript: pointed at the session commands.
    let transcript = concat!(
        r#"{"id":"a","payload":{"v":1},"ts":"2025-01-01T00:00:00Z","type":"header","v":1}"#,
        "\n",
        r#"{"id":"b","payload":{"role":"user","content":"hi"},"ts":"2025-01-01T00:00:00Z","type":"message","v":1}"#,
        "\n"
    );
    assert_error(transcript, None, None, "a session transcript (JSON Lines");
    assert_error(transcript, None, None, "`compactor session replay`");
    // Two documents that are not one per line keep serde_json's located message.
    assert_error(
        "[\n1\n]\n[\n2\n]",
        None,
        None,
        "invalid JSON at line 4, column 1: trailing characters",
    );
    assert_error(
        "[1] [2]",
        None,
        None,
        "invalid JSON at line 1, column 5: trailing characters",
    );
}

#[test]
fn shapes_that_are_no_conversation() {
    assert_error(
        "\"hello\"",
        None,
        None,
        "not a conversation: expected an array of messages or an object with `messages`, found a string",
    );
    assert_error(
        r#"{"prompt": "hi", "n": 1}"#,
        None,
        None,
        "found an object with keys [prompt, n]",
    );
    assert_error(
        r#"{"messages": {"role": "user"}}"#,
        None,
        None,
        "`messages` must be an array, not an object",
    );
    assert_error(
        r#"[{"role": "user"}]"#,
        Some(Format::Anthropic),
        None,
        "an Anthropic conversation is an object with `messages`, not an array",
    );
    assert_error(
        "[]",
        Some(Format::MiniSweAgent),
        None,
        "a mini-swe-agent trajectory is an object",
    );
    assert_error(
        r#"{"model": "x"}"#,
        Some(Format::OpenAi),
        None,
        "an OpenAI conversation object has no `messages` array",
    );
    assert_error("3", Some(Format::OpenAi), None, "not a number");
}

#[test]
fn a_message_without_a_role() {
    let input = r#"[{"role": "user", "content": "a"}, {"content": "b"}]"#;
    assert_error(input, None, Some(1), "the message has no role");
    let input = r#"{"system": "s", "messages": [{"content": "b"}]}"#;
    assert_error(input, None, Some(0), "the message has no role");
    let input = r#"{"info": {}, "trajectory_format": "mini-swe-agent-1.1", "messages": [{"role": "system", "content": "s"}, {"content": "b"}]}"#;
    assert_error(input, None, Some(1), "the message has no role");
}

#[test]
fn a_role_that_is_not_a_string() {
    assert_error(
        r#"[{"role": 7, "content": "a"}]"#,
        None,
        Some(0),
        "role must be a string, not a number",
    );
    assert_error(
        r#"{"system": "s", "messages": [{"role": "user", "content": "a"}, {"role": null}]}"#,
        None,
        Some(1),
        "role must be a string, not null",
    );
}

#[test]
fn a_message_that_is_not_an_object() {
    assert_error(
        r#"[{"role": "user", "content": "a"}, "b"]"#,
        None,
        Some(1),
        "a message must be an object, not a string",
    );
    assert_error(
        r#"{"system": "s", "messages": [[1]]}"#,
        None,
        Some(0),
        "a message must be an object, not an array",
    );
}

#[test]
fn a_tool_call_without_an_id() {
    let input = r#"[{"role": "assistant", "content": null,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                       {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#;
    assert_error(input, None, Some(0), "tool call 1 has no id");
    let input = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
        {"type": "text", "text": "ok"}, {"type": "tool_use", "name": "f", "input": {}}]}]}"#;
    assert_error(input, None, Some(1), "content block 1: a tool_use block has no id");
}

#[test]
fn malformed_tool_calls() {
    let call = |c: &str| format!(r#"[{{"role": "assistant", "content": null, "tool_calls": [{c}]}}]"#);
    assert_error(
        &call(r#"{"id": 3, "function": {"name": "f", "arguments": "{}"}}"#),
        None,
        Some(0),
        "tool call 0: id must be a string, not a number",
    );
    assert_error(&call(r#"{"id": "a"}"#), None, Some(0), "tool call 0 has no function");
    assert_error(
        &call(r#"{"id": "a", "function": "f"}"#),
        None,
        Some(0),
        "tool call 0: function must be an object, not a string",
    );
    assert_error(
        &call(r#"{"id": "a", "function": {"arguments": "{}"}}"#),
        None,
        Some(0),
        "tool call 0: function has no name",
    );
    assert_error(
        &call(r#"{"id": "a", "function": {"name": "f"}}"#),
        None,
        Some(0),
        "tool call 0: function has no arguments",
    );
    assert_error(
        &call(r#"{"id": "a", "function": {"name": "f", "arguments": [1]}}"#),
        None,
        Some(0),
        "tool call 0: function.arguments must be a string, not an array",
    );
    assert_error(
        &call(r#"7"#),
        None,
        Some(0),
        "tool call 0 must be an object, not a number",
    );
    assert_error(
        r#"[{"role": "assistant", "tool_calls": {}}]"#,
        None,
        Some(0),
        "tool_calls must be an array, not an object",
    );
    let anthropic = |b: &str| format!(r#"{{"system": "s", "messages": [{{"role": "assistant", "content": [{b}]}}]}}"#);
    assert_error(
        &anthropic(r#"{"type": "tool_use", "id": "a", "input": {}}"#),
        None,
        Some(0),
        "content block 0: a tool_use block has no name",
    );
    assert_error(
        &anthropic(r#"{"type": "tool_use", "id": "a", "name": "f"}"#),
        None,
        Some(0),
        "content block 0: a tool_use block has no input",
    );
    assert_error(
        &anthropic(r#"{"type": "tool_use", "id": ["a"], "name": "f", "input": {}}"#),
        None,
        Some(0),
        "content block 0: tool_use id must be a string, not an array",
    );
}

#[test]
fn a_tool_message_without_tool_call_id() {
    let input = r#"[{"role": "user", "content": "a"}, {"role": "tool", "content": "out"}]"#;
    assert_error(input, None, Some(1), "a tool message has no tool_call_id");
    assert_error(
        r#"[{"role": "tool", "tool_call_id": 5, "content": "out"}]"#,
        None,
        Some(0),
        "tool_call_id must be a string, not a number",
    );
    let input =
        r#"{"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "out"}]}]}"#;
    assert_error(
        input,
        None,
        Some(0),
        "content block 0: a tool_result block has no tool_use_id",
    );
    // mini-swe-agent's older trajectories do not require it.
    let input =
        r#"{"info": {}, "trajectory_format": "mini-swe-agent-1.0", "messages": [{"role": "tool", "content": "out"}]}"#;
    assert!(Document::from_bytes(input.as_bytes(), None, "conv.json").is_ok());
}

#[test]
fn content_of_the_wrong_type() {
    assert_error(
        r#"[{"role": "user", "content": 42}]"#,
        None,
        Some(0),
        "content must be a string, null or an array of parts, not a number",
    );
    assert_error(
        r#"[{"role": "user", "content": {"text": "a"}}]"#,
        None,
        Some(0),
        "content must be a string, null or an array of parts, not an object",
    );
    assert_error(
        r#"[{"role": "user", "content": ["a"]}]"#,
        None,
        Some(0),
        "content part 0: a content part must be an object, not a string",
    );
    assert_error(
        r#"[{"role": "user", "content": "a", "name": 1}]"#,
        None,
        Some(0),
        "name must be a string, not a number",
    );
    assert_error(
        r#"{"system": 5, "messages": []}"#,
        None,
        None,
        "system: content must be a string, null or an array of parts, not a number",
    );
    let input = r#"{"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 3}]}]}"#;
    assert_error(
        input,
        None,
        Some(0),
        "content block 0: content must be a string, null or an array of parts, not a number",
    );
    let input = r#"{"system": "s", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}, 3]}]}"#;
    assert_error(
        input,
        None,
        Some(0),
        "content block 1: a content part must be an object, not a number",
    );
}

#[test]
fn read_path_names_the_path_on_io_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let err = Document::read_path(&path, None).unwrap_err();
    assert_eq!(err.source_name, path.display().to_string());
    assert!(err.to_string().contains("absent.json: "), "{err}");
}

/// The API says `function.arguments` is JSON text, but some OpenAI-compatible servers and
/// clients send the object itself. It is read as its JSON text (what the planner, the
/// identity of a call and the summarizer read) and written back as the object it was, so
/// the request goes on as the client sent it; a string stays a string.
#[test]
fn function_arguments_sent_as_an_object_are_read_and_written_back_as_an_object() {
    let input = r#"[{"role": "assistant", "content": null, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"path": "src/x.rs", "n": 1.5, "deep": {"b": [1, 2], "a": null}}}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"q\": 1}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "b", "content": "ok"}]"#;
    let document = Document::from_bytes(input.as_bytes(), Some(Format::OpenAi), "conv.json").expect("accepted");
    let calls = &document.messages()[0].tool_calls;
    assert_eq!(
        calls[0].arguments,
        r#"{"path":"src/x.rs","n":1.5,"deep":{"b":[1,2],"a":null}}"#
    );
    assert_eq!(calls[1].arguments, r#"{"q": 1}"#);
    let original: serde_json::Value = serde_json::from_str(input).expect("JSON");
    assert_eq!(document.to_value(), original);
    // A summary, or a stub, that changes the arguments into text that is not an object
    // writes that text as the string the API specifies.
    let mut messages = document.messages().to_vec();
    messages[0].tool_calls[0].arguments = "not json".into();
    let value = document.with_messages(messages).to_value();
    assert_eq!(value[0]["tool_calls"][0]["function"]["arguments"], "not json");
    assert!(
        value[0]["tool_calls"][0]["function"]
            .get("_llm_compactor_arguments_object")
            .is_none()
    );
}

/// Keys starting `_llm_compactor_` are where the importers keep what they need to write
/// a message back; a document that sends one itself is refused, located, in every place
/// such a key would land (it would steer the export and not be written back itself).
#[test]
fn keys_of_the_crates_own_namespace_are_refused_where_they_would_be_kept() {
    let call = r#"{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}"#;
    for (input, format, index, problem) in [
        (
            r#"[{"role": "user", "content": "hi"}, {"role": "user", "content": "x", "_llm_compactor_anthropic": {}}]"#
                .to_owned(),
            Format::OpenAi,
            1,
            "`_llm_compactor_anthropic` is a key reserved",
        ),
        (
            format!(
                r#"[{{"role": "assistant", "content": null, "tool_calls": [{call}, {{"id": "b", "type": "function", "_llm_compactor_x": 1, "function": {{"name": "g", "arguments": "{{}}"}}}}]}}]"#
            ),
            Format::OpenAi,
            0,
            "tool call 1: `_llm_compactor_x`",
        ),
        (
            r#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"q\":1}", "_llm_compactor_arguments_object": true}}]}]"#
                .to_owned(),
            Format::OpenAi,
            0,
            "tool call 0: function.`_llm_compactor_arguments_object`",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "hi", "_llm_compactor_responses": "input"}]}"#.to_owned(),
            Format::Anthropic,
            0,
            "`_llm_compactor_responses` is a key reserved",
        ),
        (
            r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}, "_llm_compactor_anthropic": 1}]}]}"#
                .to_owned(),
            Format::Anthropic,
            0,
            "content block 0: `_llm_compactor_anthropic`",
        ),
        (
            r#"{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok", "_llm_compactor_x": 1}]}]}"#
                .to_owned(),
            Format::Anthropic,
            1,
            "content block 0: `_llm_compactor_x`",
        ),
    ] {
        assert_error(&input, Some(format), Some(index), problem);
    }
    // A key that only looks alike is an ordinary extra field, written back as it came.
    let input = r#"[{"role": "user", "content": "hi", "llm_compactor_note": 1, "_llm_compactor": 2}]"#;
    let document = Document::from_bytes(input.as_bytes(), Some(Format::OpenAi), "conv.json").expect("accepted");
    let original: serde_json::Value = serde_json::from_str(input).expect("JSON");
    assert_eq!(document.to_value(), original);
}
