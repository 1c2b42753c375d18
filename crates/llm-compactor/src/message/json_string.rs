//! A JSON string literal, byte for byte as serde_json writes it, eight bytes at a time;
//! and a JSON value in serde_json's compact form with its strings written so.
//!
//! Why not serde_json's own writer: it looks every byte up in a table and hands each run
//! between escapes to the writer apart. A message digest renders the whole message on
//! every append (the chained prefix digest of a calibrated loop), and a tool result is
//! mostly long runs of plain text between newlines. Here a run is found by testing eight
//! bytes per step for the three kinds that need escaping (a control character, `"`,
//! `\`) and copied at once. The output is serde_json's exactly (short escapes for `\b`,
//! `\t`, `\n`, `\f`, `\r`, `\"`, `\\`; `\u00xx` in lowercase hex for the other control
//! characters; everything else verbatim, DEL, `/` and non-ASCII included), which the
//! tests below check on arbitrary strings: a digest must not depend on which writer
//! rendered it.

use serde_json::{Map, Value};

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// A word with a bit set in the high bit of every byte that is 0 (and possibly above the
/// first such byte; the lowest set bit is exact).
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The high bits of the bytes of `word` that need escaping (the lowest one exact).
fn escape_bytes(word: u64) -> u64 {
    // A byte below 0x20: `haszero`'s trick with 0x20 in place of 1, exact for a bound
    // of at most 0x80.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    control | zero_bytes(word ^ (ONES * u64::from(b'"'))) | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// The index of the first byte of `bytes[from..]` that needs escaping, or `bytes.len()`.
pub(crate) fn next_escape(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while at + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        let found = escape_bytes(u64::from_le_bytes(word));
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| needs_escape(b))
        .map_or(bytes.len(), |i| at + i)
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Appends `text` as a JSON string literal (quotes included) to `out`, exactly as
/// `serde_json::to_writer(out, text)` would.
pub(crate) fn write_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let at = next_escape(bytes, start);
        out.extend_from_slice(&bytes[start..at]);
        let Some(&byte) = bytes.get(at) else {
            break;
        };
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            control => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(control >> 4)],
                HEX[usize::from(control & 0xf)],
            ]),
        }
        start = at + 1;
    }
    out.push(b'"');
}

/// Chars of the literal [`write_json_string`] writes for `text` (quotes included),
/// without writing it: every char of `text`, one more for each `"`, `\` and short
/// control escape, five more for each `\u00xx`. This is the heuristic counter's view of
/// every tool call, on every count, so each byte's share is computed without a branch
/// ([`literal_chars_of_byte`]) and summed in 16-bit lanes a chunk at a time, a loop the
/// compiler turns into vector instructions (about twice the speed of eight bytes per step
/// in a `u64` on the real trajectories' arguments).
pub(crate) fn json_string_chars(text: &str) -> usize {
    // At most 6 per byte (a control byte written `\u00xx`): 4,096 of them fit in a u16.
    const CHUNK: usize = 4096;
    2 + text
        .as_bytes()
        .chunks(CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .fold(0u16, |sum, &byte| sum.wrapping_add(literal_chars_of_byte(byte))) as usize
        })
        .sum::<usize>()
}

/// What one byte of a string adds to the chars of its JSON literal: 1 for the first byte
/// of a char (not a UTF-8 continuation byte), 1 more for `"` and `\`, for a short escape
/// (`\b` `\t` `\n` `\f` `\r`) 1 more, for any other control byte 5 more (`\u00xx`).
#[inline(always)]
fn literal_chars_of_byte(byte: u8) -> u16 {
    let starts_char = u16::from(byte & 0xC0 != 0x80);
    let quoted = u16::from((byte == b'"') | (byte == b'\\'));
    let control = u16::from(byte < 0x20);
    // 0x08 0x09 0x0A 0x0C 0x0D; 0x0B (vertical tab) has no short escape.
    let short = u16::from((byte.wrapping_sub(0x08) < 6) & (byte != 0x0B));
    starts_char + quoted + control * 5 - short * 4
}

/// Appends `value` to `out` exactly as `serde_json::to_writer(out, value)` would (compact,
/// keys in the map's order), its strings through [`write_json_string`].
pub(crate) fn write_json_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => out.extend_from_slice(number.to_string().as_bytes()),
        Value::String(text) => write_json_string(out, text),
        Value::Array(items) => write_json_array(out, items, write_json_value),
        Value::Object(object) => write_json_object(out, object),
    }
}

/// Appends `[item,...]`, each item written by `write`.
pub(crate) fn write_json_array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// Appends an object as [`write_json_value`] writes it.
pub(crate) fn write_json_object(out: &mut Vec<u8>, object: &Map<String, Value>) {
    write_json_members(out, object, write_json_value);
}

/// Appends `{"key":value,...}` in the order given, each value written by `write`.
pub(crate) fn write_json_members<'a>(
    out: &mut Vec<u8>,
    members: impl IntoIterator<Item = (&'a String, &'a Value)>,
    mut write: impl FnMut(&mut Vec<u8>, &'a Value),
) {
    out.push(b'{');
    for (i, (key, item)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_string(out, key);
        out.push(b':');
        write(out, item);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        write_json_string(&mut out, text);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn every_byte_kind_is_written_as_serde_json_writes_it() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        for text in [
            "",
            "plain",
            "exactly8",
            "sixteen bytes ok",
            "a\"b\\c\nd\te\rf\u{8}g\u{c}h\u{1}i\u{1f}j\u{7f}k/l",
            "\"\"\"\"\"\"\"\"\"",
            "line one\nline two\nline three that is longer than eight bytes\n",
            "ünïcödé \u{2028} 😀 \\u0041",
            every_ascii.as_str(),
        ] {
            assert_eq!(ours(text), serde_json::to_string(text).expect("a string"), "{text:?}");
        }
    }

    /// Chars of serde_json's literal, the definition [`json_string_chars`] must meet.
    fn chars_of_literal(text: &str) -> usize {
        serde_json::to_string(text).expect("a string").chars().count()
    }

    #[test]
    fn chars_of_every_byte_kind_at_every_offset_of_a_word() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        assert_eq!(json_string_chars(&every_ascii), chars_of_literal(&every_ascii));
        for at in 0..20 {
            for special in [
                "\"", "\\", "\n", "\t", "\u{8}", "\u{c}", "\r", "\u{0}", "\u{1f}", "\u{7f}", "é", "😀", "\u{2028}",
            ] {
                let text = format!("{}{special}{}", "x".repeat(at), "y".repeat(20 - at));
                assert_eq!(json_string_chars(&text), chars_of_literal(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn an_escape_at_every_offset_of_a_word_is_found() {
        for at in 0..20 {
            for special in ["\"", "\\", "\n", "\u{0}", "\u{1f}"] {
                let text = format!("{}{special}{}", "x".repeat(at), "y".repeat(20 - at));
                assert_eq!(ours(&text), serde_json::to_string(&text).expect("a string"));
            }
        }
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[\\x00-\\x21\"\\\\a-z\u{7f}é🙂]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a-z\"\\n]{0,3}", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_value_is_written_as_serde_json_writes_it(value in arb_value()) {
            let mut out = Vec::new();
            write_json_value(&mut out, &value);
            prop_assert_eq!(String::from_utf8(out).expect("UTF-8"), serde_json::to_string(&value).expect("a value"));
        }

        #[test]
        fn any_string_is_written_as_serde_json_writes_it(
            text in "[\\x00-\\x20\"\\\\a-z\u{7f}\u{80}-\u{10ffff}]{0,64}",
            any in any::<String>(),
        ) {
            prop_assert_eq!(ours(&text), serde_json::to_string(&text).expect("a string"));
            prop_assert_eq!(ours(&any), serde_json::to_string(&any).expect("a string"));
            prop_assert_eq!(json_string_chars(&text), chars_of_literal(&text));
            prop_assert_eq!(json_string_chars(&any), chars_of_literal(&any));
        }
    }
}
