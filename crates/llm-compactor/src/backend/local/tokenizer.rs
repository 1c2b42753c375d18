//! A byte-level BPE tokenizer built from a GGUF file's own tables.
//!
//! GGUF files of the GPT-2 tokenizer family (`tokenizer.ggml.model = "gpt2"`: SmolLM2,
//! Llama 3, Qwen 2.5) carry everything a tokenizer needs: the vocabulary, the merge
//! list in rank order, token types and the special ids. Building the tokenizer from
//! those tables, rather than from a separate `tokenizer.json`, guarantees it matches
//! the weights, and keeps the dependency tree free of C libraries (the pre-tokenizer
//! regexes need look-ahead, which `fancy-regex` provides in pure Rust).

use std::collections::HashMap;

use fancy_regex::Regex;

use super::error::LocalError;

/// GGUF token type of a control token (`<|im_start|>`, `<|eot_id|>`).
const TOKEN_TYPE_CONTROL: i32 = 3;
/// GGUF token type of a user-defined special token.
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Pre-tokens longer than this are merged in pieces (see [`Tokenizer::encode`]).
const MAX_BPE_BYTES: usize = 256;

/// GPT-2's regex, used by SmolLM2 / StarCoder after splitting digits apart.
const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Llama 3's pre-tokenizer regex.
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2's pre-tokenizer regex (Llama 3's with single digits).
const QWEN2_PATTERN: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The raw tables a [`Tokenizer`] is built from (as read from GGUF metadata).
#[derive(Clone, Debug, Default)]
pub struct TokenizerTables {
    /// `tokenizer.ggml.model` (only `gpt2` is supported).
    pub model: String,
    /// `tokenizer.ggml.pre`: which pre-tokenizer regexes to use.
    pub pre: String,
    /// `tokenizer.ggml.tokens`.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type` (may be empty).
    pub token_types: Vec<i32>,
    /// `tokenizer.ggml.merges`, in rank order, each `"left right"`.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos: Option<u32>,
}

/// A byte-level BPE tokenizer.
#[derive(Debug)]
pub struct Tokenizer {
    tokens: Vec<String>,
    token_to_id: HashMap<String, u32>,
    /// (left id, right id) → (rank, merged id).
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// Byte → id of the token for that single byte. Some vocabularies lack a few
    /// (control characters, bytes that never occur in UTF-8); those bytes are dropped.
    byte_tokens: [Option<u32>; 256],
    /// Unicode char of the byte-level alphabet → byte.
    char_to_byte: HashMap<char, u8>,
    special: Vec<bool>,
    pre: Vec<Regex>,
    bos: Option<u32>,
    eos: Option<u32>,
}

impl Tokenizer {
    /// Build a tokenizer from GGUF tables.
    pub fn from_tables(tables: TokenizerTables) -> Result<Self, LocalError> {
        if tables.model != "gpt2" {
            return Err(LocalError::Tokenizer(format!(
                "tokenizer model {:?} is not supported (only byte-level BPE, \"gpt2\")",
                tables.model
            )));
        }
        let byte_chars = byte_to_char_table();
        let char_to_byte: HashMap<char, u8> = byte_chars.iter().enumerate().map(|(b, c)| (*c, b as u8)).collect();
        let mut token_to_id = HashMap::with_capacity(tables.tokens.len());
        for (id, token) in tables.tokens.iter().enumerate() {
            let id = u32::try_from(id).map_err(|_| LocalError::Tokenizer("vocabulary too large".into()))?;
            token_to_id.entry(token.clone()).or_insert(id);
        }
        let mut byte_tokens = [None; 256];
        for (byte, ch) in byte_chars.iter().enumerate() {
            byte_tokens[byte] = token_to_id.get(&ch.to_string()).copied();
        }
        if byte_tokens.iter().all(Option::is_none) {
            return Err(LocalError::Tokenizer("the vocabulary is not byte-level".into()));
        }
        let mut merges = HashMap::with_capacity(tables.merges.len());
        for (rank, merge) in tables.merges.iter().enumerate() {
            let Some((left, right)) = merge.split_once(' ') else {
                continue;
            };
            let (Some(&l), Some(&r), Some(&m)) = (
                token_to_id.get(left),
                token_to_id.get(right),
                token_to_id.get(&format!("{left}{right}")),
            ) else {
                continue;
            };
            merges.entry((l, r)).or_insert((rank as u32, m));
        }
        let special = (0..tables.tokens.len())
            .map(|i| {
                matches!(
                    tables.token_types.get(i).copied(),
                    Some(TOKEN_TYPE_CONTROL | TOKEN_TYPE_USER_DEFINED)
                )
            })
            .collect();
        let pre = pre_tokenizer(&tables.pre)?;
        Ok(Tokenizer {
            tokens: tables.tokens,
            token_to_id,
            merges,
            byte_tokens,
            char_to_byte,
            special,
            pre,
            bos: tables.bos,
            eos: tables.eos,
        })
    }

    /// The vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The id of a token given by its exact vocabulary string (`<|im_end|>`).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.token_to_id.get(token).copied()
    }

    /// The vocabulary string of `id`.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// The beginning-of-sequence id, if the model has one.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// The end-of-sequence id, if the model has one.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// True for control and user-defined tokens.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// Encode plain text. Special-token strings in `text` are NOT interpreted: a
    /// transcript that mentions `<|im_end|>` cannot end the prompt early.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut cache: HashMap<&str, Vec<u32>> = HashMap::new();
        for word in self.pre_tokenize(text) {
            if let Some(ids) = cache.get(word) {
                out.extend_from_slice(ids);
                continue;
            }
            let ids = self.bpe(word);
            out.extend_from_slice(&ids);
            cache.insert(word, ids);
        }
        out
    }

    /// Decode ids to text; special tokens are left out when `skip_special`.
    /// Invalid UTF-8 (a token sequence cut inside a character) is replaced, not an error.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> String {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let Some(token) = self.token(id) else { continue };
            if self.is_special(id) {
                if !skip_special {
                    bytes.extend_from_slice(token.as_bytes());
                }
                continue;
            }
            for ch in token.chars() {
                match self.char_to_byte.get(&ch) {
                    Some(b) => bytes.push(*b),
                    None => {
                        let mut buf = [0u8; 4];
                        bytes.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Split text into pre-tokens: each regex in turn splits every fragment into its
    /// matches and the gaps between them (both kept), as llama.cpp and `tokenizers` do.
    fn pre_tokenize<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut fragments = vec![text];
        for regex in &self.pre {
            let mut next = Vec::with_capacity(fragments.len() * 2);
            for fragment in fragments {
                let mut last = 0;
                for found in regex.find_iter(fragment) {
                    // A regex error (backtrack limit) leaves the rest as one fragment.
                    let Ok(m) = found else { break };
                    if m.start() > last {
                        next.push(&fragment[last..m.start()]);
                    }
                    if m.end() > m.start() {
                        next.push(m.as_str());
                    }
                    last = m.end();
                }
                if last < fragment.len() {
                    next.push(&fragment[last..]);
                }
            }
            fragments = next;
        }
        fragments
    }

    /// Byte-level BPE of one pre-token: start from single bytes and apply the
    /// lowest-ranked merge until none applies.
    fn bpe(&self, word: &str) -> Vec<u32> {
        // Merging is quadratic in the pre-token's length; a pathological one (a long
        // run of punctuation) is cut into pieces first.
        if word.len() > MAX_BPE_BYTES {
            let mut out = Vec::new();
            for piece in word.as_bytes().chunks(MAX_BPE_BYTES) {
                out.extend(self.bpe_bytes(piece));
            }
            return out;
        }
        self.bpe_bytes(word.as_bytes())
    }

    fn bpe_bytes(&self, word: &[u8]) -> Vec<u32> {
        let mut parts: Vec<u32> = word.iter().filter_map(|&b| self.byte_tokens[b as usize]).collect();
        loop {
            let mut best: Option<(u32, usize, u32)> = None;
            for i in 0..parts.len().saturating_sub(1) {
                if let Some(&(rank, merged)) = self.merges.get(&(parts[i], parts[i + 1]))
                    && best.is_none_or(|(r, _, _)| rank < r)
                {
                    best = Some((rank, i, merged));
                }
            }
            let Some((_, i, merged)) = best else { break };
            parts[i] = merged;
            parts.remove(i + 1);
        }
        parts
    }
}

/// The pre-tokenizer regexes for a `tokenizer.ggml.pre` value (as in llama.cpp).
fn pre_tokenizer(pre: &str) -> Result<Vec<Regex>, LocalError> {
    let patterns: &[&str] = match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" | "smaug-bpe" => &[LLAMA3_PATTERN],
        "qwen2" | "deepseek-r1-qwen" | "stablelm2" | "hunyuan" | "megrez" => &[QWEN2_PATTERN],
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b" => {
            &[r"\p{N}", GPT2_PATTERN]
        }
        "gpt-2" | "gpt2" | "default" | "" => &[GPT2_PATTERN],
        other => {
            tracing::warn!(pre = other, "unknown pre-tokenizer; using GPT-2's");
            &[GPT2_PATTERN]
        }
    };
    patterns
        .iter()
        .map(|p| Regex::new(p).map_err(|e| LocalError::Tokenizer(format!("pre-tokenizer regex: {e}"))))
        .collect()
}

/// GPT-2's reversible byte → printable char mapping.
fn byte_to_char_table() -> [char; 256] {
    let mut table = ['\0'; 256];
    let printable = |b: u32| (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
    let mut next = 256u32;
    for b in 0..256u32 {
        let code = if printable(b) {
            b
        } else {
            next += 1;
            next - 1
        };
        table[b as usize] = char::from_u32(code).unwrap_or('\u{fffd}');
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Tokenizer {
        let table = byte_to_char_table();
        let mut tokens: Vec<String> = vec!["<|im_start|>".into(), "<|im_end|>".into()];
        tokens.extend(table.iter().map(|c| c.to_string()));
        tokens.extend(["he".into(), "ll".into(), "hell".into(), "hello".into(), "Ġw".into()]);
        let mut token_types = vec![3, 3];
        token_types.resize(tokens.len(), 1);
        Tokenizer::from_tables(TokenizerTables {
            model: "gpt2".into(),
            pre: "smollm".into(),
            tokens,
            token_types,
            merges: vec![
                "h e".into(),
                "l l".into(),
                "he ll".into(),
                "hell o".into(),
                "Ġ w".into(),
            ],
            bos: Some(0),
            eos: Some(1),
        })
        .expect("tiny tokenizer")
    }

    #[test]
    fn merges_apply_in_rank_order_and_round_trip() {
        let tok = tiny();
        let ids = tok.encode("hello world 42 <|im_end|> é");
        assert_eq!(tok.token(ids[0]), Some("hello"));
        assert_eq!(tok.token(ids[1]), Some("Ġw"));
        assert!(
            !ids.iter().any(|&id| tok.is_special(id)),
            "special strings stay plain text"
        );
        assert_eq!(tok.decode(&ids, true), "hello world 42 <|im_end|> é");
    }

    #[test]
    fn specials_are_skipped_on_request() {
        let tok = tiny();
        let mut ids = vec![0];
        ids.extend(tok.encode("hi"));
        assert_eq!(tok.decode(&ids, true), "hi");
        assert_eq!(tok.decode(&ids, false), "<|im_start|>hi");
    }

    #[test]
    fn byte_table_is_a_bijection() {
        let table = byte_to_char_table();
        let set: std::collections::HashSet<char> = table.iter().copied().collect();
        assert_eq!(set.len(), 256);
        assert_eq!(table[b' ' as usize], 'Ġ');
        assert_eq!(table[b'\n' as usize], 'Ċ');
    }
}
