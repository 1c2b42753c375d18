//! A Codex-like run on the Responses API: the local shell tool and a hosted web search.
//! Shared by the library's request codec tests and the proxy's (which include this file
//! by path: one run, read by both).

use serde_json::{Value, json};

/// The run's first item: the user's request.
pub fn codex_ask() -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": "find why the build fails"}]})
}

/// The items of round `i`: a reasoning item, a hosted web search every third round, a
/// local shell call and its output of `output_lines` lines.
pub fn codex_round(i: usize, output_lines: usize) -> Vec<Value> {
    let mut items = vec![
        json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [], "encrypted_content": format!("enc{i}")}),
    ];
    if i % 3 == 0 {
        items.push(
            json!({"type": "web_search_call", "id": format!("ws_{i}"), "status": "completed",
                          "action": {"type": "search", "query": format!("error E{i}")}}),
        );
    }
    items.push(json!({"type": "local_shell_call", "id": format!("lsh_{i}"), "call_id": format!("c{i}"), "status": "completed",
                      "action": {"type": "exec", "command": ["bash", "-lc", format!("make t{i}")], "env": {}, "timeout_ms": 1000}}));
    items.push(json!({"type": "local_shell_call_output", "call_id": format!("c{i}"),
                      "output": format!("{i}: {}", "log line\n".repeat(output_lines))}));
    items
}
