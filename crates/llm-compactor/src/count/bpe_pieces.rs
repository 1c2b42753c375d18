//! Exact BPE counts of text, with the count of each short pre-tokenized piece remembered
//! per thread.
//!
//! Why: a text is split into pieces (a word with its leading space, a run of digits or of
//! punctuation: about four bytes on average) and each piece is merged on its own
//! (`rank_table.rs`). When that was `bpe-openai`'s backtracking encoder, which allocates a
//! token vector and a bitfield per piece, profiling `compactor simulate` over 100,000
//! real messages found allocation and freeing half of the whole run, and counting most of
//! the rest. Yet pieces repeat endlessly (the words of a language, identifiers,
//! indentation, the lines of a log printed again), and a piece's count depends on its
//! bytes only. So each thread keeps a map from short pieces to their counts: a repeated
//! piece costs one hash lookup instead of a merge. The count is the merge's own, so
//! nothing changes but the time (`tests/count_bpe.rs` compares it with `bpe-openai`'s
//! `Tokenizer::count` and with `tiktoken-rs` on real and arbitrary text).
//!
//! Bounded: only pieces of at most [`MAX_PIECE_BYTES`] bytes are kept, in two maps (short
//! pieces packed in an integer key, longer ones boxed), and a map that reaches
//! [`MAX_PIECES`] entries is cleared (a few MB per thread at most). Per thread, so
//! a server counting on many threads never contends on a lock.

use std::cell::RefCell;
use std::collections::HashMap;

use super::encoding::Encoding;
use super::pretokenizer;
use super::rank_table::RankTable;

/// Longer pieces are rare and cost a merge of their own length anyway.
const MAX_PIECE_BYTES: usize = 32;
/// Entries per encoding and thread before the map is cleared.
const MAX_PIECES: usize = 1 << 16;

/// Pieces of up to this many bytes (most: four on average) are keyed by their bytes and
/// length packed in one `u128`, so that a lookup hashes and compares two integers
/// instead of calling `memcmp` on a key behind a pointer (profiled: an eighth of a cold
/// count was that call).
const MAX_PACKED_BYTES: usize = 15;

/// The remembered counts of one encoding on one thread.
#[derive(Default)]
struct PieceCounts {
    packed: HashMap<u128, u32, foldhash::fast::FixedState>,
    boxed: HashMap<Box<[u8]>, u32, foldhash::fast::FixedState>,
}

impl PieceCounts {
    /// The count of `piece` (at most [`MAX_PIECE_BYTES`]), remembered or `count`ed.
    fn count(&mut self, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        if let Some(key) = packed_key(piece) {
            if let Some(&known) = self.packed.get(&key) {
                return known as usize;
            }
            let counted = count(piece);
            if self.packed.len() >= MAX_PIECES {
                self.packed.clear();
            }
            self.packed.insert(key, counted as u32);
            return counted;
        }
        if let Some(&known) = self.boxed.get(piece) {
            return known as usize;
        }
        let counted = count(piece);
        if self.boxed.len() >= MAX_PIECES {
            self.boxed.clear();
        }
        self.boxed.insert(piece.into(), counted as u32);
        counted
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.packed.len() + self.boxed.len()
    }
}

/// `piece`'s bytes and length in one integer, for pieces of at most
/// [`MAX_PACKED_BYTES`]: distinct pieces have distinct keys (the length is the top byte,
/// the bytes below it, zero-padded). Read with whole-word loads that may overlap, not
/// copied into a buffer: a copy of variable length followed by a word load of the same
/// bytes stalls the processor (profiled: a quarter of the lookup).
fn packed_key(piece: &[u8]) -> Option<u128> {
    let len = piece.len();
    if len > MAX_PACKED_BYTES {
        return None;
    }
    let word = |at: usize| u64::from_le_bytes(piece[at..at + 8].try_into().unwrap_or_default());
    let half = |at: usize| u64::from(u32::from_le_bytes(piece[at..at + 4].try_into().unwrap_or_default()));
    let (low, high) = match len {
        8.. => (word(0), (word(len - 8) >> 8 >> ((15 - len) * 8)) & !(0xff << 56)),
        4..=7 => (half(0) | half(len - 4) << ((len - 4) * 8), 0),
        1..=3 => {
            let byte = |at: usize| u64::from(piece[at]) << (at * 8);
            (byte(0) | byte(len / 2) | byte(len - 1), 0)
        }
        0 => (0, 0),
    };
    Some(u128::from(high | (len as u64) << 56) << 64 | u128::from(low))
}

thread_local! {
    /// One map per encoding (indexed by [`slot`]).
    static PIECES: RefCell<[PieceCounts; 2]> = RefCell::new(Default::default());
}

fn slot(encoding: Encoding) -> usize {
    match encoding {
        Encoding::O200kBase => 0,
        Encoding::Cl100kBase => 1,
    }
}

/// The token count of `text` in `encoding`: `Tokenizer::count`, piece by piece, with the
/// counts of short pieces remembered. Every piece, of any length, is merged over the
/// embedded rank tables (`rank_table.rs`): `bpe-openai`'s encoder is never called here,
/// so binaries that count do not link its embedded dictionaries (issue 32).
pub(crate) fn count_text(encoding: Encoding, text: &str) -> usize {
    let table = RankTable::of(encoding);
    let count_piece = |bytes: &[u8]| table.count_piece(bytes);
    PIECES.with(|pieces| {
        let Ok(mut pieces) = pieces.try_borrow_mut() else {
            // Re-entered on this thread (not possible today): count without the map.
            return pretokenizer::pieces(encoding, text)
                .map(|piece| count_piece(piece.as_bytes()))
                .sum();
        };
        let counts = &mut pieces[slot(encoding)];
        pretokenizer::pieces(encoding, text)
            .map(|piece| {
                let bytes = piece.as_bytes();
                if bytes.len() > MAX_PIECE_BYTES || bytes.len() <= 2 {
                    // Two bytes or fewer: one lookup in the pairs, cheaper than the map.
                    count_piece(bytes)
                } else {
                    counts.count(bytes, count_piece)
                }
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_key_is_the_bytes_zero_padded_with_the_length_on_top() {
        let bytes: Vec<u8> = (1..=16u8).map(|b| b.wrapping_mul(37) | 1).collect();
        for len in 0..=MAX_PACKED_BYTES {
            let mut expected = [0u8; 16];
            expected[..len].copy_from_slice(&bytes[..len]);
            expected[15] = len as u8;
            assert_eq!(packed_key(&bytes[..len]), Some(u128::from_le_bytes(expected)), "{len}");
        }
        assert_eq!(packed_key(&bytes), None);
        assert_ne!(packed_key(b"\0"), packed_key(b"\0\0"));
    }

    #[test]
    fn remembered_counts_are_the_encoders_own_before_and_after_the_map_is_cleared() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tokenizer = encoding.tokenizer();
            // More distinct short pieces than the map holds, twice: misses, hits, and a
            // clear in between.
            let text: String = (0..MAX_PIECES + 5_000).map(|i| format!(" w{i}q")).collect();
            // Pieces past the packed keys' length, and pieces of NUL bytes (a packed key
            // pads with zeros: the length tells them apart).
            let boxed: String = (0..MAX_PIECES + 5_000)
                .map(|i| {
                    let letters: String = i.to_string().bytes().map(|d| char::from(d - b'0' + b'a')).collect();
                    format!(" abcdefghijklmnop{letters}")
                })
                .collect();
            let nuls = "\0 \0\0 \0\0\0 a\0 a\0\0";
            let long = "x".repeat(MAX_PIECE_BYTES * 3);
            let longer = "y".repeat(super::super::rank_table::MAX_MERGE_BYTES * 3);
            for _ in 0..2 {
                assert_eq!(count_text(encoding, &text), tokenizer.count(text.as_str()));
                assert_eq!(count_text(encoding, &boxed), tokenizer.count(boxed.as_str()));
                assert_eq!(count_text(encoding, nuls), tokenizer.count(nuls));
                assert_eq!(count_text(encoding, &long), tokenizer.count(long.as_str()));
                assert_eq!(count_text(encoding, &longer), tokenizer.count(longer.as_str()));
            }
            PIECES.with(|pieces| assert!(pieces.borrow()[slot(encoding)].len() <= 2 * MAX_PIECES));
        }
    }
}
