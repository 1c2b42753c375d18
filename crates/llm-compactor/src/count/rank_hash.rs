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
