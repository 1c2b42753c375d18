//! Server-side tools in the ledger: calls a provider ran within a response.
//!
//! Why: an agent on the Responses API or on Anthropic's server tools runs commands,
//! reads files and calls MCP servers without a client tool call: the calls and their
//! results are parts of the assistant turn ([`crate::message::Part::Other`]), not tool
//! calls and tool messages. Without this module a ledger-only summary (and the ledger
//! under every summary) would lose the commands a code execution ran and the errors an
//! MCP call returned. Read here, as the client's own calls are:
//!
//! - Anthropic `server_tool_use` / `mcp_tool_use`: a call, its `input` the arguments
//!   (so `bash_code_execution`'s `command` is a command, `text_editor_code_execution`'s
//!   `path` a file); answered by the `*_tool_result` block with its `tool_use_id`;
//! - the results read as results (their errors and exit codes): code execution's
//!   `stdout`, `stderr` and `return_code`, and an MCP result's text;
//! - Responses `mcp_call` (its `arguments`, then its `output` or `error`) and
//!   `code_interpreter_call` (its `code`, then its logs), call and result in one item.
//!
//! A result the provider marks as failed (an MCP result with `is_error`, an `mcp_call`
//! with an `error`, a code execution `*_error` block with its `error_code`) is an open
//! error in its own words, its first line, whatever patterns it matches.
//!
//! Web search and fetch results are not read as results: a page's text is not the
//! agent's error (a fetched page that quotes a `TypeError` would be listed as open).

use serde_json::{Value, json};

use super::scan::first_line;

/// One server-side event of an assistant turn, in the ledger's terms.
#[derive(Debug, PartialEq)]
pub(super) enum Hosted {
    /// A call, answered later by a [`Hosted::Result`] with the same id (Anthropic).
    Call {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Its arguments, JSON text.
        arguments: String,
    },
    /// The result of the call with this id (Anthropic).
    Result {
        /// The id of the call it answers.
        id: String,
        /// What the result says (output, errors, exit code).
        text: String,
        /// The error the provider marked it with, if it failed.
        error: Option<String>,
    },
    /// A call and its result in one item (Responses).
    Answered {
        /// The tool's name.
        name: String,
        /// Its arguments, JSON text.
        arguments: String,
        /// What the result says.
        text: String,
        /// The error the provider marked it with, if it failed.
        error: Option<String>,
    },
}

/// Result block types whose text is the agent's own output (not a web page).
const RESULT_TYPES: [&str; 4] = [
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "mcp_tool_result",
];

/// What `part` is to the ledger, if anything.
pub(super) fn hosted(part: &Value) -> Option<Hosted> {
    let string = |key: &str| part.get(key).and_then(Value::as_str).map(str::to_owned);
    match part.get("type").and_then(Value::as_str)? {
        "server_tool_use" | "mcp_tool_use" => Some(Hosted::Call {
            id: string("id")?,
            name: string("name")?,
            arguments: part.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
        }),
        kind if RESULT_TYPES.contains(&kind) => {
            let content = part.get("content")?;
            let text = result_text(content);
            let error_code = content.get("error_code").and_then(Value::as_str);
            let error = match error_code {
                Some(code) => Some(format!("{kind}: {code}")),
                None => (part.get("is_error") == Some(&Value::Bool(true))).then(|| first_line(&text).to_owned()),
            };
            Some(Hosted::Result {
                id: string("tool_use_id")?,
                text,
                error: error.filter(|e| !e.is_empty()),
            })
        }
        "mcp_call" => {
            let error = part.get("error").map(result_text).filter(|e| !e.is_empty());
            Some(Hosted::Answered {
                name: string("name")?,
                arguments: string("arguments").unwrap_or_else(|| "{}".to_owned()),
                text: part.get("output").map(result_text).unwrap_or_default(),
                error: error.map(|e| first_line(&e).to_owned()),
            })
        }
        "code_interpreter_call" => Some(Hosted::Answered {
            name: "code_interpreter".to_owned(),
            arguments: json!({"code": string("code").unwrap_or_default()}).to_string(),
            text: part.get("outputs").map(result_text).unwrap_or_default(),
            error: None,
        }),
        _ => None,
    }
}

/// The text of a result: its strings under the keys that carry output (`text`,
/// `stdout`, `stderr`, `output`, `error`, `error_code`, `logs`, or the result itself
/// when it is a string), and an `exit code N` line for a `return_code`.
fn result_text(value: &Value) -> String {
    let mut out = Vec::new();
    collect(value, true, &mut out);
    out.join("\n")
}

fn collect(value: &Value, wanted: bool, out: &mut Vec<String>) {
    match value {
        Value::String(text) if wanted && !text.is_empty() => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect(item, wanted, out)),
        Value::Object(members) => {
            for (key, member) in members {
                match key.as_str() {
                    "return_code" => {
                        if let Some(code) = member.as_i64() {
                            out.push(format!("exit code {code}"));
                        }
                    }
                    "text" | "stdout" | "stderr" | "output" | "error" | "error_code" | "logs" => {
                        collect(member, true, out);
                    }
                    "content" => collect(member, wanted, out),
                    _ => collect(member, false, out),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_server_calls_and_their_results() {
        let call = json!({"type": "server_tool_use", "id": "srv_1", "name": "bash_code_execution",
                          "input": {"command": "pytest -q"}});
        assert_eq!(
            hosted(&call),
            Some(Hosted::Call {
                id: "srv_1".into(),
                name: "bash_code_execution".into(),
                arguments: r#"{"command":"pytest -q"}"#.into()
            })
        );
        let result = json!({"type": "bash_code_execution_tool_result", "tool_use_id": "srv_1",
            "content": {"type": "bash_code_execution_result", "stdout": "1 failed", "stderr": "E   AssertionError",
                        "return_code": 1, "content": []}});
        assert_eq!(
            hosted(&result),
            Some(Hosted::Result {
                id: "srv_1".into(),
                text: "1 failed\nE   AssertionError\nexit code 1".into(),
                error: None
            })
        );
        let mcp = json!({"type": "mcp_tool_result", "tool_use_id": "m", "is_error": true,
                         "content": [{"type": "text", "text": "permission denied"}]});
        assert_eq!(
            hosted(&mcp),
            Some(Hosted::Result {
                id: "m".into(),
                text: "permission denied".into(),
                error: Some("permission denied".into())
            })
        );
        let timeout = json!({"type": "code_execution_tool_result", "tool_use_id": "c",
                             "content": {"type": "code_execution_tool_result_error", "error_code": "execution_time_exceeded"}});
        assert_eq!(
            hosted(&timeout),
            Some(Hosted::Result {
                id: "c".into(),
                text: "execution_time_exceeded".into(),
                error: Some("code_execution_tool_result: execution_time_exceeded".into())
            })
        );
    }

    #[test]
    fn web_results_are_not_results_and_other_parts_are_nothing() {
        let page = json!({"type": "web_fetch_tool_result", "tool_use_id": "w",
            "content": {"type": "web_fetch_result", "url": "https://a.example",
                        "content": {"type": "document", "source": {"type": "text", "data": "TypeError: x"}}}});
        assert_eq!(hosted(&page), None);
        assert_eq!(hosted(&json!({"type": "image", "source": {}})), None);
        assert_eq!(hosted(&json!({"type": "server_tool_use", "name": "x"})), None, "no id");
    }

    #[test]
    fn responses_calls_carry_their_results() {
        let mcp = json!({"type": "mcp_call", "server_label": "ops", "name": "tail_log",
                         "arguments": "{\"path\":\"/var/log/backup.log\"}", "output": null, "error": "timeout after 30s"});
        assert_eq!(
            hosted(&mcp),
            Some(Hosted::Answered {
                name: "tail_log".into(),
                arguments: "{\"path\":\"/var/log/backup.log\"}".into(),
                text: String::new(),
                error: Some("timeout after 30s".into())
            })
        );
        let code = json!({"type": "code_interpreter_call", "code": "1/0",
                          "outputs": [{"type": "logs", "logs": "ZeroDivisionError: division by zero"}, {"type": "image", "url": "u"}]});
        assert_eq!(
            hosted(&code),
            Some(Hosted::Answered {
                name: "code_interpreter".into(),
                arguments: r#"{"code":"1/0"}"#.into(),
                text: "ZeroDivisionError: division by zero".into(),
                error: None
            })
        );
    }
}
