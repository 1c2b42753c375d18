//! tiktoken's byte-pair merge of one piece of any length, in O(n log n): the path for
//! pieces too long for the quadratic scan of `rank_table.rs` (a run of one character, a
//! long identifier, base64, a long whitespace run).
//!
//! Why here and not `bpe-openai`'s encoder: that encoder is built from the MessagePack
//! dictionaries `bpe-openai` embeds (32 MB for o200k, 15 MB for cl100k). Calling it from
//! the counting path linked those bytes into every binary that counts: the Python
//! extension was 66.8 MB and its wheel 33.4 MB (issue 32). Merging over the rank tables
//! the binary already embeds needs nothing else, so the linker drops the dictionaries.
//!
//! The merge is tiktoken's exactly: start from single bytes and repeatedly merge the
//! adjacent pair whose concatenation has the lowest rank, the leftmost of equal ranks,
//! until no adjacent pair is a token; the count is the parts left. Here the parts are a
//! doubly linked list over the piece's bytes (indexed by where each part starts) and the
//! pairs wait in a binary heap ordered by (rank, start): the smallest entry is the lowest
//! rank and, among equal ranks, the leftmost pair. A merge changes the ranks of two pairs
//! only (the merged part with its right neighbour, and its left neighbour with it); their
//! new ranks are pushed, and the entries they replace stay in the heap until popped, when
//! they are recognised as stale (the part's current rank is another: a pair that grew is
//! a longer byte string, hence another token, or none) and skipped. At most `n` pairs at
//! the start and two per merge: O(n log n) time, heap-allocated vectors, no recursion.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A rank no token has: "this pair is not a token".
pub(crate) const NO_RANK: u32 = u32::MAX;

/// The token count of `piece` under byte-pair merging with `rank` (the rank of a byte
/// string, [`NO_RANK`] if it is no token).
pub(crate) fn count(piece: &[u8], rank: impl Fn(&[u8]) -> u32) -> usize {
    // Positions as `u32` halve the memory of the list and the heap; a piece of 4 GiB or
    // more (nothing real) gets `usize` positions from the same code.
    if piece.len() < u32::MAX as usize {
        merge::<u32>(piece, &rank)
    } else {
        merge::<usize>(piece, &rank)
    }
}

/// A byte position in the piece, and the heap's entry for a pair: (rank, where the pair
/// starts), ordered by rank and then position.
trait Position: Copy {
    type Entry: Copy + Ord;
    /// `at`, which the caller has checked fits.
    fn at(at: usize) -> Self;
    fn get(self) -> usize;
    fn entry(rank: u32, at: usize) -> Self::Entry;
    fn rank_and_start(entry: Self::Entry) -> (u32, usize);
}

impl Position for u32 {
    /// Rank and position in one integer: one comparison per step of the heap (a tuple's
    /// is two, with a branch between; profiled, the heap is most of a long merge).
    type Entry = u64;
    fn at(at: usize) -> Self {
        at as u32
    }
    fn get(self) -> usize {
        self as usize
    }
    fn entry(rank: u32, at: usize) -> u64 {
        u64::from(rank) << 32 | at as u64
    }
    fn rank_and_start(entry: u64) -> (u32, usize) {
        ((entry >> 32) as u32, entry as u32 as usize)
    }
}

impl Position for usize {
    type Entry = (u32, usize);
    fn at(at: usize) -> Self {
        at
    }
    fn get(self) -> usize {
        self
    }
    fn entry(rank: u32, at: usize) -> (u32, usize) {
        (rank, at)
    }
    fn rank_and_start(entry: (u32, usize)) -> (u32, usize) {
        entry
    }
}

fn merge<P: Position>(piece: &[u8], rank: &impl Fn(&[u8]) -> u32) -> usize {
    let len = piece.len();
    if len <= 1 {
        return len;
    }
    // For each position that starts a part: where the part ends (the next part's start,
    // or `len`), where the part before it starts (unused for the first part), and the rank
    // of the part merged with the next one (`NO_RANK` for the last part, and for every
    // position that no longer starts a part).
    let mut ends: Vec<P> = (1..=len).map(P::at).collect();
    let mut starts_before: Vec<P> = (0..len).map(|at| P::at(at.saturating_sub(1))).collect();
    let mut ranks: Vec<u32> = (0..len)
        .map(|at| match piece.get(at..at + 2) {
            Some(pair) => rank(pair),
            None => NO_RANK,
        })
        .collect();
    let mut heap: BinaryHeap<Reverse<P::Entry>> = ranks
        .iter()
        .enumerate()
        .filter(|&(_, &rank)| rank != NO_RANK)
        .map(|(at, &rank)| Reverse(P::entry(rank, at)))
        .collect();
    // The rank of the part starting at `start` merged with the next one.
    let pair_rank = |ends: &[P], start: usize| -> u32 {
        let next = ends[start].get();
        if next >= len {
            return NO_RANK;
        }
        rank(&piece[start..ends[next].get()])
    };
    let mut parts = len;
    while let Some(Reverse(entry)) = heap.pop() {
        let (lowest, start) = P::rank_and_start(entry);
        if ranks[start] != lowest {
            continue; // stale: that pair has grown or is gone
        }
        // Merge the part at `start` with the next one, which stops being a part.
        let next = ends[start].get();
        let end = ends[next].get();
        ends[start] = P::at(end);
        if end < len {
            starts_before[end] = P::at(start);
        }
        ranks[next] = NO_RANK;
        parts -= 1;
        // The two pairs that changed: the merged part with its right neighbour, and its
        // left neighbour with it.
        let mut update = |at: usize| {
            let rank = pair_rank(&ends, at);
            ranks[at] = rank;
            if rank != NO_RANK {
                heap.push(Reverse(P::entry(rank, at)));
            }
        };
        update(start);
        if start > 0 {
            update(starts_before[start].get());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// tiktoken's merge as it is written there: rescan every pair per merge, keep the
    /// first of the lowest (strict `<`).
    fn quadratic(piece: &[u8], rank: impl Fn(&[u8]) -> u32) -> usize {
        let mut bounds: Vec<usize> = (0..=piece.len()).collect();
        loop {
            let mut lowest = (NO_RANK, 0);
            for i in 0..bounds.len().saturating_sub(2) {
                let pair = rank(&piece[bounds[i]..bounds[i + 2]]);
                if pair < lowest.0 {
                    lowest = (pair, i);
                }
            }
            if lowest.0 == NO_RANK {
                return bounds.len() - 1;
            }
            bounds.remove(lowest.1 + 1);
        }
    }

    fn vocabulary(tokens: &[&str]) -> impl Fn(&[u8]) -> u32 {
        let ranks: HashMap<Vec<u8>, u32> = tokens
            .iter()
            .enumerate()
            .map(|(rank, token)| (token.as_bytes().to_vec(), rank as u32))
            .collect();
        move |bytes| ranks.get(bytes).copied().unwrap_or(NO_RANK)
    }

    #[test]
    fn equal_ranks_merge_leftmost_first() {
        // "aaab": both "aa" pairs have rank 0. Leftmost first: "aa" "a" "b", and neither
        // "aaa" nor "ab" is a token: 3. The right one first would have made "aab": 2.
        let rank = vocabulary(&["aa", "aab"]);
        assert_eq!(count(b"aaab", &rank), 3);
        assert_eq!(quadratic(b"aaab", &rank), 3);
    }

    #[test]
    fn a_merged_token_may_outrank_pairs_already_waiting() {
        // "xabcd": "cd" (1) first, then "bcd" (0) made by it must go before "ab" (2),
        // which is then stale, and "xa" (3) last: "xa" "bcd". Merging in the order the
        // pairs were first seen would give "x" "ab" "cd".
        let rank = vocabulary(&["bcd", "cd", "ab", "xa"]);
        assert_eq!(count(b"xabcd", &rank), 2);
        assert_eq!(quadratic(b"xabcd", &rank), 2);
    }

    #[test]
    fn the_heap_merge_is_the_quadratic_scan_on_every_short_string_of_a_toy_vocabulary() {
        let rank = vocabulary(&[
            "ab", "ba", "aa", "bb", "aab", "aba", "abab", "bab", "baa", "aaaa", "bbb", "abba",
        ]);
        for len in 0..=10u32 {
            for bits in 0..1u32 << len {
                let piece: Vec<u8> = (0..len)
                    .map(|at| if bits >> at & 1 == 1 { b'b' } else { b'a' })
                    .collect();
                assert_eq!(
                    count(&piece, &rank),
                    quadratic(&piece, &rank),
                    "{:?}",
                    String::from_utf8_lossy(&piece)
                );
            }
        }
    }

    #[test]
    fn empty_and_one_byte_pieces() {
        let rank = vocabulary(&["ab"]);
        assert_eq!(count(b"", &rank), 0);
        assert_eq!(count(b"a", &rank), 1);
        assert_eq!(count(b"ab", &rank), 1);
    }

    #[test]
    fn a_megabyte_run_merges_without_recursion_or_quadratic_time() {
        // Powers of two of "a": a run of 2^20 merges into tokens of 2^k bytes.
        let tokens: Vec<String> = (1..=6).map(|k| "a".repeat(1 << k)).collect();
        let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
        let rank = vocabulary(&tokens);
        let run = vec![b'a'; (1 << 20) + 3];
        // 2^20 bytes in tokens of 64, then "aa" + "a".
        assert_eq!(count(&run, &rank), (1 << 20) / 64 + 2);
    }
}
