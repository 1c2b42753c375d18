//! Where the `compactor_expand` tool goes in a request, per route, and when it may.
//!
//! The rules (documented in `docs/expand.md`):
//! - only a request that declares tools of its own gets it: a client that sent none may
//!   be talking to a model or a provider that takes no tools at all, and a request that
//!   had none would change shape;
//! - only when the client lets the model choose (`tool_choice` absent or `auto`): a
//!   forced tool, `required`/`any` or `none` is the client's decision, and an extra tool
//!   would either be ignored or steal the forced call;
//! - never when the client declares a tool of the same name (it is the client's);
//! - the tool goes last in `tools`, after any cache breakpoint the client put on its own
//!   tools, so the client's cached prefix is unchanged up to it;
//! - each route's shape: chat completions `{"type":"function","function":{…}}`,
//!   Messages `{"name","description","input_schema"}`, Responses
//!   `{"type":"function","name",…,"strict":false}`.

use llm_compactor::session::{EXPAND_TOOL_NAME, expand_tool_definition};
use serde_json::{Map, Value, json};

use crate::api::Api;

/// True when the client's request (`body`, as it sent it) may be offered the tool.
pub fn may_offer(api: Api, body: &Map<String, Value>) -> bool {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return false;
    };
    if tools.is_empty() || tools.iter().any(|tool| tool_name(api, tool) == Some(EXPAND_TOOL_NAME)) {
        return false;
    }
    match body.get("tool_choice") {
        None | Some(Value::Null) => true,
        Some(Value::String(choice)) => choice == "auto",
        Some(Value::Object(choice)) => {
            api == Api::Anthropic && choice.get("type").and_then(Value::as_str) == Some("auto")
        }
        Some(_) => false,
    }
}

fn tool_name(api: Api, tool: &Value) -> Option<&str> {
    match api {
        Api::OpenAi => tool.pointer("/function/name"),
        Api::Anthropic | Api::Responses => tool.get("name"),
    }
    .and_then(Value::as_str)
}

/// The tool's definition in `api`'s shape.
pub fn definition(api: Api) -> Value {
    let chat = expand_tool_definition();
    let function = &chat["function"];
    match api {
        Api::OpenAi => chat,
        Api::Anthropic => json!({
            "name": EXPAND_TOOL_NAME,
            "description": function["description"],
            "input_schema": function["parameters"],
        }),
        Api::Responses => json!({
            "type": "function",
            "name": EXPAND_TOOL_NAME,
            "description": function["description"],
            "parameters": function["parameters"],
            "strict": false,
        }),
    }
}

/// `body` (an outgoing request) with the tool appended to its `tools`; with `last`, the
/// model is also told to call no tool (`tool_choice` none: the last follow-up a client
/// request may cost is answered in text).
pub fn offer(api: Api, body: &mut Map<String, Value>, last: bool) {
    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        tools.push(definition(api));
    }
    if last {
        let none = match api {
            Api::Anthropic => json!({"type": "none"}),
            Api::OpenAi | Api::Responses => json!("none"),
        };
        body.insert("tool_choice".into(), none);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may_offer(api: Api, body: &Value) -> bool {
        super::may_offer(api, body.as_object().unwrap())
    }

    #[test]
    fn only_requests_with_tools_and_a_free_choice_get_it() {
        let chat_tool = json!({"type": "function", "function": {"name": "bash", "parameters": {}}});
        assert!(may_offer(Api::OpenAi, &json!({"tools": [chat_tool]})));
        assert!(may_offer(
            Api::OpenAi,
            &json!({"tools": [chat_tool], "tool_choice": "auto"})
        ));
        for choice in [
            json!("none"),
            json!("required"),
            json!({"type": "function", "function": {"name": "bash"}}),
        ] {
            assert!(
                !may_offer(Api::OpenAi, &json!({"tools": [chat_tool], "tool_choice": choice})),
                "{choice}"
            );
        }
        assert!(!may_offer(Api::OpenAi, &json!({"messages": []})));
        assert!(!may_offer(Api::OpenAi, &json!({"tools": []})));
        let own = json!({"type": "function", "function": {"name": EXPAND_TOOL_NAME}});
        assert!(!may_offer(Api::OpenAi, &json!({"tools": [own]})));
        let anthropic_tool = json!({"name": "bash", "input_schema": {}});
        assert!(may_offer(
            Api::Anthropic,
            &json!({"tools": [anthropic_tool], "tool_choice": {"type": "auto"}})
        ));
        assert!(!may_offer(
            Api::Anthropic,
            &json!({"tools": [anthropic_tool], "tool_choice": {"type": "any"}})
        ));
        assert!(!may_offer(
            Api::Anthropic,
            &json!({"tools": [{"name": EXPAND_TOOL_NAME}]})
        ));
        assert!(may_offer(
            Api::Responses,
            &json!({"tools": [{"type": "function", "name": "bash"}]})
        ));
    }

    #[test]
    fn the_tool_goes_last_in_each_routes_shape() {
        for api in [Api::OpenAi, Api::Anthropic, Api::Responses] {
            let mut body = json!({"tools": [{"name": "first"}]}).as_object().cloned().unwrap();
            offer(api, &mut body, false);
            let tools = body["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 2);
            assert_eq!(tool_name(api, &tools[1]), Some(EXPAND_TOOL_NAME));
            assert!(body.get("tool_choice").is_none());
            offer(api, &mut body, true);
            let none = if api == Api::Anthropic {
                json!({"type": "none"})
            } else {
                json!("none")
            };
            assert_eq!(body["tool_choice"], none);
        }
    }
}
