//! Writes the rank tables that let the exact counters start without deserializing
//! `bpe-openai`'s encoders (issue 13: a `compactor count` with o200k paid ~130 ms and
//! ~66 MB to rebuild two 200k-entry hash maps and three automata before its first token).
//!
//! For each encoding, three little-endian files in `OUT_DIR`, embedded with
//! `include_bytes!` and read in place from the binary's read-only pages (nothing is
//! built at run time; a count touches only the pages it probes):
//! - `{name}.bytes`: every token's bytes, in rank order, concatenated;
//! - `{name}.starts`: `u32` offsets into `.bytes`, one per rank plus the end;
//! - `{name}.slots`: an open-addressing table of `u32` (rank + 1, or 0 for empty) keyed by
//!   `rank_hash::token_hash` of the token's bytes, probed linearly.
//!
//! The tokens are `bpe-openai`'s own (its token id is the tiktoken rank), so the tables
//! are the same vocabulary the encoder uses; `tests/count_bpe.rs` checks the counts agree.

#[cfg(feature = "bpe")]
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
    let mut starts = Vec::with_capacity((tokens + 1) * 4);
    let mut slots = vec![0u32; rank_hash::slot_count(tokens)];
    let mask = slots.len() - 1;
    for rank in 0..tokens as u32 {
        let token = bpe.token_bytes(rank);
        starts.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        bytes.extend_from_slice(token);
        let mut slot = rank_hash::token_hash(token) as usize & mask;
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = rank + 1;
    }
    starts.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    let slots: Vec<u8> = slots.iter().flat_map(|slot| slot.to_le_bytes()).collect();
    for (extension, contents) in [("bytes", &bytes), ("starts", &starts), ("slots", &slots)] {
        std::fs::write(out.join(format!("{name}.{extension}")), contents).expect("OUT_DIR is writable");
    }
}
