//! Exact BPE counts of text, with the count of each short pre-tokenized piece remembered
//! per thread.
//!
//! Why: `bpe-openai` splits a text into pieces (a word with its leading space, a run of
//! digits or of punctuation: about four bytes on average) and runs its backtracking
//! encoder on each piece, which allocates a token vector and a bitfield per piece.
//! Profiled on `compactor simulate` over 100,000 real messages, allocation and freeing
//! were half of the whole run, and counting was most of the rest. Yet pieces repeat
//! endlessly (the words of a language, identifiers, indentation, the lines of a log
//! printed again), and a piece's count depends on its bytes only. So each thread keeps a
//! map from short pieces to their counts: a repeated piece costs one hash lookup instead
//! of an encoder run. The count is the encoder's own, so nothing changes but the time
//! (`tests/count_bpe.rs` compares it with `Tokenizer::count` on real and arbitrary text).
//!
//! Bounded: only pieces of at most [`MAX_PIECE_BYTES`] bytes are kept, and a map that
//! reaches [`MAX_PIECES`] entries is cleared (a few MB per thread at most). Per thread, so
//! a server counting on many threads never contends on a lock.

use std::cell::RefCell;
use std::collections::HashMap;

use super::bpe::Encoding;
use super::pretokenizer;
use super::rank_table::RankTable;

/// Longer pieces are rare and cost an encoder run anyway.
const MAX_PIECE_BYTES: usize = 32;
/// Entries per encoding and thread before the map is cleared.
const MAX_PIECES: usize = 1 << 16;

type PieceCounts = HashMap<Box<[u8]>, u32, foldhash::fast::FixedState>;

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
/// counts of short pieces remembered. Pieces are merged over the embedded rank tables
/// (`rank_table.rs`, no encoder to load); only pieces too long to merge there wake
/// `bpe-openai`'s encoder.
pub(crate) fn count_text(encoding: Encoding, text: &str) -> usize {
    let splitter = pretokenizer::of(encoding);
    let table = RankTable::of(encoding);
    let text = splitter.normalize(text);
    let count_piece = |bytes: &[u8]| {
        table
            .count_piece(bytes)
            .unwrap_or_else(|| encoding.tokenizer().bpe.count(bytes))
    };
    PIECES.with(|pieces| {
        let Ok(mut pieces) = pieces.try_borrow_mut() else {
            // Re-entered on this thread (not possible today): count without the map.
            return splitter
                .split(text.as_str())
                .map(|piece| count_piece(piece.as_bytes()))
                .sum();
        };
        let counts = &mut pieces[slot(encoding)];
        splitter
            .split(text.as_str())
            .map(|piece| {
                let bytes = piece.as_bytes();
                if bytes.len() > MAX_PIECE_BYTES {
                    return count_piece(bytes);
                }
                if let Some(&count) = counts.get(bytes) {
                    return count as usize;
                }
                let count = count_piece(bytes);
                if counts.len() >= MAX_PIECES {
                    counts.clear();
                }
                counts.insert(bytes.into(), count as u32);
                count
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_counts_are_the_encoders_own_before_and_after_the_map_is_cleared() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tokenizer = encoding.tokenizer();
            // More distinct short pieces than the map holds, twice: misses, hits, and a
            // clear in between.
            let text: String = (0..MAX_PIECES + 5_000).map(|i| format!(" w{i}q")).collect();
            let long = "x".repeat(MAX_PIECE_BYTES * 3);
            let longer = "y".repeat(super::super::rank_table::MAX_MERGE_BYTES * 3);
            for _ in 0..2 {
                assert_eq!(count_text(encoding, &text), tokenizer.count(text.as_str()));
                assert_eq!(count_text(encoding, &long), tokenizer.count(long.as_str()));
                assert_eq!(count_text(encoding, &longer), tokenizer.count(longer.as_str()));
            }
            PIECES.with(|pieces| assert!(pieces.borrow()[slot(encoding)].len() <= MAX_PIECES));
        }
    }
}
