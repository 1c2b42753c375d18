//! The pieces of o200k and cl100k pre-tokenization, found by hand where the text is ASCII.
//!
//! Why: before a text's pieces are merged into tokens (`rank_table.rs`), it is split by
//! a Unicode regular expression (`pretokenizer.rs`). Profiled on a cold trim of 9,898 real
//! messages, that regex was over a third of the time: a lazy DFA, a pool of caches taken
//! and returned per piece, for pieces of four bytes on average. Agent conversations are
//! mostly ASCII (code, logs, JSON, English), and on ASCII the patterns reduce to a few
//! byte classes that a short scan decides.
//!
//! The rule: the piece that starts at a position is decided here when the scan reads only
//! ASCII bytes (and the end of the text). When it would have to read a non-ASCII byte (a
//! letter, a digit, a symbol or a space outside ASCII could extend or end the piece), the
//! regex decides that one piece, and the scan resumes after it. A piece depends only on
//! the text from where it starts (the patterns have no look-behind), so mixing the two
//! gives the regex's pieces exactly; `tests/count_bpe.rs` and the property test below
//! compare them on real trajectories and on text made to hit every rule.
//!
//! The patterns (tiktoken's, as `bpe-openai` 0.3 writes them), read on ASCII, in the order
//! they are tried (the first that matches wins, as in a backtracking engine):
//!
//! | o200k | cl100k | on ASCII |
//! |---|---|---|
//! | `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s\|'t\|'re\|'ve\|'m\|'ll\|'d)?` and `…[\p{Lu}…]+[\p{Ll}…]*(…)?` | `(?i:'s\|…)`, then `[^\r\n\p{L}\p{N}]?\p{L}+` | an optional non-letter, non-digit, non-newline byte, a word (o200k: capitals then small letters; cl100k: letters), o200k: a contraction |
//! | `\p{N}{1,3}` | the same | one to three digits |
//! | ` ?[^\s\p{L}\p{N}]+[\r\n/]*` | ` ?[^\s\p{L}\p{N}]+[\r\n]*` | an optional space, punctuation, then newlines (o200k: and slashes) |
//! | `\s*[\r\n]+` | the same | whitespace up to its last newline |
//! | `\s+$`, `\s+(?!\S)`, `\s+` | the same | whitespace to the end; a run less its last byte; one byte |

use bpe_openai::Tokenizer;

use super::encoding::Encoding;

/// What a byte is to the patterns. `\s` is Unicode's `White_Space`: in ASCII, tab, line
/// feed, vertical tab, form feed, carriage return and space (not 0x1C–0x1F).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Past the last byte.
    End,
    Upper,
    Lower,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Whitespace other than a newline: space, `\t`, `\x0b`, `\x0c`.
    Space,
    /// Any other ASCII byte: punctuation, symbols, control bytes.
    Other,
}

/// The class of every byte; `None` above ASCII.
const CLASSES: [Option<Class>; 256] = {
    let mut classes = [None; 256];
    let mut byte = 0;
    while byte < 128 {
        classes[byte] = Some(match byte as u8 {
            b'A'..=b'Z' => Class::Upper,
            b'a'..=b'z' => Class::Lower,
            b'0'..=b'9' => Class::Digit,
            b'\r' | b'\n' => Class::Newline,
            b'\t' | 0x0b | 0x0c | b' ' => Class::Space,
            _ => Class::Other,
        });
        byte += 1;
    }
    classes
};

/// The class of the byte at `at`; `None` for a non-ASCII byte: the scan cannot decide.
#[inline]
fn class(text: &[u8], at: usize) -> Option<Class> {
    match text.get(at) {
        Some(&byte) => CLASSES[usize::from(byte)],
        None => Some(Class::End),
    }
}

fn is_letter(class: Class) -> bool {
    matches!(class, Class::Upper | Class::Lower)
}

/// The end of the piece of `encoding` that starts at `at` (`at < text.len()`), or `None`
/// where deciding it would read a non-ASCII byte.
fn piece_end(encoding: Encoding, text: &[u8], at: usize) -> Option<usize> {
    let o200k = encoding == Encoding::O200kBase;
    let word = |start| {
        if o200k {
            o200k_word(text, start)
        } else {
            letters(text, start)
        }
    };
    if !o200k && text[at] == b'\'' {
        let end = contraction(text, at)?;
        if end > at {
            return Some(end);
        }
    }
    match class(text, at)? {
        Class::Upper | Class::Lower => word(at),
        Class::Digit => digits(text, at),
        Class::Newline => whitespace(text, at),
        lead @ (Class::Space | Class::Other) => {
            // A byte that may lead a word: a word follows, or punctuation / whitespace.
            let next = class(text, at + 1)?;
            if is_letter(next) {
                word(at + 1)
            } else if lead == Class::Other {
                punctuation(text, at, o200k)
            } else if text[at] == b' ' && next == Class::Other {
                punctuation(text, at + 1, o200k)
            } else {
                whitespace(text, at)
            }
        }
        Class::End => Some(at),
    }
}

/// o200k's word from `start` (a letter): capitals, then small letters, then a contraction.
/// Capitals not followed by a small letter are the second pattern's word: the same end.
fn o200k_word(text: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    while class(text, end)? == Class::Upper {
        end += 1;
    }
    while class(text, end)? == Class::Lower {
        end += 1;
    }
    contraction(text, end)
}

/// cl100k's word from `start` (a letter): letters of either case.
fn letters(text: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    while is_letter(class(text, end)?) {
        end += 1;
    }
    Some(end)
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`, or `at` when there is none.
/// Non-ASCII after the apostrophe is undecided (`ſ` folds to `s`).
fn contraction(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'\'') {
        return Some(at);
    }
    let folded = |offset: usize| -> Option<u8> {
        match text.get(at + offset) {
            None => Some(0),
            Some(&byte) if byte >= 0x80 => None,
            Some(&byte) => Some(byte.to_ascii_lowercase()),
        }
    };
    Some(match folded(1)? {
        b's' | b't' | b'm' | b'd' => at + 2,
        b'r' | b'v' if folded(2)? == b'e' => at + 3,
        b'l' if folded(2)? == b'l' => at + 3,
        _ => at,
    })
}

/// One to three digits from `start` (a digit). A non-ASCII byte after fewer than three
/// is undecided (`²` is a number too).
fn digits(text: &[u8], start: usize) -> Option<usize> {
    let mut end = start + 1;
    while end < start + 3 && class(text, end)? == Class::Digit {
        end += 1;
    }
    Some(end)
}

/// Punctuation from `start` (an `Other` byte), then newlines (o200k: and slashes).
fn punctuation(text: &[u8], start: usize, slashes: bool) -> Option<usize> {
    let mut end = start;
    while class(text, end)? == Class::Other {
        end += 1;
    }
    while let Some(&byte) = text.get(end) {
        if byte == b'\r' || byte == b'\n' || (slashes && byte == b'/') {
            end += 1;
        } else {
            break;
        }
    }
    Some(end)
}

/// Whitespace from `start`: up to its last newline if it has one; else to the end of the
/// text if it reaches it; else the run less its last byte (which leads the next piece),
/// or the one byte.
fn whitespace(text: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    let mut after_newline = None;
    loop {
        match class(text, end)? {
            Class::Newline => {
                end += 1;
                after_newline = Some(end);
            }
            Class::Space => end += 1,
            _ => break,
        }
    }
    Some(match after_newline {
        Some(after) => after,
        None if end == text.len() => end,
        None if end - start >= 2 => end - 1,
        None => end,
    })
}

/// The pre-tokenized pieces of `text`, in order: the scan's where it decides, `regex`'s
/// (the same patterns, `pretokenizer.rs`) for the pieces it does not. The regex is asked
/// for only then: building it is most of a process's first count (~4 ms), which ASCII
/// text never pays.
pub(crate) struct Pieces<'a> {
    encoding: Encoding,
    regex: fn(Encoding) -> &'static Tokenizer,
    text: &'a str,
    at: usize,
}

impl<'a> Pieces<'a> {
    pub(crate) fn new(encoding: Encoding, regex: fn(Encoding) -> &'static Tokenizer, text: &'a str) -> Self {
        Pieces {
            encoding,
            regex,
            text,
            at: 0,
        }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.text.get(self.at..).filter(|rest| !rest.is_empty())?;
        let len = match piece_end(self.encoding, self.text.as_bytes(), self.at) {
            Some(end) if end > self.at => end - self.at,
            _ => (self.regex)(self.encoding)
                .split(rest)
                .next()
                .map_or(rest.len(), str::len)
                .max(1),
        };
        let piece = rest.get(..len).unwrap_or(rest);
        self.at += piece.len();
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::pretokenizer;
    use proptest::prelude::*;

    fn both(text: &str) {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let ours: Vec<&str> = Pieces::new(encoding, pretokenizer::regex, text).collect();
            let theirs: Vec<&str> = pretokenizer::regex(encoding).split(text).collect();
            assert_eq!(ours, theirs, "{encoding:?} on {text:?}");
        }
    }

    #[test]
    fn every_rule_gives_the_regexs_pieces() {
        for text in [
            "",
            "a",
            " ",
            "Hello, WORLD's 12345 tests!!\n\n   indented\tand\r\n  trailing   ",
            "HTTPServer parseJSON don't I'LL we'Re they've 'sx 'l 'll 'LL",
            "x;\n/y //comment\n//\n/ ;;\r\n\r\n/",
            "  foo\t\tbar \x0b baz\x0cqux\x1c\x1dend \x7f",
            "1234567 a1b22c333 12a 9",
            "\n\n  \t\n x",
            "trailing spaces   ",
            "trailing newline spaces \n   ",
            "caf\u{e9} na\u{ef}ve \u{a0}x \u{85}y d'\u{17f} \u{b2}3 1\u{b2} \u{2192}; ;\u{2192}",
            "\u{4e2d}\u{6587} mixed ASCII \u{1F980}crab 'ſ",
        ] {
            both(text);
        }
    }

    fn tricky_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a",
            "Z",
            "s",
            "S",
            "t",
            "re",
            "RE",
            "ve",
            "m",
            "ll",
            "LL",
            "d",
            "x",
            "Ab",
            "0",
            "12",
            "'",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\r\n",
            "\x0b",
            "\x0c",
            "/",
            ";",
            ".",
            "-",
            "_",
            "(",
            "\"",
            "\x00",
            "\x1f",
            "\x7f",
            "\u{e9}",
            "\u{c9}",
            "\u{a0}",
            "\u{85}",
            "\u{b2}",
            "\u{17f}",
            "\u{212a}",
            "\u{2192}",
            "\u{4e2d}",
            "\u{301}",
            "\u{1F980}",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn the_pieces_are_the_regexs_on_text_made_to_hit_every_rule(text in tricky_text()) {
            both(&text);
        }

        #[test]
        fn the_pieces_are_the_regexs_on_any_ascii(text in "[\\x00-\\x7f]{0,60}") {
            both(&text);
        }

        #[test]
        fn the_pieces_are_the_regexs_on_any_text(text in any::<String>()) {
            both(&text);
        }
    }
}
