//! The exact BPE count of one pre-tokenized piece, read from rank tables embedded in the
//! binary: no encoder is deserialized, so the first count of a process costs what it
//! counts, not the ~130 ms and ~66 MB of rebuilding `bpe-openai`'s encoder.
//!
//! Why not `bpe-openai`'s encoder: it is built at first use from 32 MB of MessagePack (two
//! 200k-entry hash maps, five vectors, three Aho-Corasick automata), and every process
//! that counts anything paid for that: `compactor count` on a one-line file took 150–200
//! ms and 71 MB. And a binary that calls it embeds those dictionaries (47 MB for o200k and
//! cl100k together). The tables here are laid out by `build.rs` to be used where they lie
//! (see that file for the layout), so a count touches a few pages of them; every piece, of
//! any length, is merged over them, so the counting path never calls the encoder and the
//! linker leaves its dictionaries out of the binaries (the Python extension, the CLI).
//!
//! The count is byte-pair merging as tiktoken defines it: start from single bytes and
//! repeatedly merge the adjacent pair whose concatenation has the lowest rank (the
//! leftmost of equal ranks), until no adjacent pair is a token; the count is the parts
//! left. A piece of up to [`MAX_MERGE_BYTES`] (nearly all) is merged on the stack: each
//! step rescans the pair ranks kept per part (only the merged part's neighbours are
//! looked up again), quadratic in the length but without allocating. A longer piece goes
//! to the heap merge of `heap_merge.rs`, O(n log n). Equality with `bpe-openai`'s encoder
//! and with `tiktoken-rs` is tested on real trajectories, arbitrary text and long pieces
//! (`tests/count_bpe.rs`).

use std::sync::LazyLock;

use super::encoding::Encoding;
use super::heap_merge::{self, NO_RANK};
use super::rank_hash::{TAG_MASK, slot_rank, slot_tag, slot_token, token_hash};

/// Pieces up to this many bytes are merged on the stack by the quadratic scan; longer
/// ones (rare: a run of one character, a long identifier or base64) by the heap merge
/// (`heap_merge.rs`), which allocates but grows as n log n.
pub(crate) const MAX_MERGE_BYTES: usize = 256;

/// One encoding's vocabulary, read in place (see `build.rs` for the layout).
pub(crate) struct RankTable {
    bytes: &'static [u8],
    slots: &'static [u8],
    mask: usize,
    /// The rank of every two-byte token, indexed by its bytes (`NO_RANK` where there is
    /// none): it answers the first round of every merge, a lookup per byte of the piece,
    /// without hashing or probing.
    pairs: &'static [u8],
}

static O200K: LazyLock<RankTable> = LazyLock::new(|| {
    RankTable::new(
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bytes")),
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k.slots")),
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k.pairs")),
    )
});

static CL100K: LazyLock<RankTable> = LazyLock::new(|| {
    RankTable::new(
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.bytes")),
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.slots")),
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.pairs")),
    )
});

impl RankTable {
    fn new(bytes: &'static [u8], slots: &'static [u8], pairs: &'static [u8]) -> Self {
        debug_assert!((slots.len() / 8).is_power_of_two());
        debug_assert_eq!(pairs.len(), 4 << 16);
        RankTable {
            bytes,
            slots,
            mask: slots.len() / 8 - 1,
            pairs,
        }
    }

    /// The table of `encoding`.
    pub(crate) fn of(encoding: Encoding) -> &'static RankTable {
        match encoding {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        }
    }

    fn slot(&self, index: usize) -> u64 {
        let at = index * 8;
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.slots[at..at + 8]);
        u64::from_le_bytes(word)
    }

    /// The rank of the token whose bytes are `bytes`, or [`NO_RANK`].
    pub(crate) fn rank(&self, bytes: &[u8]) -> u32 {
        if let &[first, second] = bytes {
            let at = (usize::from(first) << 8 | usize::from(second)) * 4;
            let mut rank = [0u8; 4];
            rank.copy_from_slice(&self.pairs[at..at + 4]);
            return u32::from_le_bytes(rank);
        }
        let hash = token_hash(bytes);
        let tag = slot_tag(hash);
        let mut index = hash as usize & self.mask;
        loop {
            let slot = self.slot(index);
            let Some(rank) = slot_rank(slot) else {
                return NO_RANK;
            };
            if slot & TAG_MASK == tag {
                let (offset, len) = slot_token(slot);
                if len == bytes.len() && same_bytes(&self.bytes[offset..offset + len], bytes) {
                    return rank;
                }
            }
            index = (index + 1) & self.mask;
        }
    }

    /// The token count of one pre-tokenized piece, of any length.
    pub(crate) fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() > MAX_MERGE_BYTES {
            return heap_merge::count(piece, |bytes| self.rank(bytes));
        }
        if piece.len() <= 1 || self.rank(piece) != NO_RANK {
            return piece.len().min(1);
        }
        // parts[i] = (where part i starts, rank of part i merged with part i + 1); the
        // entry after the last part is the end of the piece. On the stack: no allocation.
        let mut parts = [(0u32, NO_RANK); MAX_MERGE_BYTES + 1];
        let mut len = piece.len() + 1;
        for start in 0..piece.len() - 1 {
            parts[start] = (start as u32, self.rank(&piece[start..start + 2]));
        }
        parts[piece.len() - 1] = (piece.len() as u32 - 1, NO_RANK);
        parts[piece.len()] = (piece.len() as u32, NO_RANK);
        // The rank of parts i and i + 1 merged, where part i + 1 ends at parts[i + 2].
        let pair_rank = |parts: &[(u32, u32)], i: usize| -> u32 {
            match parts.get(i + 2) {
                Some(&(end, _)) => self.rank(&piece[parts[i].0 as usize..end as usize]),
                None => NO_RANK,
            }
        };
        loop {
            let mut lowest = (NO_RANK, 0);
            for (i, &(_, rank)) in parts[..len - 1].iter().enumerate() {
                if rank < lowest.0 {
                    lowest = (rank, i);
                }
            }
            let (rank, at) = lowest;
            if rank == NO_RANK {
                break;
            }
            // Merge part `at` with the next: `at + 1` goes, and the pairs that now end or
            // start at the merged part get their ranks again.
            parts.copy_within(at + 2..len, at + 1);
            len -= 1;
            parts[at].1 = pair_rank(&parts[..len], at);
            if at > 0 {
                parts[at - 1].1 = pair_rank(&parts[..len], at - 1);
            }
        }
        len - 1
    }
}

/// `a == b` for slices of one length, compared in place: tokens are short (a few bytes),
/// where a byte loop the compiler inlines costs less than a call to `memcmp`.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_found_at_its_own_rank() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let table = RankTable::of(encoding);
            let bpe = &encoding.tokenizer().bpe;
            for rank in 0..bpe.num_tokens() as u32 {
                assert_eq!(table.rank(bpe.token_bytes(rank)), rank);
            }
            assert_eq!(table.rank(b"\xff\xfe not a token at all \x00"), NO_RANK);
        }
    }

    #[test]
    fn a_merged_count_is_the_encoders_on_words_runs_and_mixed_bytes() {
        let pieces: [&[u8]; 8] = [
            b"",
            b"a",
            b" hello",
            b" antidisestablishmentarianism",
            b"==========================================",
            b"                                        ",
            " \u{1F980}\u{1F980}caf\u{e9}".as_bytes(),
            b"xQ3kZ9pL0vB7nM2aS8dF4gH6jK1lW5eR",
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let table = RankTable::of(encoding);
            let bpe = &encoding.tokenizer().bpe;
            for piece in pieces {
                assert_eq!(table.count_piece(piece), bpe.count(piece), "{piece:?}");
            }
        }
    }

    /// Both merges on the same pieces: the stack scan up to [`MAX_MERGE_BYTES`], the heap
    /// merge at every length, and the encoder's count across the line between them.
    #[test]
    fn the_heap_merge_counts_as_the_stack_scan_and_the_encoder_do() {
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let table = RankTable::of(encoding);
            let bpe = &encoding.tokenizer().bpe;
            for len in (0..=40).chain(MAX_MERGE_BYTES - 3..=MAX_MERGE_BYTES + 3) {
                let alphabets: [&[u8]; 4] = [b"a", b"ab", b" e\t", b"QWERTYqwerty0123456789+/"];
                for alphabet in alphabets {
                    let piece: Vec<u8> = (0..len).map(|_| alphabet[next() as usize % alphabet.len()]).collect();
                    let merged = heap_merge::count(&piece, |bytes| table.rank(bytes));
                    assert_eq!(
                        merged,
                        bpe.count(&piece),
                        "{encoding:?} {:?}",
                        String::from_utf8_lossy(&piece)
                    );
                    assert_eq!(table.count_piece(&piece), merged);
                }
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let merged = heap_merge::count(&bytes, |bytes| table.rank(bytes));
                assert_eq!(merged, bpe.count(&bytes), "{encoding:?} {bytes:?}");
                assert_eq!(table.count_piece(&bytes), merged);
            }
        }
    }
}
