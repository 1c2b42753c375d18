//! What each agent CLI sends, request after request: Claude Code's and Codex CLI's
//! shapes (system prompts, tool declarations, the moving cache mark, tool results of
//! 3–17 KB), built from deterministic prose so the tokenizer sees prompt-like text.

use serde_json::{Map, Value, json};

/// Deterministic prose: words drawn from a small vocabulary by a fixed generator, so the
/// tokenizer sees text like a prompt's rather than one repeated word.
struct Prose(u64);

impl Prose {
    const WORDS: [&'static str; 48] = [
        "the",
        "agent",
        "must",
        "always",
        "read",
        "file",
        "before",
        "editing",
        "it",
        "use",
        "tool",
        "when",
        "command",
        "output",
        "directory",
        "never",
        "create",
        "new",
        "unless",
        "user",
        "asks",
        "for",
        "a",
        "change",
        "run",
        "tests",
        "after",
        "each",
        "edit",
        "prefer",
        "small",
        "diffs",
        "explain",
        "briefly",
        "what",
        "you",
        "did",
        "and",
        "why",
        "paths",
        "are",
        "absolute",
        "quote",
        "them",
        "with",
        "spaces",
        "IMPORTANT:",
        "`git`",
    ];

    fn text(&mut self, chars: usize) -> String {
        let mut out = String::with_capacity(chars + 16);
        let mut sentence = 0;
        while out.len() < chars {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let word = Self::WORDS[(self.0 >> 33) as usize % Self::WORDS.len()];
            out.push_str(word);
            sentence += 1;
            if sentence % 13 == 0 {
                out.push_str(".\n");
            } else {
                out.push(' ');
            }
        }
        out
    }
}

/// Round `n`'s tool output: a marker line, then 3–17 KB of numbered lines (the
/// real-client suite's scripted model prints the same sizes).
fn tool_output(n: usize) -> String {
    let bytes = 3 * 1024 + (n * 7919 % 15) * 1024 - 16;
    let mut out = format!("ROUND {n}\n");
    let mut line = 1;
    while out.len() < bytes {
        out.push_str(&format!(
            "round {n:02} line {line:05}: scripted output filling the context window of the agent\n"
        ));
        line += 1;
    }
    out
}

/// Which client's requests a run sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    ClaudeCode,
    Codex,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::ClaudeCode => "claude-code",
            Shape::Codex => "codex",
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Shape::ClaudeCode => "/v1/messages",
            Shape::Codex => "/v1/responses",
        }
    }
}

/// One client session: what it sends, round after round.
pub struct Client {
    shape: Shape,
    id: String,
    /// The fixed fields (system, tools, settings), in the client's key order.
    fixed: Map<String, Value>,
    /// The conversation so far.
    history: Vec<Value>,
}

impl Client {
    pub fn new(shape: Shape, session: usize) -> Self {
        let mut prose = Prose(0x5eed + session as u64);
        let id = format!("6e2d1c31-dd50-40da-ae6b-{session:012}");
        let mut fixed = Map::new();
        let history = match shape {
            Shape::ClaudeCode => {
                fixed.insert(
                    "system".into(),
                    json!([
                        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;"},
                        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                         "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": prose.text(28_000), "cache_control": {"type": "ephemeral"}},
                    ]),
                );
                fixed.insert("tools".into(), Value::Array(claude_tools(&mut prose)));
                fixed.insert(
                    "metadata".into(),
                    json!({"user_id": json!({"device_id": "c409edb075b077f46d3c0cbc10993cdd3bee42fa9fccf5d8fae7aef430139328",
                        "account_uuid": "", "session_id": id}).to_string()}),
                );
                fixed.insert("max_tokens".into(), json!(32000));
                fixed.insert(
                    "thinking".into(),
                    json!({"budget_tokens": 31999, "type": "enabled", "display": "omitted"}),
                );
                fixed.insert(
                    "context_management".into(),
                    json!({"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}),
                );
                fixed.insert("stream".into(), json!(true));
                let mut blocks: Vec<Value> = [845, 198, 495, 1934, 6494, 116, 94, 628]
                    .iter()
                    .map(|&n| json!({"type": "text", "text": format!("<system-reminder>\n{}\n</system-reminder>", prose.text(n))}))
                    .collect();
                blocks
                    .push(json!({"type": "text", "text": "Run the scripted rounds until the model says it is done."}));
                vec![json!({"role": "user", "content": blocks})]
            }
            Shape::Codex => {
                fixed.insert("stream".into(), json!(true));
                fixed.insert("tools".into(), Value::Array(codex_tools(&mut prose)));
                fixed.insert("tool_choice".into(), json!("auto"));
                fixed.insert("parallel_tool_calls".into(), json!(true));
                fixed.insert("reasoning".into(), json!({"summary": "auto"}));
                fixed.insert("store".into(), json!(false));
                fixed.insert("include".into(), json!(["reasoning.encrypted_content"]));
                fixed.insert("prompt_cache_key".into(), json!(id));
                fixed.insert(
                    "client_metadata".into(),
                    json!({"turn_id": format!("turn-{session}"), "x-codex-turn-metadata": prose.text(900)}),
                );
                let message = |id: usize, role: &str, text: String| {
                    json!({"type": "message", "id": format!("msg_{session}_{id}"), "role": role,
                        "content": [{"type": "input_text", "text": text}]})
                };
                vec![
                    message(0, "developer", prose.text(17_500)),
                    message(1, "developer", prose.text(2_600)),
                    message(2, "user", prose.text(450)),
                    message(
                        3,
                        "user",
                        "Run the scripted rounds until the model says it is done.".to_owned(),
                    ),
                ]
            }
        };
        Client {
            shape,
            id,
            fixed,
            history,
        }
    }

    /// The request of the current round, and its headers.
    pub fn request(&self) -> (Vec<u8>, Vec<(&'static str, String)>) {
        let mut body = Map::new();
        match self.shape {
            Shape::ClaudeCode => {
                body.insert("model".into(), json!("claude-sonnet-4-5"));
                body.insert("messages".into(), Value::Array(self.history.clone()));
            }
            Shape::Codex => {
                body.insert("model".into(), json!("gpt-5-codex"));
                body.insert("input".into(), Value::Array(self.history.clone()));
            }
        }
        for (key, value) in &self.fixed {
            // Claude Code sends `messages` before `system`; Codex `stream` before `input`.
            body.insert(key.clone(), value.clone());
        }
        let headers = match self.shape {
            Shape::ClaudeCode => vec![
                ("x-claude-code-session-id", self.id.clone()),
                ("anthropic-version", "2023-06-01".to_owned()),
                (
                    "anthropic-beta",
                    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27".to_owned(),
                ),
                ("x-api-key", "sk-ant-bench".to_owned()),
            ],
            Shape::Codex => vec![
                ("session-id", self.id.clone()),
                ("authorization", "Bearer sk-bench".to_owned()),
            ],
        };
        (serde_json::to_vec(&Value::Object(body)).unwrap(), headers)
    }

    /// The model's answer to round `n` (a tool call) and the tool's output, appended as
    /// the client appends them; Claude Code moves its cache mark to the new last block.
    pub fn advance(&mut self, n: usize) {
        let output = tool_output(n);
        match self.shape {
            Shape::ClaudeCode => {
                if let Some(last) = self.history.last_mut()
                    && let Some(blocks) = last["content"].as_array_mut()
                    && let Some(Value::Object(block)) = blocks.last_mut()
                {
                    block.remove("cache_control");
                }
                let call = format!("toolu_bench_{n:05}");
                self.history.push(json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "", "signature": format!("{:064x}", n as u128 * 0x9e3779b97f4a7c15)},
                    {"type": "tool_use", "id": call, "name": "Bash",
                     "input": {"command": format!("bash round-{n}.sh"), "description": format!("Print round {n}'s output")}},
                ]}));
                self.history.push(json!({"role": "user", "content": [
                    {"tool_use_id": call, "type": "tool_result", "content": output, "is_error": false,
                     "cache_control": {"type": "ephemeral"}},
                ]}));
            }
            Shape::Codex => {
                let call = format!("call_bench_{n:05}");
                self.history.push(json!({"type": "function_call", "status": "completed",
                    "id": format!("fc_{n:05}"), "name": "exec_command",
                    "arguments": json!({"cmd": format!("bash round-{n}.sh")}).to_string(), "call_id": call}));
                self.history
                    .push(json!({"type": "function_call_output", "call_id": call,
                    "output": output}));
            }
        }
    }
}

/// A tool declaration with a long description and a nested schema.
fn tool_schema(prose: &mut Prose, name: &str, description: usize, properties: usize) -> (String, Value) {
    let mut props = Map::new();
    for i in 0..properties {
        props.insert(
            format!("{name}_arg_{i}"),
            json!({"type": if i % 3 == 0 {"string"} else if i % 3 == 1 {"integer"} else {"array"},
                "description": prose.text(120 + 40 * (i % 5)),
                "items": {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}}}),
        );
    }
    let required: Vec<String> = props.keys().take(2).cloned().collect();
    (
        prose.text(description),
        json!({"type": "object", "properties": props, "required": required, "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"}),
    )
}

/// Claude Code's tools: 12 declarations, ~48 KB.
fn claude_tools(prose: &mut Prose) -> Vec<Value> {
    [
        ("Agent", 8000, 6),
        ("Bash", 10_500, 6),
        ("Edit", 1000, 4),
        ("ListAgents", 1200, 4),
        ("Read", 2000, 5),
        ("ReportFindings", 1500, 5),
        ("ScheduleWakeup", 3800, 6),
        ("Skill", 1100, 4),
        ("ToolSearch", 900, 3),
        ("Workflow", 4500, 6),
        ("Glob", 600, 2),
        ("Write", 600, 3),
    ]
    .iter()
    .map(|&(name, description, properties)| {
        let (description, schema) = tool_schema(prose, name, description, properties);
        json!({"name": name, "description": description, "input_schema": schema})
    })
    .collect()
}

/// Codex CLI's tools: 8 functions and a web search, ~18 KB.
fn codex_tools(prose: &mut Prose) -> Vec<Value> {
    let mut tools: Vec<Value> = [
        ("exec_command", 900, 5),
        ("write_stdin", 400, 3),
        ("request_user_input", 800, 4),
        ("view_image", 200, 1),
        ("multi_agent_v1", 7000, 6),
        ("get_goal", 150, 1),
        ("create_goal", 400, 3),
        ("update_goal", 1200, 5),
    ]
    .iter()
    .map(|&(name, description, properties)| {
        let (description, schema) = tool_schema(prose, name, description, properties);
        json!({"type": "function", "name": name, "description": description, "strict": false, "parameters": schema})
    })
    .collect();
    tools.push(json!({"type": "web_search", "external_web_access": false}));
    tools
}
