//! The `one_shot` example (issue 44's `examples/`): the same function the example's `main`
//! runs, on the session that ships in the repository.

use std::path::Path;

use llm_compactor::format::Document;

#[tokio::test]
async fn the_one_shot_example_compacts_the_shipped_session_in_its_own_format() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/long-agent-session.json");
    let (document, result) = crate::one_shot::compact_file(&path, 16_000).await.unwrap();
    assert!(
        result.tokens_after < result.tokens_before,
        "{} -> {}",
        result.tokens_before,
        result.tokens_after
    );
    assert!(result.tokens_after <= 16_000);
    assert!(!result.fallback, "the ledger summary was taken, not the hard trim");
    let input = Document::read_path(&path, None).unwrap();
    let output = Document::from_value(document, None, "one_shot output").unwrap();
    assert_eq!(output.format(), input.format(), "written back in the input's format");
    assert_eq!(output.messages().len(), result.messages.len());
    assert!(output.messages()[0].is_sticky(), "the system prompt kept first");
}
