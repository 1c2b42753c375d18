//! An upstream answer as expansion reads it: its turn (the wire items to put back in the
//! conversation) and its tool calls; the results that answer them; and the library's
//! messages for both (what the store records and the follow-up request carries).

use llm_compactor::Message;
use llm_compactor::format::responses::ResponsesRequest;
use llm_compactor::format::{Document, Format};
use llm_compactor::session::EXPAND_TOOL_NAME;
use serde_json::{Map, Value, json};

use crate::api::Api;

/// One tool call of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The call's id (`tool_call_id`, `tool_use_id`, `call_id`).
    pub id: String,
    /// The tool called.
    pub name: String,
    /// Its arguments, as JSON text.
    pub arguments: String,
}

/// The part of an answer expansion needs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// The answer's turn as wire items of its API: one assistant message (chat
    /// completions, Messages) or the output items (Responses).
    pub items: Vec<Value>,
    /// Its tool calls, in order.
    pub calls: Vec<Call>,
}

impl Answer {
    /// True when the model asked for an expansion.
    pub fn expands(&self) -> bool {
        self.calls.iter().any(|call| call.name == EXPAND_TOOL_NAME)
    }

    /// The answer of a non-streamed response body of `api`; `None` when it is not one
    /// (an error, another shape).
    pub fn of_body(api: Api, body: &Value) -> Option<Answer> {
        match api {
            Api::OpenAi => Some(chat_answer(body.pointer("/choices/0/message")?.as_object()?.clone())),
            Api::Anthropic => Some(anthropic_answer(body.get("content")?.as_array()?.clone())),
            Api::Responses => Some(responses_answer(body.get("output")?.as_array()?.clone())),
        }
    }
}

/// A chat completions assistant message (its null fields, `refusal` and `annotations`
/// dropped: they are the answer's, not input).
pub fn chat_answer(mut message: Map<String, Value>) -> Answer {
    message.retain(|key, value| !value.is_null() && key != "refusal" && key != "annotations");
    message.insert("role".into(), json!("assistant"));
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| Call {
            id: text(call, "/id"),
            name: text(call, "/function/name"),
            arguments: text(call, "/function/arguments"),
        })
        .collect();
    Answer {
        items: vec![Value::Object(message)],
        calls,
    }
}

/// A Messages answer's content blocks.
pub fn anthropic_answer(content: Vec<Value>) -> Answer {
    let calls = content
        .iter()
        .filter(|block| block["type"] == "tool_use")
        .map(|block| Call {
            id: text(block, "/id"),
            name: text(block, "/name"),
            arguments: block.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
        })
        .collect();
    Answer {
        items: vec![json!({"role": "assistant", "content": content})],
        calls,
    }
}

/// A Responses answer's output items.
pub fn responses_answer(output: Vec<Value>) -> Answer {
    let calls = output
        .iter()
        .filter(|item| item["type"] == "function_call")
        .map(|item| Call {
            id: text(item, "/call_id"),
            name: text(item, "/name"),
            arguments: text(item, "/arguments"),
        })
        .collect();
    Answer { items: output, calls }
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The wire items answering `calls` with `outputs` (one each, in order).
pub fn results(api: Api, calls: &[Call], outputs: &[String]) -> Vec<Value> {
    let pairs = calls.iter().zip(outputs);
    match api {
        Api::OpenAi => pairs
            .map(|(call, output)| json!({"role": "tool", "tool_call_id": call.id, "content": output}))
            .collect(),
        Api::Anthropic => vec![json!({
            "role": "user",
            "content": pairs
                .map(|(call, output)| json!({"type": "tool_result", "tool_use_id": call.id, "content": output}))
                .collect::<Vec<_>>(),
        })],
        Api::Responses => pairs
            .map(|(call, output)| json!({"type": "function_call_output", "call_id": call.id, "output": output}))
            .collect(),
    }
}

/// What a call to another tool in an expanding turn is answered with: it was not run.
pub fn not_run(call: &Call) -> String {
    format!(
        "[not run by the harness: this turn also called {EXPAND_TOOL_NAME}; call {} again if it is still needed]",
        call.name
    )
}

/// The library's messages for wire `items` of `api`.
///
/// # Errors
/// The items are not a conversation the library's codec reads (the problem in words).
pub fn messages_of(api: Api, items: Vec<Value>) -> Result<Vec<Message>, String> {
    let source = "the upstream's answer";
    match api {
        Api::OpenAi | Api::Anthropic => {
            let format = if api == Api::OpenAi {
                Format::OpenAi
            } else {
                Format::Anthropic
            };
            Document::from_value(json!({ "messages": items }), Some(format), source)
                .map(Document::into_messages)
                .map_err(|e| e.to_string())
        }
        Api::Responses => ResponsesRequest::from_value(json!({ "input": items }), source)
            .map(ResponsesRequest::into_messages)
            .map_err(|e| format!("{e:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_routes_answer_names_its_calls_and_its_results_answer_them() {
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": EXPAND_TOOL_NAME, "arguments": "{\"handles\":[\"#0123456789\"]}"}}]}}]});
        let anthropic = json!({"content": [{"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "c1", "name": EXPAND_TOOL_NAME, "input": {"handles": ["#0123456789"]}}]});
        let responses = json!({"output": [{"type": "function_call", "id": "fc_1", "call_id": "c1", "name": EXPAND_TOOL_NAME,
            "arguments": "{\"handles\":[\"#0123456789\"]}", "status": "completed"}]});
        for (api, body) in [
            (Api::OpenAi, chat),
            (Api::Anthropic, anthropic),
            (Api::Responses, responses),
        ] {
            let answer = Answer::of_body(api, &body).unwrap();
            assert!(answer.expands(), "{api:?}");
            assert_eq!(answer.calls[0].id, "c1");
            assert_eq!(
                llm_compactor::session::requested_handles(&answer.calls[0].arguments),
                vec!["#0123456789".to_owned()]
            );
            let mut items = answer.items.clone();
            items.extend(results(api, &answer.calls, &["the original".to_owned()]));
            let messages = messages_of(api, items).unwrap();
            let last = messages.last().unwrap();
            assert_eq!(last.content.text(), "the original", "{api:?}");
            assert!(
                messages.iter().any(|m| m.tool_calls.iter().any(|c| c.id == "c1")),
                "{api:?}"
            );
        }
        assert!(Answer::of_body(Api::OpenAi, &json!({"error": {}})).is_none());
    }
}
