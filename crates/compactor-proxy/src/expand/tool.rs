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
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::api::Api;

/// The rules of the module docs, on the request's `tools` and `tool_choice`.
fn allowed(api: Api, tools: &[Value], choice: Option<&Value>) -> bool {
    if tools.is_empty() || tools.iter().any(|tool| tool_name(api, tool) == Some(EXPAND_TOOL_NAME)) {
        return false;
    }
    match choice {
        None | Some(Value::Null) => true,
        Some(Value::String(choice)) => choice == "auto",
        Some(Value::Object(choice)) => {
            api == Api::Anthropic && choice.get("type").and_then(Value::as_str) == Some("auto")
        }
        Some(_) => false,
    }
}

/// A request body's top-level fields, in order, each value as its raw JSON text
/// (borrowed from the body: nothing below the top level is parsed).
struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Fields<'de>, M::Error> {
                let mut fields = Vec::new();
                while let Some(field) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push(field);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// `body` (a request about to go upstream, as bytes) with the tool appended to its
/// `tools`, when the rules allow it; `None` when they do not (or the body is not a JSON
/// object). With `last`, the model is also told to call no tool (`tool_choice` none: the
/// last follow-up a client request may cost is answered in text). Only `tools` and
/// `tool_choice` are parsed; every other field is copied as the bytes it was: offering
/// the tool costs a scan of the body, not a parse of the conversation (a compacted
/// session's every request pays it).
pub fn offered_body(api: Api, body: &[u8], last: bool) -> Option<Vec<u8>> {
    let Fields(fields) = serde_json::from_slice(body).ok()?;
    let field = |name: &str| fields.iter().find(|(key, _)| key == name).map(|(_, raw)| raw.get());
    let mut tools: Vec<Value> = serde_json::from_str(field("tools")?).ok()?;
    let choice: Option<Value> = match field("tool_choice") {
        Some(raw) => Some(serde_json::from_str(raw).ok()?),
        None => None,
    };
    if !allowed(api, &tools, choice.as_ref()) {
        return None;
    }
    tools.push(definition(api));
    let tools = serde_json::to_string(&tools).ok()?;
    let none = match api {
        Api::Anthropic => r#"{"type":"none"}"#,
        Api::OpenAi | Api::Responses => r#""none""#,
    };
    let mut out = Vec::with_capacity(body.len() + tools.len());
    out.push(b'{');
    for (i, (key, raw)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, key).ok()?;
        out.push(b':');
        let value = match key.as_str() {
            "tools" => tools.as_str(),
            "tool_choice" if last => none,
            _ => raw.get(),
        };
        out.extend_from_slice(value.as_bytes());
    }
    if last && choice.is_none() {
        out.extend_from_slice(b",\"tool_choice\":");
        out.extend_from_slice(none.as_bytes());
    }
    out.push(b'}');
    Some(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules on a whole request body.
    fn may_offer(api: Api, body: &Value) -> bool {
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        allowed(api, tools, body.get("tool_choice"))
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
    fn offering_in_place_changes_tools_only_and_keeps_every_other_byte() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \"q\""}],"tools":[{"type":"function","function":{"name":"bash"}}],"stream":true}"#;
        let out = offered_body(Api::OpenAi, body, false).unwrap();
        let value: Value = serde_json::from_slice(&out).unwrap();
        let mut expected: Value = serde_json::from_slice(body).unwrap();
        expected["tools"].as_array_mut().unwrap().push(definition(Api::OpenAi));
        assert_eq!(value, expected);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(r#"{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \"q\""}],"tools":["#),
            "{text}"
        );
        assert!(text.ends_with(r#"],"stream":true}"#), "{text}");
        // The rules hold on bytes as on values.
        assert!(offered_body(Api::OpenAi, br#"{"messages":[]}"#, false).is_none());
        assert!(
            offered_body(
                Api::OpenAi,
                br#"{"tools":[{"function":{"name":"x"}}],"tool_choice":"required"}"#,
                false
            )
            .is_none()
        );
        assert!(offered_body(Api::OpenAi, b"[1]", false).is_none());
        assert!(offered_body(Api::OpenAi, b"{", false).is_none());
    }

    #[test]
    fn the_tool_goes_last_in_each_routes_shape() {
        for api in [Api::OpenAi, Api::Anthropic, Api::Responses] {
            let first = json!({"name": "first", "function": {"name": "first"}});
            let body = serde_json::to_vec(&json!({"tools": [first]})).unwrap();
            let offered: Value = serde_json::from_slice(&offered_body(api, &body, false).unwrap()).unwrap();
            let tools = offered["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 2);
            assert_eq!(tool_name(api, &tools[1]), Some(EXPAND_TOOL_NAME));
            assert!(offered.get("tool_choice").is_none());
            let none = if api == Api::Anthropic {
                json!({"type": "none"})
            } else {
                json!("none")
            };
            for body in [
                body.clone(),
                serde_json::to_vec(&json!({"tools": [first], "tool_choice": "auto"})).unwrap(),
            ] {
                let last: Value = serde_json::from_slice(&offered_body(api, &body, true).unwrap()).unwrap();
                assert_eq!(last["tool_choice"], none, "{api:?}");
                assert_eq!(last["tools"].as_array().unwrap().len(), 2);
            }
        }
    }
}
