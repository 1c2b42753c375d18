//! The wire formats on the real trajectories: lossless round trips, and conversions that
//! produce valid conversations of the target format.

use crate::common;
use crate::format_support;
use format_support as format_validate;

use llm_compactor::format::{Document, Format};
use llm_compactor::message::Role;
use serde_json::Value;

#[test]
fn every_mini_swe_agent_trajectory_round_trips_identically() {
    let files = common::mini_swe_agent_files();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let original: Value = serde_json::from_slice(&bytes).unwrap();
        let doc = Document::from_bytes(&bytes, None, &path.display().to_string()).unwrap();
        assert_eq!(doc.format(), Format::MiniSweAgent, "{}", path.display());
        assert_eq!(doc.to_value(), original, "{}", path.display());
        // The system prompt is sticky and the bookkeeping record keeps its role.
        assert!(doc.messages()[0].sysprompt);
        assert!(doc.messages().iter().any(|m| m.role == Role::Other("exit".into())));
        // Reading the exported value again gives the same document.
        let again = Document::from_value(doc.to_value(), None, "again").unwrap();
        assert_eq!(again, doc);
    }
    eprintln!("{} mini-swe-agent trajectories round-tripped", files.len());
}

#[test]
fn every_mini_swe_agent_trajectory_converts_to_valid_openai_and_anthropic() {
    for path in common::mini_swe_agent_files() {
        let name = path.display().to_string();
        let doc = Document::read_path(&path, None).unwrap();
        let calls: usize = doc.messages().iter().map(|m| m.tool_calls.len()).sum();

        let openai = doc.to_format(Format::OpenAi).unwrap();
        format_validate::assert_valid_openai(&openai, &name);
        let reread = Document::from_value(openai.clone(), None, &name).unwrap();
        // Tool results as converted (the `exit` record may have become one).
        let results = reread.messages().iter().filter(|m| m.role == Role::Tool).count();
        let texts: Vec<String> = reread
            .messages()
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.text())
            .collect();
        assert_eq!(reread.format(), Format::OpenAi);
        assert_eq!(reread.to_value(), openai);
        // Nothing is dropped: the bookkeeping `exit` record becomes a labelled message (the
        // final call's result when that call is still open, else a user message).
        assert_eq!(reread.messages().len(), doc.messages().len(), "{name}");
        assert!(
            reread
                .messages()
                .last()
                .unwrap()
                .text()
                .starts_with("[message of role \"exit\"]"),
            "{name}"
        );

        let anthropic = doc.to_format(Format::Anthropic).unwrap();
        format_validate::assert_valid_anthropic(&anthropic, &name);
        let reread = Document::from_value(anthropic.clone(), None, &name).unwrap();
        assert_eq!(reread.format(), Format::Anthropic);
        assert_eq!(reread.to_value(), anthropic);
        assert_eq!(
            reread.messages().iter().map(|m| m.tool_calls.len()).sum::<usize>(),
            calls
        );
        assert_eq!(
            reread.messages().iter().filter(|m| m.role == Role::Tool).count(),
            results
        );
        // The texts survive the trip: every tool result's text is found again.
        let back: Vec<String> = reread
            .messages()
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.text())
            .collect();
        assert_eq!(texts, back, "{name}");

        // And back to OpenAI from the converted Anthropic document.
        let openai_again = reread.to_format(Format::OpenAi).unwrap();
        format_validate::assert_valid_openai(&openai_again, &name);
    }
}

#[test]
fn every_tau_bench_conversation_round_trips_identically() {
    let conversations = common::tau_bench_conversations();
    for (i, conversation) in conversations.iter().enumerate() {
        let bytes = serde_json::to_vec(conversation).unwrap();
        let doc = Document::from_bytes(&bytes, None, &format!("tau-bench[{i}]")).unwrap();
        assert_eq!(doc.format(), Format::OpenAi);
        assert_eq!(&doc.to_value(), conversation, "tau-bench conversation {i}");
        format_validate::assert_valid_openai(conversation, "tau-bench");
    }
    eprintln!("{} tau-bench conversations round-tripped", conversations.len());
}

#[test]
fn tau_bench_converts_to_anthropic_and_back_keeping_the_conversation() {
    for (i, conversation) in common::tau_bench_conversations().into_iter().enumerate() {
        let name = format!("tau-bench[{i}]");
        let doc = Document::from_value(conversation.clone(), None, &name).unwrap();
        let anthropic = doc.to_format(Format::Anthropic).unwrap();
        format_validate::assert_valid_anthropic(&anthropic, &name);
        let back = Document::from_value(anthropic, Some(Format::Anthropic), &name)
            .unwrap()
            .to_format(Format::OpenAi)
            .unwrap();
        format_validate::assert_valid_openai(&back, &name);
        // Same roles, texts and calls; what changes is documented (tool `name` dropped,
        // `content: null` for call-only turns kept as null).
        let before = doc.messages();
        let after = Document::from_value(back, None, &name).unwrap().into_messages();
        assert_eq!(before.len(), after.len(), "{name}");
        for (a, b) in before.iter().zip(&after) {
            assert_eq!(a.role, b.role, "{name}");
            assert_eq!(a.text(), b.text(), "{name}");
            let calls = |m: &llm_compactor::Message| {
                m.tool_calls
                    .iter()
                    .map(|c| {
                        (
                            c.id.clone(),
                            c.name.clone(),
                            serde_json::from_str::<Value>(&c.arguments).ok(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(calls(a), calls(b), "{name}");
            assert_eq!(a.tool_call_id, b.tool_call_id, "{name}");
        }
    }
}
