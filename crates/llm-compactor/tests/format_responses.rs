//! OpenAI Responses API requests read as conversations and written back: lossless both
//! ways, an assistant turn grouped (a reasoning item never parted from its call), and a
//! compacted request that is still one the API accepts (no orphan output, the turns
//! whole, every other field as it came).

use crate::codex_run;

use std::collections::HashSet;
use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::responses::{RESPONSES_HINT_KEY, ResponsesError, ResponsesRequest};
use llm_compactor::format::{Document, Format};
use llm_compactor::message::{Content, Message, Part, Role};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A request as Codex-like agents send it: instructions, a developer message, typed and
/// short messages, encrypted reasoning, a function call and a custom (freeform) tool
/// call with their outputs, and fields the codec does not model.
fn codex_like() -> Value {
    json!({
        "model": "gpt-5-codex",
        "instructions": "You are a coding agent.",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: workspace-write"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the failing test"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look first"}], "encrypted_content": "gAAAA..."},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": "src\ntests\n"},
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gBBBB..."},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Patching now.", "annotations": []}]},
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done!"},
            {"role": "user", "content": "thanks"}
        ],
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "stream": true
    })
}

#[test]
fn a_codex_like_request_reads_as_turns_and_writes_back_equal() {
    let body = codex_like();
    let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
    let messages = request.messages();
    let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user"
        ]
    );
    assert!(messages[0].sysprompt && messages[1].sysprompt);
    assert_eq!(messages[0].content, Content::Text("You are a coding agent.".into()));
    // The user's words are text (counted and summarized as text).
    assert_eq!(messages[2].text(), "fix the failing test");
    // A turn: reasoning and its call in one message.
    assert_eq!(messages[3].tool_calls.len(), 1);
    assert_eq!(messages[3].tool_calls[0].id, "call_1");
    assert_eq!(messages[3].tool_calls[0].arguments, "{\"command\":[\"ls\"]}");
    assert_eq!(messages[4].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(messages[4].text(), "src\ntests\n");
    // Reasoning, a message and a custom call: one turn, its text and its call; the
    // reasoning is a part (its summary, never its encrypted content).
    assert_eq!(messages[5].text(), "Patching now.");
    assert_eq!(
        messages[5].content,
        Content::Parts(vec![
            Part::Other(json!({"type": "reasoning", "summary": []})),
            Part::text("Patching now.")
        ])
    );
    assert_eq!(messages[5].tool_calls[0].name, "apply_patch");
    assert_eq!(messages[5].tool_calls[0].arguments, "*** Begin Patch\n*** End Patch\n");
    assert_eq!(messages[6].tool_call_id.as_deref(), Some("call_2"));
    assert_eq!(request.to_value(), body);
}

#[test]
fn a_string_input_and_short_messages_write_back_as_they_came() {
    for body in [
        json!({"model": "m", "input": "hello"}),
        json!({"model": "m", "instructions": "be brief", "input": "hello"}),
        json!({"model": "m", "input": []}),
        json!({"model": "m", "instructions": null, "input": [{"role": "user", "content": "a"}]}),
        json!({"input": [{"role": "assistant", "content": "b"}, {"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]}]}),
    ] {
        let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
        assert_eq!(request.to_value(), body);
    }
}

#[test]
fn what_the_codec_does_not_model_is_unsupported_and_malformed_input_is_located() {
    for (body, says) in [
        (
            json!({"previous_response_id": "resp_1", "input": "next"}),
            "previous_response_id",
        ),
        (json!({"conversation": "conv_1", "input": "next"}), "conversation"),
        (
            json!({"input": [{"role": "user", "content": "a"}, {"type": "item_reference", "id": "x"}]}),
            "input item 1 is of type `item_reference`",
        ),
        (
            json!({"input": [{"type": "computer_call", "id": "cu", "call_id": "c", "action": {"type": "screenshot"}}]}),
            "`computer_call`",
        ),
        (
            json!({"input": [{"type": "mcp_approval_response", "approval_request_id": "a", "approve": true}]}),
            "`mcp_approval_response`",
        ),
        // Found by the fuzzer: a message of a role the API has no message of was read as
        // a message and written back as a tool output.
        (
            json!({"input": [{"type": "message", "role": "tool", "content": null}]}),
            "input item 0 is a message of role `tool`",
        ),
        (
            json!({"input": [{"role": "function", "content": "x"}]}),
            "a message of role `function`",
        ),
    ] {
        match ResponsesRequest::from_value(body, "request") {
            Err(ResponsesError::Unsupported(problem)) => assert!(problem.contains(says), "{problem}"),
            other => panic!("expected Unsupported ({says}), got {other:?}"),
        }
    }
    for (body, says) in [
        (json!([1]), "a Responses request is an object"),
        (json!({"model": "m"}), "has no `input`"),
        (json!({"input": 3}), "`input` must be a string or an array"),
        (json!({"input": [7]}), "message 0: an input item must be an object"),
        (
            json!({"input": [{"type": "function_call_output", "output": "x"}]}),
            "message 0: a tool output item has no `call_id`",
        ),
        (
            json!({"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}),
            "a function_call item has no `name`",
        ),
        (
            json!({"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"type": "reasoning"},
                             {"type": "function_call", "call_id": "c", "name": "f", "arguments": 1}]}),
            "message 3: a function_call item: `arguments` must be a string, not a number",
        ),
        // The crate's own keys steer how a message is written back: never the client's.
        (
            json!({"input": [{"role": "user", "content": "a", "_llm_compactor_responses": "input"}]}),
            "message 0: `_llm_compactor_responses` is a key reserved",
        ),
        (
            json!({"input": [{"role": "user", "content": "a"},
                             {"type": "function_call_output", "call_id": "c", "output": "x", "_llm_compactor_anthropic": {}}]}),
            "message 1: `_llm_compactor_anthropic` is a key reserved",
        ),
    ] {
        match ResponsesRequest::from_value(body, "request") {
            Err(ResponsesError::Invalid(error)) => assert!(error.to_string().contains(says), "{error}"),
            other => panic!("expected Invalid ({says}), got {other:?}"),
        }
    }
}

/// A Codex-like run with the local shell tool and a hosted web search: the shell call is
/// a tool call (named `local_shell`, its action the arguments) answered by its output, the
/// hosted call is part of the model's turn (nothing answers it), and the request writes
/// back equal.
fn codex_with_local_shell_and_web_search(rounds: usize, output_lines: usize) -> Value {
    let mut input = vec![codex_run::codex_ask()];
    for i in 0..rounds {
        input.extend(codex_run::codex_round(i, output_lines));
    }
    json!({"model": "codex-mini-latest", "instructions": "You are an agent.", "input": input, "store": false,
           "tools": [{"type": "local_shell"}, {"type": "web_search"}]})
}

#[test]
fn local_shell_calls_are_tool_calls_and_hosted_calls_part_of_their_turn() {
    let body = codex_with_local_shell_and_web_search(2, 2);
    let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
    let messages = request.messages();
    let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant", "tool"]);
    // Reasoning, the web search and the shell call: one turn, one call.
    assert_eq!(messages[2].tool_calls.len(), 1);
    let call = &messages[2].tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("c0", "local_shell"));
    let action: Value = serde_json::from_str(&call.arguments).expect("the action, as JSON");
    assert_eq!(action["command"], json!(["bash", "-lc", "make t0"]));
    assert_eq!(messages[2].extras[RESPONSES_HINT_KEY].as_array().unwrap().len(), 3);
    assert_eq!(messages[3].tool_call_id.as_deref(), Some("c0"));
    assert_eq!(request.to_value(), body);
    // A synthetic answer (an unanswered shell call, repaired) is a shell output.
    let mut repaired = messages[..3].to_vec();
    repaired.push(Message::tool("c0", "[no output: the call was interrupted]"));
    let out = request.with_messages(repaired).to_value();
    assert_eq!(
        out["input"].as_array().unwrap().last().unwrap()["type"],
        "local_shell_call_output"
    );
}

/// The request's conversation compacted under a 20,000-token budget (the ledger as the
/// summarizer), with aging on or off.
async fn compact_under_20k(request: &ResponsesRequest, aging: bool) -> llm_compactor::CompactionResult {
    let config = CompactorConfig::builder(20_000)
        .age_observations(aging)
        .build()
        .expect("valid");
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer));
    compactor
        .compact(request.messages(), CompactOptions::default())
        .await
        .expect("compacts")
}

/// Such a run, long enough to need it, is compacted like any other: outputs keep their
/// calls, each turn is written back whole (its reasoning and hosted calls with it).
#[tokio::test]
async fn a_run_with_local_shell_and_web_search_is_compacted() {
    let body = codex_with_local_shell_and_web_search(40, 300);
    let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
    for aging in [true, false] {
        let result = compact_under_20k(&request, aging).await;
        assert!(
            result.tokens_after < result.tokens_before && result.tokens_after <= 20_000 && !result.exhausted,
            "{result:?}"
        );
        let out = request.with_messages(result.messages.clone()).to_value();
        let items = out["input"].as_array().expect("an input array");
        let original: Vec<&Value> = body["input"].as_array().unwrap().iter().collect();
        let mut calls = HashSet::new();
        for (k, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some("reasoning" | "web_search_call") => assert!(original.contains(&item), "{k}"),
                Some("local_shell_call") => {
                    assert!(original.contains(&item), "{k}");
                    assert!(matches!(
                        items[k - 1]["type"].as_str(),
                        Some("reasoning" | "web_search_call")
                    ));
                    calls.insert(item["call_id"].as_str().unwrap());
                }
                Some("local_shell_call_output") => {
                    assert!(
                        calls.contains(item["call_id"].as_str().unwrap()),
                        "output {k} without its call"
                    );
                }
                _ => assert!(item.get("role").is_some(), "{item}"),
            }
        }
        if aging {
            assert!(!result.elisions.is_empty(), "an epoch stubs the outputs");
        } else {
            assert!(calls.len() < 40, "turns were summarized away");
            assert!(
                result.summary.contains("make t0"),
                "the summary names the commands: {}",
                result.summary
            );
        }
        assert_eq!(
            ResponsesRequest::from_value(out, "request")
                .expect("reads back")
                .messages(),
            result.messages.as_slice()
        );
    }
}

/// A message read from a request goes through the session transcript (the proxy's
/// record, reloaded after a restart) and comes back equal: an `input_text` part stays a
/// text part with its type.
#[test]
fn messages_survive_the_transcripts_serde() {
    let request = ResponsesRequest::from_value(codex_like(), "request").expect("reads");
    for message in request.messages() {
        let line = serde_json::to_string(message).expect("serializes");
        let back: Message = serde_json::from_str(&line).expect("deserializes");
        assert_eq!(&back, message, "{line}");
    }
}

/// The turn items kept for writing back are this codec's: another format's exporter
/// (`compactor session replay` prints OpenAI JSON) leaves them out.
#[test]
fn other_exporters_leave_the_turn_items_out() {
    let request = ResponsesRequest::from_value(codex_like(), "request").expect("reads");
    for format in [Format::OpenAi, Format::Anthropic] {
        let text = Document::from_messages(format, request.messages().to_vec())
            .to_value()
            .to_string();
        assert!(!text.contains(RESPONSES_HINT_KEY), "{format}: {text}");
        assert!(text.contains("apply_patch"), "{format}: the calls are still there");
    }
}

/// A long agent run, compacted: the request written back has no output without its call
/// before it, every turn's items exactly as they came (reasoning beside its call), the
/// instructions and other fields untouched, the summary as a user message, and aged
/// outputs as stubs.
#[tokio::test]
async fn a_compacted_request_is_still_a_valid_one() {
    let mut input = vec![json!({"role": "user", "content": [{"type": "input_text", "text": "make the build green"}]})];
    for i in 0..40 {
        input.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [], "encrypted_content": format!("enc{i}")}));
        input.push(json!({"type": "function_call", "call_id": format!("c{i}"), "name": "shell", "arguments": format!("{{\"command\":[\"make\",\"t{i}\"]}}")}));
        input.push(json!({"type": "function_call_output", "call_id": format!("c{i}"), "output": format!("{i}: {}", "log line\n".repeat(300))}));
    }
    let body =
        json!({"model": "gpt-5", "instructions": "You are an agent.", "input": input, "store": false, "tools": []});
    let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
    for aging in [true, false] {
        let result = compact_under_20k(&request, aging).await;
        assert!(
            result.tokens_after < result.tokens_before && !result.exhausted,
            "{result:?}"
        );
        let out = request.with_messages(result.messages.clone()).to_value();
        assert_valid(&out, &body);
        let back = ResponsesRequest::from_value(out.clone(), "request").expect("reads back");
        assert_eq!(back.messages(), result.messages.as_slice());
        let outputs: Vec<&str> = out["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["output"].as_str())
            .collect();
        if aging {
            // An epoch: the middle's outputs are stubs, the rest of the request as it was.
            assert!(result.summary.is_empty() && !result.elisions.is_empty());
            assert!(
                outputs.iter().filter(|o| o.contains("elided")).count() >= result.elisions.len() / 2,
                "{outputs:?}"
            );
        } else {
            // A summary, as a user message, read back as the compactor wrote it.
            assert!(!result.summary.is_empty());
            assert!(
                back.messages()
                    .iter()
                    .any(|m| m.role == Role::User && m.text() == result.summary)
            );
        }
        let turns = back.messages().iter().filter(|m| m.role == Role::Assistant);
        assert!(turns.clone().count() > 0);
        assert!(turns.into_iter().all(|m| m.extras.contains_key(RESPONSES_HINT_KEY)));
    }
}

/// What the API asks of a request: no output without its call before it, and every turn
/// as it was sent (a reasoning item right before its call, both verbatim); the
/// instructions and other fields untouched.
fn assert_valid(out: &Value, body: &Value) {
    assert_eq!(out["instructions"], body["instructions"]);
    assert_eq!(out["store"], body["store"]);
    assert_eq!(out["model"], body["model"]);
    let items = out["input"].as_array().expect("an input array");
    let original: Vec<&Value> = body["input"].as_array().unwrap().iter().collect();
    let mut calls = HashSet::new();
    for (k, item) in items.iter().enumerate() {
        match item["type"].as_str() {
            Some("function_call") => {
                assert_eq!(items[k - 1]["type"], "reasoning", "{k}");
                assert!(original.contains(&item) && original.contains(&&items[k - 1]));
                calls.insert(item["call_id"].as_str().unwrap().to_owned());
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap();
                assert!(calls.contains(id), "output {id} without its call");
                assert!(item["output"].is_string());
            }
            Some("reasoning") => assert_eq!(items[k + 1]["type"], "function_call"),
            _ => assert!(item.get("role").is_some(), "{item}"),
        }
    }
}

fn arb_text() -> impl Strategy<Value = String> {
    "[a-z \"\\\\\n]{0,12}"
}

fn arb_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        (arb_text(), any::<bool>()).prop_map(|(t, typed)| if typed {
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]})
        } else {
            json!({"role": "user", "content": t})
        }),
        arb_text().prop_map(|t| json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]})),
        arb_text().prop_map(|t| json!({"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": t}]})),
        (0..4u8, arb_text()).prop_map(|(c, a)| json!({"type": "function_call", "call_id": format!("c{c}"), "name": "f", "arguments": a})),
        (0..4u8, arb_text()).prop_map(|(c, a)| json!({"type": "custom_tool_call", "call_id": format!("c{c}"), "name": "g", "input": a})),
        (0..4u8, arb_text()).prop_map(|(c, o)| json!({"type": "function_call_output", "call_id": format!("c{c}"), "output": o})),
        (0..4u8, arb_text()).prop_map(|(c, o)| json!({"type": "custom_tool_call_output", "call_id": format!("c{c}"), "output": o, "id": "x"})),
        (0..4u8, arb_text()).prop_map(|(c, a)| json!({"type": "local_shell_call", "id": "lsh", "call_id": format!("c{c}"), "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", a], "env": {}}})),
        (0..4u8, arb_text()).prop_map(|(c, o)| json!({"type": "local_shell_call_output", "call_id": format!("c{c}"), "output": o})),
        (prop::sample::select(vec!["web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools"]), arb_text())
            .prop_map(|(kind, t)| json!({"type": kind, "id": "h", "status": "completed", "detail": t})),
        arb_text().prop_map(|t| json!({"type": "message", "role": "developer", "content": t})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Import then export gives back the request, whatever the items' order.
    #[test]
    fn any_sequence_of_modelled_items_round_trips(
        items in proptest::collection::vec(arb_item(), 0..12),
        instructions in proptest::option::of(arb_text()),
    ) {
        let mut body = json!({"model": "m", "input": items, "temperature": 0.5});
        if let Some(text) = instructions {
            body["instructions"] = Value::String(text);
        }
        let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
        prop_assert_eq!(request.to_value(), body);
    }
}

/// A turn whose hosted tools brought content into the context (an MCP call's output, a
/// code interpreter's logs, a web search, a reasoning summary): that content is counted
/// (before, only the turn's text and client calls were, so a request could be far over
/// its count), and the summarizer reads it, so a compaction that replaces the turn keeps
/// what the model learned there. The request still writes back exactly as it came.
#[test]
fn what_hosted_tools_put_in_context_is_counted_and_summarized() {
    let log = "ERROR: disk quota exceeded on /var/lib/postgresql (uid 999)\n".repeat(200);
    let body = json!({"model": "gpt-5", "input": [
        {"role": "user", "content": "why does the nightly backup fail?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the backup host's logs first."}],
         "encrypted_content": "gAAAA".repeat(400)},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "pg_dump disk quota exceeded"}},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "ops", "name": "tail_log", "arguments": "{\"host\":\"backup-1\"}", "output": log},
        {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "container_id": "cntr_1", "code": "print(sum([3, 4]))",
         "outputs": [{"type": "logs", "logs": "7"}]},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "The backup volume is full.", "annotations": []}]},
        {"role": "user", "content": "fix it"}
    ]});
    let request = ResponsesRequest::from_value(body.clone(), "request").expect("reads");
    assert_eq!(request.to_value(), body);
    let turn = &request.messages()[1];
    assert_eq!(turn.text(), "The backup volume is full.");
    let counted = HeuristicCounter.count_message(turn);
    let log_tokens = log.chars().count() / 4;
    assert!(
        counted > log_tokens && counted < log_tokens + 200,
        "{counted} vs the log's {log_tokens}"
    );
    // Not the encrypted reasoning (2,000 chars), nor the ids and statuses.
    let Content::Parts(parts) = &turn.content else {
        panic!("parts: {:?}", turn.content)
    };
    assert_eq!(parts.len(), 5);
    assert!(
        parts
            .iter()
            .all(|p| !serde_json::to_string(&p.to_value()).unwrap().contains("gAAAA"))
    );
    assert!(parts.iter().all(|p| p.to_value().get("id").is_none()));

    let rendered = llm_compactor::summarize::render_message(turn, 400);
    for says in [
        "Check the backup host's logs first.",
        "-> part web_search_call: {\"type\":\"web_search_call\",\"action\":{\"type\":\"search\",\"query\":\"pg_dump disk quota exceeded\"}}",
        "-> part mcp_call: {\"type\":\"mcp_call\",\"server_label\":\"ops\",\"name\":\"tail_log\"",
        "disk quota exceeded on /var/lib/postgresql",
        "more characters truncated]",
        "print(sum([3, 4]))",
        "The backup volume is full.",
    ] {
        assert!(rendered.contains(says), "{says:?} not in:\n{rendered}");
    }
    assert!(
        !rendered.contains("gAAAA") && !rendered.contains("[reasoning omitted]"),
        "{rendered}"
    );

    // What the summarizer read there is grounded: a summary that names the path from the
    // MCP output is not flagged as invented.
    let source = llm_compactor::plan::ledger::source_text(request.messages());
    let summary = "The nightly pg_dump fails: /var/lib/postgresql on backup-1 is over quota.";
    let grounded = llm_compactor::plan::grounding::ground(summary, &source, &Default::default()).expect("passes");
    assert!(grounded.unverified.is_empty(), "{:?}", grounded.unverified);
}
