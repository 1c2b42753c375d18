//! A tool call's arguments object, made canonical in one scan of its text.
//!
//! Every call's identity is taken on every pass (the duplicate rule of aging), and the
//! arguments a model writes are nearly always a flat object of strings, booleans, nulls
//! and small integers, spaced after its colons, its strings holding newlines and quotes
//! as escapes. For such a text the canonical form ([`super::canonical_arguments`]) is
//! its members' own bytes sorted by key: serde_json would decode each string and write
//! back the same escapes, and each keyword and small integer as it stands. So the text
//! is scanned once (eight bytes per step inside strings), its members are sorted, and
//! their bytes copied; nothing is decoded and nothing allocated but the member list.
//!
//! The scan accepts only what it can prove serde_json writes back unchanged: keys
//! without escapes; string values whose escapes are `\"` `\\` `\n` `\t` `\r` `\b` `\f`;
//! `true`, `false`, `null`; integers of at most 18 digits, `-0` excluded (serde_json
//! reads it as the float `-0.0`). Anything else (a nested value, a float, `\/`, `\u`,
//! invalid JSON) is `None`, and the caller takes the full path, whose answer this one
//! equals wherever both answer (the tests below compare them).

use super::json_string::next_escape;

/// Appends the canonical text of `text` when it is a flat object the scan accepts;
/// `None` (and `out` as it was) otherwise.
pub(crate) fn write_flat_arguments(text: &str, out: &mut Vec<u8>) -> Option<()> {
    let members = flat_members(text.as_bytes())?;
    out.reserve(text.len());
    out.push(b'{');
    let mut first = true;
    for (k, member) in members.iter().enumerate() {
        // Sorted stably, so of a repeated key the last member is the one serde_json
        // keeps (a map keeps the last value inserted under a key).
        if members.get(k + 1).is_some_and(|next| next.0 == member.0) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(member.0);
        out.extend_from_slice(b"\":");
        out.extend_from_slice(member.1);
    }
    out.push(b'}');
    Some(())
}

/// The members of the flat object `bytes` as (key without quotes, value's bytes), sorted
/// by key (stably); `None` where the scan does not accept the text.
fn flat_members(bytes: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    let mut members = Vec::with_capacity(4);
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key_end, escaped) = string_end(bytes, at)?;
            if escaped {
                return None;
            }
            let key = &bytes[at + 1..key_end - 1];
            at = skip_space(bytes, key_end);
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at = skip_space(bytes, at + 1);
            let value_end = value_end(bytes, at)?;
            members.push((key, &bytes[at..value_end]));
            at = skip_space(bytes, value_end);
            match bytes.get(at) {
                Some(b',') => at = skip_space(bytes, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if skip_space(bytes, at) != bytes.len() {
        return None;
    }
    members.sort_by(|a, b| a.0.cmp(b.0));
    Some(members)
}

/// The index after JSON whitespace from `at`.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The end (after the closing quote) of the string literal at `at`, and whether it has an
/// escape; `None` when there is none there, or it holds a raw control character or an
/// escape other than the short ones serde_json writes itself.
fn string_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut from = at + 1;
    loop {
        let stop = next_escape(bytes, from);
        match bytes.get(stop)? {
            b'"' => return Some((stop + 1, escaped)),
            b'\\' => {
                if !matches!(bytes.get(stop + 1)?, b'"' | b'\\' | b'n' | b't' | b'r' | b'b' | b'f') {
                    return None;
                }
                escaped = true;
                from = stop + 2;
            }
            _ => return None,
        }
    }
}

/// The end of the value at `at` when it is one the scan accepts (see the module docs).
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at).map(|(end, _)| end),
        b't' if bytes[at..].starts_with(b"true") => Some(at + 4),
        b'f' if bytes[at..].starts_with(b"false") => Some(at + 5),
        b'n' if bytes[at..].starts_with(b"null") => Some(at + 4),
        b'-' | b'0'..=b'9' => {
            let digits_from = at + usize::from(bytes[at] == b'-');
            let digits = bytes[digits_from..].iter().take_while(|b| b.is_ascii_digit()).count();
            let end = digits_from + digits;
            let leading_zero = digits > 1 && bytes[digits_from] == b'0';
            let negative_zero = digits_from > at && digits == 1 && bytes[digits_from] == b'0';
            let fraction_or_exponent = matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
            (digits > 0 && digits <= 18 && !leading_zero && !negative_zero && !fraction_or_exponent).then_some(end)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::message::canonical::write_canonical_parsed;

    /// The full path's answer: serde_json parses the text, the canonical writer writes it.
    fn full_path(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_canonical_parsed(text, &mut out);
        out
    }

    fn scanned(text: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        write_flat_arguments(text, &mut out).map(|()| out)
    }

    #[test]
    fn the_usual_arguments_are_scanned_and_the_rest_left_to_the_full_path() {
        for text in [
            r#"{"command": "cd /repo && grep -n \"def f\" a.py\n", "timeout": 30}"#,
            r#"{ "b" : true , "a" : null, "c": false, "d": -12, "e": 0 }"#,
            "{}",
            " {\n} ",
            r#"{"a": 1, "a": 2}"#,
        ] {
            assert_eq!(scanned(text), Some(full_path(text)), "{text}");
        }
        for text in [
            r#"{"a": "\/"}"#,
            r#"{"a": "\u0041"}"#,
            r#"{"a\n": 1}"#,
            r#"{"a": 1.5}"#,
            r#"{"a": 1e3}"#,
            r#"{"a": -0}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1234567890123456789}"#,
            r#"{"a": [1]}"#,
            r#"{"a": {"b": 1}}"#,
            r#"{"a": tru}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 1} x"#,
            "{\"a\": \"tab\there\"}",
            r#"{"a" 1}"#,
            r#"{"a": "unterminated}"#,
            "ls -la",
            "[1, 2]",
            "",
        ] {
            assert_eq!(scanned(text), None, "{text}");
        }
    }

    /// Texts near a flat arguments object: members of every accepted and refused kind,
    /// spaced or not, keys repeated, sometimes cut short or followed by junk.
    fn near_object() -> impl Strategy<Value = String> {
        let key = prop_oneof!["[a-c]{0,2}", Just("k\\n".to_owned()), Just("é".to_owned())];
        let value = prop_oneof![
            "\"([a-z /é]|\\\\[\"\\\\ntrbf/u]|\\\\u00e9|\t){0,12}\"",
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("null".to_owned()),
            "-?[0-9]{1,20}",
            "-?[0-9]\\.[0-9]",
            "[0-9]e[0-9]",
            Just("[1, \"x\"]".to_owned()),
            Just("{\"z\": {}}".to_owned()),
            Just("tru".to_owned()),
        ];
        let space = "[ \n\t\r]{0,2}";
        let member = (key, space, space, value).prop_map(|(k, s1, s2, v)| format!("\"{k}\"{s1}:{s2}{v}"));
        (
            space,
            prop::collection::vec(member, 0..5),
            space,
            prop_oneof![3 => Just(String::new()), 1 => "[,}x ]{1,2}"],
            0usize..3,
        )
            .prop_map(|(s1, members, s2, junk, cut)| {
                let text = format!("{s1}{{{}}}{s2}{junk}", members.join(","));
                // Sometimes cut short, at a char boundary.
                let mut end = text.len().saturating_sub(cut * 3);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text[..end].to_owned()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn what_the_scan_accepts_it_writes_as_the_full_path_does(text in near_object()) {
            if let Some(out) = scanned(&text) {
                prop_assert_eq!(String::from_utf8(out).expect("UTF-8"), String::from_utf8(full_path(&text)).expect("UTF-8"));
            }
        }

        #[test]
        fn any_text_is_scanned_without_panicking(text in any::<String>()) {
            let _ = scanned(&text);
        }
    }
}
