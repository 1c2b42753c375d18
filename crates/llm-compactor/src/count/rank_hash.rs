//! The hash and layout of the embedded rank tables, shared by the build script that writes
//! them (`build.rs` includes this file) and the counter that reads them
//! (`rank_table.rs`). One definition, so the two can never disagree.

/// FNV-1a, 64 bits: simple, fixed (no per-process seed), and good enough on short
/// byte strings for an open-addressing table at under 40% load.
pub fn token_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Slots in an encoding's table for `tokens` entries: the next power of two at or above
/// 2.5× the entries (load under 40%, so probes stay short).
pub fn slot_count(tokens: usize) -> usize {
    (tokens * 5 / 2).next_power_of_two()
}

/// Bits of a slot's fields, low to high: rank + 1 (0: an empty slot), the token's offset
/// in the bytes table, its length, and the top bits of its hash.
///
/// Why all four in one `u64`: a lookup reads the slot it lands on, and a table of 200k
/// tokens is megabytes, so every read is a cache miss. With the hash's top bits in the
/// slot, a probe that meets another token (most lookups of a merge are of pairs that are
/// no token at all) is rejected without reading anything else; with the offset and length,
/// a match is checked with one more read, of the bytes themselves.
const RANK_BITS: u32 = 18;
const OFFSET_BITS: u32 = 22;
const LEN_BITS: u32 = 8;
const TAG_SHIFT: u32 = RANK_BITS + OFFSET_BITS + LEN_BITS;

fn field(slot: u64, shift: u32, bits: u32) -> usize {
    ((slot >> shift) & ((1 << bits) - 1)) as usize
}

/// The slot of the token of `rank`, at `offset` in the bytes table, of `len` bytes, whose
/// hash is `hash`; `None` where a field does not fit its bits.
pub fn pack_slot(rank: u32, offset: usize, len: usize, hash: u64) -> Option<u64> {
    let rank = u64::from(rank) + 1;
    if rank >= 1 << RANK_BITS || offset >= 1 << OFFSET_BITS || len >= 1 << LEN_BITS {
        return None;
    }
    Some(rank | (offset as u64) << RANK_BITS | (len as u64) << (RANK_BITS + OFFSET_BITS) | slot_tag(hash))
}

/// The bits of `hash` a slot keeps (in place: compare with a slot masked by
/// [`TAG_MASK`]).
pub fn slot_tag(hash: u64) -> u64 {
    hash & TAG_MASK
}

/// The tag bits of a slot.
pub const TAG_MASK: u64 = !((1 << TAG_SHIFT) - 1);

/// A slot's rank, or `None` for an empty slot.
pub fn slot_rank(slot: u64) -> Option<u32> {
    (field(slot, 0, RANK_BITS) as u32).checked_sub(1)
}

/// A slot's token: its offset in the bytes table and its length.
pub fn slot_token(slot: u64) -> (usize, usize) {
    (
        field(slot, RANK_BITS, OFFSET_BITS),
        field(slot, RANK_BITS + OFFSET_BITS, LEN_BITS),
    )
}
