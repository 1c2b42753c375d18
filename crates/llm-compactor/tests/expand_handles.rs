//! Nothing lost, literally (issue 31): the ledger carries its facts across passes, names
//! the handle of the message each comes from, and a handle expands to the original
//! messages, byte for byte, in its own session only.

use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::plan::ledger::{LedgerPolicy, LedgerRules, extract};
use llm_compactor::plan::{SUMMARY_HEADER, handle_of, handle_ranges_in, handles_in, resolve_range};
use llm_compactor::session::{ContextManager, Session, SessionOptions, Transcript, answer_expand, expand_in};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message, Role, ToolCall};

/// Turn `k` of a scripted agent: a call and its (fat) result. Even turns edit
/// `src/mod_k.py` with `sed -i`, odd ones read it; every result carries a unique token.
fn turn(k: usize) -> [Message; 2] {
    let command = if k % 2 == 0 {
        format!("sed -i 's/old/new/' src/mod_{k}.py")
    } else {
        format!("cat src/mod_{k}.py")
    };
    let arguments = serde_json::json!({ "command": command }).to_string();
    let call = Message::assistant(format!("Step {k}."))
        .with_id(format!("a{k}"))
        .with_tool_calls(vec![ToolCall::new(format!("c{k}"), "bash", arguments)]);
    let output = format!(
        "<returncode>0</returncode>\nUNIQUE-{k}-é\n{}",
        "line of output\n".repeat(60)
    );
    [call, Message::tool(format!("c{k}"), output).with_id(format!("t{k}"))]
}

fn messages(turns: usize) -> Vec<Message> {
    let mut out = vec![Message::user("Fix every module.").with_id("u0")];
    for k in 0..turns {
        out.extend(turn(k));
    }
    out
}

/// A compactor whose target leaves the ledger room for every file of the run (the
/// ledger is sized to the target: at the default 40% of 3,000 tokens it would cut the
/// oldest files, which is not what these tests are about).
fn compactor(budget: usize) -> Compactor {
    let config = CompactorConfig::builder(budget)
        .target_ratio(0.6)
        .age_observations(false)
        .expand(true)
        .build()
        .unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(Arc::new(LedgerSummarizer))
        .with_ledger(LedgerPolicy::default())
}

/// An agent loop over `originals`: a pass whenever one is due before a model request.
/// Returns the final conversation, the number of compactions, and how many messages
/// arrived before the first.
async fn agent_loop(c: &Compactor, originals: &[Message]) -> (Vec<Message>, usize, usize) {
    let mut live: Vec<Message> = Vec::new();
    let (mut passes, mut first_epoch) = (0, originals.len());
    for (i, message) in originals.iter().enumerate() {
        if message.role == Role::Assistant && c.needs_compaction(&live) {
            let result = c.compact(&live, CompactOptions::default()).await.unwrap();
            if !result.is_noop() && !result.is_elision_only() {
                if passes == 0 {
                    first_epoch = i;
                }
                passes += 1;
            }
            if !result.is_noop() {
                live = result.messages;
            }
        }
        live.push(message.clone());
    }
    (live, passes, first_epoch)
}

#[tokio::test]
async fn the_files_and_the_commands_of_the_first_epoch_survive_many_passes() {
    let originals = messages(60);
    let (live, passes, first_epoch) = agent_loop(&compactor(3000), &originals).await;
    assert!(passes >= 5, "only {passes} passes");
    let summary = live
        .iter()
        .map(Message::text)
        .rfind(|t| t.starts_with(SUMMARY_HEADER))
        .unwrap();
    let epoch: Vec<usize> = (0..first_epoch).collect();
    let ledger = extract(&originals, &epoch, &LedgerRules::default());
    assert!(ledger.files.len() >= 3, "{ledger:?}");
    // Every file the first epoch edited is still named after every later pass.
    for file in ledger.files.iter().filter(|f| f.operations.iter().any(|o| o == "edit")) {
        assert!(
            summary.contains(&file.path),
            "{} lost after {passes} passes:\n{summary}",
            file.path
        );
    }
    // Every command of the first epoch is retrievable: the summary names a range that
    // expands to its call, and to its output.
    let ranges = handle_ranges_in(&summary);
    assert_eq!(ranges.len(), 1, "{summary}");
    let (first, last) = &ranges[0];
    let reachable = resolve_range(&originals, first, last);
    for k in 0..first_epoch / 2 {
        let call = originals
            .iter()
            .position(|m| m.id.as_deref() == Some(&format!("a{k}")))
            .unwrap();
        assert!(reachable.contains(&call) && reachable.contains(&(call + 1)), "turn {k}");
    }
    // Every handle the conversation names resolves: none is invented.
    for handle in handles_in(&summary) {
        assert!(expand_in(&originals, &handle).is_some(), "{handle}");
    }
}

#[tokio::test]
async fn a_ledger_line_names_the_message_its_fact_comes_from() {
    let originals = messages(12);
    let result = compactor(3000)
        .compact(&originals, CompactOptions::default())
        .await
        .unwrap();
    let line = result
        .summary
        .lines()
        .find(|l| l.contains("`cat src/mod_1.py`"))
        .unwrap_or_else(|| panic!("{}", result.summary));
    let handle = &handles_in(line)[0];
    assert_eq!(handle, &handle_of(3, &originals[3]));
    let expansion = expand_in(&originals, handle).unwrap();
    // The call and its output, as they were.
    assert_eq!(expansion.messages, originals[3..5].to_vec());
}

#[test]
fn without_expansion_the_summary_names_no_handle() {
    let originals = messages(12);
    let config = CompactorConfig::builder(3000).age_observations(false).build().unwrap();
    let c = Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(Arc::new(LedgerSummarizer))
        .with_ledger(LedgerPolicy::default());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let result = runtime
        .block_on(c.compact(&originals, CompactOptions::default()))
        .unwrap();
    assert!(!result.is_noop());
    assert!(handles_in(&result.summary).is_empty(), "{}", result.summary);
    assert!(!result.summary.contains("Originals"), "{}", result.summary);
}

fn session_with(dir: &std::path::Path, name: &str, contents: &[&str]) -> (Session, Vec<Message>) {
    let mut session = Session::create(dir.join(name), SessionOptions::default()).unwrap();
    let mut stored = Vec::new();
    for (k, text) in contents.iter().enumerate() {
        // The same ids in both sessions: a client may well reuse them.
        let message = Message::user(*text).with_id(format!("m{k}"));
        stored.push(session.append_message(message).unwrap().clone());
    }
    (session, stored)
}

#[test]
fn a_handle_resolves_only_in_its_own_session() {
    let dir = tempfile::tempdir().unwrap();
    let a_texts: Vec<String> = (0..40).map(|k| format!("secret of A #{k}")).collect();
    let b_texts: Vec<String> = (0..40).map(|k| format!("content of B #{k}")).collect();
    let (a, a_stored) = session_with(
        dir.path(),
        "a.jsonl",
        &a_texts.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let (_b, _) = session_with(
        dir.path(),
        "b.jsonl",
        &b_texts.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    // A third session with its own ids.
    let mut c = Session::create(dir.path().join("c.jsonl"), SessionOptions::default()).unwrap();
    let c_stored: Vec<Message> = (0..40)
        .map(|k| c.append_message(Message::user(format!("C {k}"))).unwrap().clone())
        .collect();
    let transcripts: Vec<Transcript> = ["a.jsonl", "b.jsonl", "c.jsonl"]
        .iter()
        .map(|n| Transcript::read(&dir.path().join(n)).unwrap())
        .collect();
    let mut reads = 0;
    for (k, message) in a_stored.iter().enumerate() {
        let handle = handle_of(k, message);
        assert_eq!(a.expand(&handle).unwrap().unwrap().messages, vec![message.clone()]);
        // In B the same id names B's own message: never A's content.
        let in_b = transcripts[1].expand(&handle).unwrap();
        assert!(in_b.messages.iter().all(|m| !m.text().contains("secret of A")));
        // C never had that id: not found.
        assert!(transcripts[2].expand(&handle).is_none());
        reads += 1;
    }
    for (k, message) in c_stored.iter().enumerate() {
        let handle = handle_of(k, message);
        assert!(transcripts[0].expand(&handle).is_none());
        assert!(transcripts[1].expand(&handle).is_none());
    }
    // Guessed handles name nothing anywhere.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let guess = format!("#{:010x}", state >> 24);
        for t in &transcripts {
            if let Some(found) = t.expand(&guess) {
                // Only a real handle of that very session can resolve.
                assert!(found.messages.iter().all(|m| t.originals().contains(m)));
                panic!("a random handle resolved: {guess}");
            }
        }
    }
    assert_eq!(reads, 40);
}

#[test]
fn expansion_returns_the_recorded_message_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path().join("s.jsonl"), SessionOptions::default()).unwrap();
    let odd = "tabs\tand \"quotes\", \\backslashes\\, é, 🦀, \u{7f}, a NUL-free\r\nCRLF";
    let call =
        Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"command":"printf '%s' \"x\""}"#)]);
    let stored: Vec<Message> = session
        .append_messages(vec![Message::user("go"), call, Message::tool("c1", odd)])
        .unwrap()
        .to_vec();
    let handle = handle_of(1, &stored[1]);
    let expansion = session.expand(&handle).unwrap().unwrap();
    assert_eq!(expansion.messages, stored[1..].to_vec());
    assert_eq!(expansion.messages[1].text().as_bytes(), odd.as_bytes());
}

#[test]
fn the_expand_tool_answers_from_the_session_and_stays_within_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::create(dir.path().join("s.jsonl"), SessionOptions::default()).unwrap();
    let config = CompactorConfig::builder(3000).expand(true).build().unwrap();
    let mut manager = ContextManager::new(Arc::new(Compactor::new(config, Arc::new(HeuristicCounter))), session);
    let stored = manager
        .push(Message::user(format!("BUILD LOG {}", "x".repeat(5000))))
        .unwrap()
        .clone();
    let tool = manager.expand_tool();
    assert_eq!(tool["function"]["name"], "compactor_expand");
    let handle = handle_of(0, &stored);
    let answer = manager
        .answer_expand(
            &serde_json::json!({ "handles": [handle, "#0123456789"] }).to_string(),
            100_000,
        )
        .unwrap();
    assert!(answer.contains("BUILD LOG"), "{answer}");
    assert!(answer.contains("#0123456789: not found in this session"), "{answer}");
    let capped = answer_expand(
        &Transcript::read(manager.session().path()).unwrap().originals(),
        &serde_json::json!({ "handles": [handle] }).to_string(),
        1000,
    );
    assert!(
        capped.chars().count() < 1200 && capped.contains("more chars cut"),
        "{capped}"
    );
}

/// A fat old result, stubbed by aging: with expansion on, the stub names its handle,
/// which expands to the result as it was; with expansion off, the stub is the seed's.
#[tokio::test]
async fn an_elision_stub_names_its_handle_only_with_expansion_on() {
    let mut originals = vec![Message::user("Look at the logs.").with_id("u0")];
    for k in 0..8 {
        let call = Message::assistant("")
            .with_id(format!("a{k}"))
            .with_tool_calls(vec![ToolCall::new(format!("c{k}"), "bash", r#"{"command":"cat log"}"#)]);
        let log = format!("LOG-{k}\n{}", "a long log line\n".repeat(400));
        originals.push(call);
        originals.push(Message::tool(format!("c{k}"), log).with_id(format!("t{k}")));
    }
    for expand in [false, true] {
        let config = CompactorConfig::builder(60_000)
            .age_observations(true)
            .age_reclaim_min(4000)
            .expand(expand)
            .build()
            .unwrap();
        let c = Compactor::new(config, Arc::new(HeuristicCounter));
        let result = c.compact(&originals, CompactOptions::default()).await.unwrap();
        assert!(!result.elisions.is_empty(), "nothing aged");
        for elision in &result.elisions {
            let stub = &elision.stub;
            let plain = stub.ends_with("re-run the call if you need it again]");
            assert_eq!(plain, !expand, "{stub}");
            if expand {
                let handle = &handles_in(stub)[0];
                let expansion = expand_in(&originals, handle).unwrap();
                assert_eq!(expansion.messages, vec![originals[elision.index].clone()]);
            }
        }
    }
}
