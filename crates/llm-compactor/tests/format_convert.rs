//! Conversions and the model an import builds, on small hand-written conversations.

use crate::format_support;

use llm_compactor::format::{ANTHROPIC_HINT_KEY, Document, Format, detect};
use llm_compactor::message::{Content, Message, Part, Role};
use serde_json::{Value, json};

fn doc(value: Value) -> Document {
    Document::from_value(value, None, "test.json").unwrap()
}

#[test]
fn format_names_parse_and_display() {
    for format in Format::ALL {
        assert_eq!(format.to_string().parse::<Format>(), Ok(format));
    }
    assert_eq!("OpenAI".parse::<Format>(), Ok(Format::OpenAi));
    let err = "gemini".parse::<Format>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown format `gemini` (expected openai, anthropic or mini-swe-agent)"
    );
    assert_eq!(
        serde_json::to_value(Format::MiniSweAgent).unwrap(),
        json!("mini-swe-agent")
    );
}

#[test]
fn detection_follows_the_documented_rules() {
    assert_eq!(detect(&json!([])), Ok(Format::OpenAi));
    assert_eq!(detect(&json!({"messages": []})), Ok(Format::OpenAi));
    assert_eq!(
        detect(&json!({"trajectory_format": "mini-swe-agent-1.0", "messages": []})),
        Ok(Format::MiniSweAgent)
    );
    assert_eq!(
        detect(&json!({"info": {}, "instance_id": "x", "messages": []})),
        Ok(Format::MiniSweAgent)
    );
    assert_eq!(detect(&json!({"system": [], "messages": []})), Ok(Format::Anthropic));
    let blocks = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]});
    assert_eq!(detect(&blocks), Ok(Format::Anthropic));
    assert!(detect(&json!(null)).is_err());
    assert!(
        detect(&json!({"messages": "no"}))
            .unwrap_err()
            .problem
            .contains("must be an array")
    );
}

#[test]
fn openai_import_models_every_field_and_keeps_the_rest() {
    let d = doc(json!([
        {"role": "developer", "content": "rules"},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}", "strict": true}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": [{"type": "text", "text": "out"}]},
        {"role": "user"}
    ]));
    let m = d.messages();
    assert_eq!(m[0].role, Role::Developer);
    assert!(m[0].sysprompt && m[0].is_sticky());
    assert_eq!(m[1].content, Content::Null);
    assert_eq!(m[1].extras["refusal"], Value::Null);
    let call = &m[1].tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str(), call.arguments.as_str()),
        ("c1", "f", "{\"a\":1}")
    );
    assert_eq!(call.extras["index"], json!(0));
    assert_eq!(call.extras["type"], json!("function"));
    assert_eq!(call.extras["function"], json!({"strict": true}));
    assert_eq!(m[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(m[2].name.as_deref(), Some("f"));
    assert_eq!(m[2].content, Content::Parts(vec![Part::text("out")]));
    assert_eq!(m[3].content, Content::Absent);
}

#[test]
fn anthropic_import_splits_tool_results_and_export_regroups_them() {
    let wire = json!({
        "model": "claude",
        "system": [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                {"type": "text", "text": "and"},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b"}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "note first"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "B"}]},
                {"type": "text", "text": "note last"}]}
        ]
    });
    let d = doc(wire.clone());
    assert_eq!(d.format(), Format::Anthropic);
    let m = d.messages();
    let roles: Vec<&Role> = m.iter().map(|m| &m.role).collect();
    assert_eq!(
        roles,
        [
            &Role::System,
            &Role::User,
            &Role::Assistant,
            &Role::Tool,
            &Role::Tool,
            &Role::User
        ]
    );
    assert!(m[0].sysprompt);
    assert_eq!(m[2].tool_calls.len(), 2);
    assert_eq!(m[2].tool_calls[0].arguments, r#"{"path":"a"}"#);
    assert!(matches!(&m[2].content, Content::Parts(p) if p[1] == Part::ToolUse { id: "t1".into() }));
    assert_eq!(m[3].tool_call_id.as_deref(), Some("t1"));
    assert_eq!(m[3].extras["is_error"], json!(false));
    assert_eq!(m[5].text(), "note first\nnote last");
    assert_eq!(d.to_value(), wire);

    // The OpenAI view drops the hint, the placeholders and the thinking, and is valid.
    let openai = d.to_format(Format::OpenAi).unwrap();
    assert!(!openai.to_string().contains(ANTHROPIC_HINT_KEY));
    format_support::assert_valid_openai(&openai, "test");
    assert_eq!(openai["model"], "claude");
    assert_eq!(
        openai["messages"][0],
        json!({"role": "system", "content": [{"type": "text", "text": "rules"}]})
    );
    assert_eq!(
        openai["messages"][2]["content"],
        json!([{"type": "text", "text": "and"}])
    );

    // Exporting the Anthropic messages as an OpenAI document directly also leaves the hint out.
    let raw = Document::from_messages(Format::OpenAi, d.messages().to_vec()).to_value();
    assert!(!raw.to_string().contains(ANTHROPIC_HINT_KEY));
}

#[test]
fn a_compacted_anthropic_document_still_groups_what_is_left() {
    let d = doc(json!({"system": "s", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A very long output"},
            {"type": "text", "text": "continue"}]}
    ]}));
    let mut messages = d.messages().to_vec();
    messages[3].content = Content::Text("[elided]".into());
    messages.insert(1, Message::user("Summary of earlier work."));
    let out = d.with_messages(messages).to_value();
    assert_eq!(
        out["messages"][3],
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "[elided]"},
        {"type": "text", "text": "continue"}]})
    );
}

#[test]
fn openai_to_anthropic_groups_tools_maps_images_system_and_parameters() {
    let d = doc(json!({
        "model": "gpt-4o", "max_completion_tokens": 100, "stop": "END", "temperature": 0.2,
        "tool_choice": "required", "user": "someone",
        "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "not json"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "a"},
            {"role": "tool", "tool_call_id": "c2", "content": "b"},
            {"role": "user", "content": "thanks"},
            {"role": "system", "content": "late instruction"},
            {"role": "assistant", "content": "ok"}
        ]
    }));
    let a = d.to_format(Format::Anthropic).unwrap();
    format_support::assert_valid_anthropic(&a, "test");
    assert_eq!(
        a,
        json!({
            "model": "gpt-4o", "temperature": 0.2, "max_tokens": 100, "stop_sequences": ["END"],
            "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "system": "rules",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "bash", "input": {"cmd": "ls"}},
                    {"type": "tool_use", "id": "c2", "name": "bash", "input": {"arguments": "not json"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "b"},
                    {"type": "text", "text": "thanks"},
                    {"type": "text", "text": "late instruction"}]},
                {"role": "assistant", "content": "ok"}
            ]
        })
    );
}

#[test]
fn anthropic_to_openai_maps_parameters_and_images() {
    let d = doc(json!({
        "model": "claude", "max_tokens": 10, "stop_sequences": ["x"], "metadata": {"user_id": "u"},
        "tools": [{"name": "f", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name_missing": true}],
        "tool_choice": {"type": "tool", "name": "f"},
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QQ=="}},
            {"type": "document", "source": {"type": "text", "data": "doc"}}]}]
    }));
    let o = d.to_format(Format::OpenAi).unwrap();
    format_support::assert_valid_openai(&o, "test");
    assert_eq!(
        o,
        json!({
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QQ=="}},
                {"type": "text", "text": "[document omitted]"}]}],
            "model": "claude", "max_tokens": 10, "stop": ["x"],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}}
        })
    );
    // Without parameters an OpenAI conversation is a bare array.
    let bare = doc(json!({"system": "s", "messages": []}))
        .to_format(Format::OpenAi)
        .unwrap();
    assert_eq!(bare, json!([{"role": "system", "content": "s"}]));
}

#[test]
fn a_mini_swe_agent_target_is_a_fresh_trajectory() {
    let d = doc(json!([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]));
    let t = d.to_format(Format::MiniSweAgent).unwrap();
    assert_eq!(t["trajectory_format"], "mini-swe-agent-1.1");
    assert_eq!(doc(t).format(), Format::MiniSweAgent);
    let fresh = Document::from_messages(Format::Anthropic, vec![Message::system("s"), Message::user("u")]);
    assert_eq!(
        fresh.to_value(),
        json!({"system": "s", "messages": [{"role": "user", "content": "u"}]})
    );
}
