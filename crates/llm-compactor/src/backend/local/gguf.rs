//! Reading what a GGUF file says about itself: architecture, shape, tokenizer tables
//! and chat template.
//!
//! Only the header is read here (fast, a few megabytes for the vocabulary); the
//! weights are read later, on the first request, by [`super::model`].

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use serde::{Deserialize, Serialize};

use super::error::LocalError;
use super::tokenizer::TokenizerTables;

/// The transformer families this backend implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// Llama (SmolLM2, Llama 3.x, Mistral-style): interleaved RoPE, no attention bias.
    Llama,
    /// Qwen 2 / 2.5: NeoX RoPE, bias on the query/key/value projections.
    Qwen2,
}

impl Architecture {
    /// The `general.architecture` key prefix.
    pub fn key(self) -> &'static str {
        match self {
            Architecture::Llama => "llama",
            Architecture::Qwen2 => "qwen2",
        }
    }
}

/// A model's shape, from its GGUF metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Hyperparams {
    /// The architecture.
    pub architecture: Architecture,
    /// Transformer blocks.
    pub layers: usize,
    /// Width of the residual stream.
    pub hidden: usize,
    /// Width of the feed-forward layer.
    pub feed_forward: usize,
    /// Attention (query) heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention when fewer than `heads`).
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// The context length the model was trained for.
    pub context_length: usize,
    /// RMSNorm epsilon.
    pub rms_eps: f64,
    /// RoPE base frequency.
    pub rope_base: f64,
}

/// What the header of a GGUF file says.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GgufHeader {
    /// `general.name`, when present.
    pub name: Option<String>,
    /// The model's shape.
    pub hyper: Hyperparams,
    /// The tokenizer tables.
    pub tokenizer: TokenizerTables,
    /// `tokenizer.chat_template`, when present.
    pub chat_template: Option<String>,
    /// `tokenizer.ggml.add_bos_token` (default false).
    pub add_bos: bool,
}

/// Open a GGUF file and parse its header (metadata and tensor directory).
pub(crate) fn read_content(path: &Path) -> Result<(Content, BufReader<File>), LocalError> {
    let file = File::open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LocalError::ModelMissing { path: path.to_owned() }
        } else {
            LocalError::Io {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    let mut reader = BufReader::new(file);
    let content = Content::read(&mut reader).map_err(|e| LocalError::Format(e.to_string()))?;
    Ok((content, reader))
}

/// Read a GGUF file's header.
pub fn read_header(path: &Path) -> Result<GgufHeader, LocalError> {
    let (content, _) = read_content(path)?;
    header_from_content(&content)
}

pub(crate) fn header_from_content(content: &Content) -> Result<GgufHeader, LocalError> {
    let md = Metadata(content);
    let arch_name = md.string("general.architecture")?;
    let architecture = match arch_name.as_str() {
        "llama" => Architecture::Llama,
        "qwen2" => Architecture::Qwen2,
        other => return Err(LocalError::UnsupportedArchitecture(other.to_owned())),
    };
    let k = |suffix: &str| format!("{}.{suffix}", architecture.key());
    let heads = md.usize(&k("attention.head_count"))?;
    let hidden = md.usize(&k("embedding_length"))?;
    if heads == 0 || hidden % heads != 0 {
        return Err(LocalError::Format(format!(
            "{hidden} is not divisible into {heads} heads"
        )));
    }
    let kv_heads = md.opt_usize(&k("attention.head_count_kv"))?.unwrap_or(heads);
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(LocalError::Format(format!(
            "{heads} heads cannot share {kv_heads} kv heads"
        )));
    }
    let head_dim = md.opt_usize(&k("attention.key_length"))?.unwrap_or(hidden / heads);
    if head_dim % 2 != 0 {
        return Err(LocalError::Format(format!("odd head width {head_dim}")));
    }
    let hyper = Hyperparams {
        architecture,
        layers: md.usize(&k("block_count"))?,
        hidden,
        feed_forward: md.usize(&k("feed_forward_length"))?,
        heads,
        kv_heads,
        head_dim,
        context_length: md.opt_usize(&k("context_length"))?.unwrap_or(2048),
        rms_eps: md.opt_f64(&k("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-6),
        rope_base: md.opt_f64(&k("rope.freq_base"))?.unwrap_or(10_000.0),
    };
    let tokenizer = TokenizerTables {
        model: md.string("tokenizer.ggml.model")?,
        pre: md.opt_string("tokenizer.ggml.pre")?.unwrap_or_default(),
        tokens: md.strings("tokenizer.ggml.tokens")?,
        token_types: md.opt_ints("tokenizer.ggml.token_type")?.unwrap_or_default(),
        merges: md.opt_strings("tokenizer.ggml.merges")?.unwrap_or_default(),
        bos: md.opt_usize("tokenizer.ggml.bos_token_id")?.map(|v| v as u32),
        eos: md.opt_usize("tokenizer.ggml.eos_token_id")?.map(|v| v as u32),
    };
    Ok(GgufHeader {
        name: md.opt_string("general.name")?,
        hyper,
        tokenizer,
        chat_template: md.opt_string("tokenizer.chat_template")?,
        add_bos: md.opt_bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
    })
}

/// Lenient typed access to GGUF metadata (integers may be stored in any width).
struct Metadata<'a>(&'a Content);

impl Metadata<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.metadata.get(key)
    }

    fn missing(key: &str) -> LocalError {
        LocalError::Format(format!("metadata key {key} is missing"))
    }

    fn wrong(key: &str, what: &str) -> LocalError {
        LocalError::Format(format!("metadata key {key} is not {what}"))
    }

    fn opt_usize(&self, key: &str) -> Result<Option<usize>, LocalError> {
        let Some(value) = self.get(key) else { return Ok(None) };
        as_i64(value)
            .and_then(|v| usize::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| Self::wrong(key, "a non-negative integer"))
    }

    fn usize(&self, key: &str) -> Result<usize, LocalError> {
        self.opt_usize(key)?.ok_or_else(|| Self::missing(key))
    }

    fn opt_f64(&self, key: &str) -> Result<Option<f64>, LocalError> {
        let Some(value) = self.get(key) else { return Ok(None) };
        let v = match value {
            Value::F32(v) => Some(f64::from(*v)),
            Value::F64(v) => Some(*v),
            other => as_i64(other).map(|v| v as f64),
        };
        v.map(Some).ok_or_else(|| Self::wrong(key, "a number"))
    }

    fn opt_bool(&self, key: &str) -> Option<bool> {
        match self.get(key) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, LocalError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Self::wrong(key, "a string")),
        }
    }

    fn string(&self, key: &str) -> Result<String, LocalError> {
        self.opt_string(key)?.ok_or_else(|| Self::missing(key))
    }

    fn opt_strings(&self, key: &str) -> Result<Option<Vec<String>>, LocalError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(Self::wrong(key, "an array of strings")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(Self::wrong(key, "an array")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, LocalError> {
        self.opt_strings(key)?.ok_or_else(|| Self::missing(key))
    }

    fn opt_ints(&self, key: &str) -> Result<Option<Vec<i32>>, LocalError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    as_i64(v)
                        .and_then(|v| i32::try_from(v).ok())
                        .ok_or_else(|| Self::wrong(key, "an array of integers"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(Self::wrong(key, "an array")),
        }
    }
}

fn as_i64(value: &Value) -> Option<i64> {
    Some(match value {
        Value::U8(v) => i64::from(*v),
        Value::I8(v) => i64::from(*v),
        Value::U16(v) => i64::from(*v),
        Value::I16(v) => i64::from(*v),
        Value::U32(v) => i64::from(*v),
        Value::I32(v) => i64::from(*v),
        Value::U64(v) => i64::try_from(*v).ok()?,
        Value::I64(v) => *v,
        _ => return None,
    })
}
