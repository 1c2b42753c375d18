//! Property: the grounding gate never lets an identifier through that is absent from
//! the source unless it is flagged `[unverified]`; and a mostly repeated summary never
//! passes.

use llm_compactor::plan::grounding::{GroundingRules, UNVERIFIED, ground, ungrounded_identifiers};
use proptest::prelude::*;

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        // Prose.
        "[a-z]{1,8}",
        "[A-Z][a-z]{2,8}",
        // Identifiers, paths, test names.
        "[a-z]{2,6}_[a-z]{2,6}(\\(\\))?",
        "[a-z]{2,5}/[a-z_]{2,8}\\.(py|rs|md)",
        "[a-z]{2,5}\\.[a-z]{2,6}",
        "tests/[a-z]{2,5}\\.py::test_[a-z]{2,5}",
        "[A-Z][a-z]{2,5}[A-Z][a-z]{2,5}",
        // Punctuation around words.
        "`[a-z]{2,5}_[a-z]{2,5}`[.,:]?",
        Just("[unverified]".to_owned()),
        Just("\n".to_owned()),
        Just(".".to_owned()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 0..60).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_unflagged_identifier_absent_from_the_source(summary in text(), source in text()) {
        if let Ok(grounded) = ground(&summary, &source, &GroundingRules::default()) {
            let leaked = ungrounded_identifiers(&grounded.text, &source);
            prop_assert!(leaked.is_empty(), "leaked {:?} from {:?}", leaked, grounded.text);
        }
        let removed = GroundingRules { flag: false, ..GroundingRules::default() };
        if let Ok(grounded) = ground(&summary, &source, &removed) {
            // Removing: nothing absent is left, flagged or not.
            let words: Vec<&str> = grounded.text.split_whitespace().filter(|w| *w != UNVERIFIED).collect();
            let leaked = ungrounded_identifiers(&words.join(" "), &source);
            prop_assert!(leaked.is_empty(), "left {:?}", leaked);
        }
    }

    #[test]
    fn a_repeated_sentence_never_passes_twice(sentence in "[A-Z][a-z]{3,8}( [a-z]{3,8}){4,8}", n in 3usize..20) {
        let summary = format!("{sentence}. ").repeat(n);
        match ground(&summary, "", &GroundingRules::default()) {
            Err(_) => {}
            Ok(grounded) => prop_assert!(grounded.text.matches(sentence.as_str()).count() <= 1, "{}", grounded.text),
        }
    }

    #[test]
    fn grounding_is_idempotent(summary in text(), source in text()) {
        if let Ok(once) = ground(&summary, &source, &GroundingRules::default()) {
            if let Ok(twice) = ground(&once.text, &source, &GroundingRules::default()) {
                prop_assert_eq!(&twice.text, &once.text);
            }
        }
    }
}
