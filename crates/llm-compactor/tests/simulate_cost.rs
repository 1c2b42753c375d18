//! The cost model on hand-computed cases (heuristic counter: 8 + ceil(chars/4) a message).

use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::none::NoManagement;
use llm_compactor::simulate::{Pricing, Tokens, bill_request, replay, shared_prefix_len};
use llm_compactor::{Content, Message, ToolCall};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// S 40 chars (18 tokens), U 80 (28), A1 20 (13), U2 40 (18), A2 4 (9).
fn two_requests() -> Vec<Message> {
    vec![
        Message::system("s".repeat(40)),
        Message::user("u".repeat(80)),
        Message::assistant("a".repeat(20)),
        Message::user("v".repeat(40)),
        Message::assistant("b".repeat(4)),
    ]
}

#[test]
fn two_request_conversation_reads_the_shared_prefix_from_the_cache() {
    let trajectory = two_requests();
    for (pricing, expected) in [
        // r1: write 46, out 13; r2: read 46, write 31, out 9.
        (
            Pricing::ANTHROPIC,
            (46.0 * 1.25 + 13.0 * 5.0) + (4.6 + 31.0 * 1.25 + 9.0 * 5.0),
        ),
        (Pricing::OPENAI_GPT5, (46.0 + 13.0 * 8.0) + (4.6 + 31.0 + 9.0 * 8.0)),
        (Pricing::OPENAI_4O, (46.0 + 13.0 * 4.0) + (23.0 + 31.0 + 9.0 * 4.0)),
    ] {
        let report = replay(
            &trajectory,
            &mut NoManagement::default(),
            1000,
            &pricing,
            &HeuristicCounter,
        )
        .unwrap();
        let t = &report.totals;
        assert_eq!(t.requests, 2);
        assert_eq!(
            (report.requests[0].input_tokens, report.requests[0].cached_tokens),
            (46, 0)
        );
        assert_eq!(
            (report.requests[1].input_tokens, report.requests[1].cached_tokens),
            (77, 46)
        );
        assert_eq!(t.peak_context, 77);
        assert!(close(t.cost, expected), "{}: {} != {expected}", pricing.name, t.cost);
        assert!(close(t.cache_hit_ratio(), 46.0 / 123.0));
        assert_eq!(t.rounds_over_window, 0);
    }
}

#[test]
fn rounds_over_the_window_are_counted() {
    let report = replay(
        &two_requests(),
        &mut NoManagement::default(),
        50,
        &Pricing::ANTHROPIC,
        &HeuristicCounter,
    )
    .unwrap();
    // 46 fits in 50, 77 does not.
    assert_eq!(report.totals.rounds_over_window, 1);
}

#[test]
fn an_elision_breaks_the_cache_exactly_where_it_happened() {
    let call = |id: &str| Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "read", "{}")]);
    let previous = vec![
        Message::system("s".repeat(40)),
        Message::user("u".repeat(80)),
        call("c1"),
        Message::tool("c1", "x".repeat(4000)),
        call("c2"),
        Message::tool("c2", "y".repeat(400)),
    ];
    let mut current = previous.clone();
    current[3].content = Content::Text("[elided]".into());
    current.push(call("c3"));
    assert_eq!(shared_prefix_len(&previous, &current), 3);
    let counter = HeuristicCounter;
    use llm_compactor::TokenCounter;
    let prefix = counter.count_messages(&current[..3]);
    let total = counter.count_messages(&current);
    let bill = bill_request(&previous, &current, 7, &counter);
    assert_eq!(bill.cached_tokens as usize, prefix);
    assert_eq!(bill.input_tokens as usize, total);
    assert_eq!(
        bill.tokens,
        Tokens {
            cache_read: prefix as u64,
            cache_write: (total - prefix) as u64,
            uncached: 0,
            output: 7
        }
    );
    // S 18 + U 28 + the assistant's call: everything before the elided result.
    assert_eq!(prefix, 18 + 28 + counter.count_message(&current[2]));
}

#[test]
fn pricing_presets_parse_and_price_each_token_class() {
    let one_each = Tokens {
        cache_read: 1,
        cache_write: 1,
        uncached: 1,
        output: 1,
    };
    assert!(close(
        "anthropic".parse::<Pricing>().unwrap().cost(&one_each),
        0.1 + 1.25 + 1.0 + 5.0
    ));
    assert!(close(
        "openai-gpt5".parse::<Pricing>().unwrap().cost(&one_each),
        0.1 + 1.0 + 1.0 + 8.0
    ));
    assert!(close(
        "openai-4o".parse::<Pricing>().unwrap().cost(&one_each),
        0.5 + 1.0 + 1.0 + 4.0
    ));
    assert!("claude".parse::<Pricing>().is_err());
}
