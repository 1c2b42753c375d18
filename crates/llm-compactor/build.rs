//! Writes the rank tables that let the exact counters start without deserializing
//! `bpe-openai`'s encoders (issue 13: a `compactor count` with o200k paid ~130 ms and
//! ~66 MB to rebuild two 200k-entry hash maps and three automata before its first token).
//!
//! For each encoding, three little-endian files in `OUT_DIR`, embedded with
//! `include_bytes!` and read in place from the binary's read-only pages (nothing is
//! built at run time; a count touches only the pages it probes):
//! - `{name}.bytes`: every token's bytes, in rank order, concatenated;
//! - `{name}.slots`: an open-addressing table of `u64` keyed by `rank_hash::token_hash` of
//!   the token's bytes, probed linearly; each slot holds the token's rank, where its bytes
//!   are, and the top bits of its hash (`rank_hash::pack_slot`), 0 where empty;
//! - `{name}.pairs`: the rank of every two-byte token as a `u32` indexed by its two bytes
//!   (`first << 8 | second`), `u32::MAX` where the two bytes are no token.
//!
//! The tokens are `bpe-openai`'s own (its token id is the tiktoken rank), so the tables
//! are the same vocabulary the encoder uses; `tests/count_bpe.rs` checks the counts agree.
//! `bpe-openai` is a build dependency for this, and its encoders are deserialized here,
//! at build time only: the counter merges every piece over these tables and never calls
//! them, so the binaries do not link its 47 MB of MessagePack dictionaries (issue 32).

#[cfg(feature = "bpe")]
#[allow(dead_code)] // shared with the counter: it reads with the half of this file not used here
#[path = "src/count/rank_hash.rs"]
mod rank_hash;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/count/rank_hash.rs");
    #[cfg(feature = "bpe")]
    {
        write_tables("o200k", bpe_openai::o200k_base());
        write_tables("cl100k", bpe_openai::cl100k_base());
    }
}

#[cfg(feature = "bpe")]
fn write_tables(name: &str, tokenizer: &bpe_openai::Tokenizer) {
    use std::path::PathBuf;

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bpe = &tokenizer.bpe;
    let tokens = bpe.num_tokens();
    let mut bytes = Vec::new();
    let mut slots = vec![0u64; rank_hash::slot_count(tokens)];
    let mask = slots.len() - 1;
    for rank in 0..tokens as u32 {
        let token = bpe.token_bytes(rank);
        let hash = rank_hash::token_hash(token);
        let mut slot = hash as usize & mask;
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = rank_hash::pack_slot(rank, bytes.len(), token.len(), hash)
            .unwrap_or_else(|| panic!("{name}: token {rank} does not fit a slot"));
        bytes.extend_from_slice(token);
    }
    let slots: Vec<u8> = slots.iter().flat_map(|slot| slot.to_le_bytes()).collect();
    let mut pairs = vec![u32::MAX; 1 << 16];
    for rank in 0..tokens as u32 {
        if let &[first, second] = bpe.token_bytes(rank) {
            pairs[usize::from(first) << 8 | usize::from(second)] = rank;
        }
    }
    let pairs: Vec<u8> = pairs.iter().flat_map(|rank| rank.to_le_bytes()).collect();
    for (extension, contents) in [("bytes", &bytes), ("slots", &slots), ("pairs", &pairs)] {
        std::fs::write(out.join(format!("{name}.{extension}")), contents).expect("OUT_DIR is writable");
    }
}
