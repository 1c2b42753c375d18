//! Turning (instruction, transcript) into the model's own chat format.
//!
//! GGUF files carry their chat template as Jinja (`tokenizer.chat_template`). A Jinja
//! engine would be a heavy dependency for two fixed message shapes, so the template is
//! *inspected* to pick one of the formats rendered here directly. The rendering is
//! token-exact: special tokens are emitted by id and everything else is encoded as
//! plain text, so a transcript that contains `<|im_end|>` cannot close its own turn.

use serde::{Deserialize, Serialize};

use super::error::LocalError;
use super::tokenizer::Tokenizer;

/// A chat format this backend renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChatFormat {
    /// `<|im_start|>role\n...<|im_end|>\n` (SmolLM2, Qwen 2.5).
    ChatMl,
    /// `<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>` (Llama 3.x).
    Llama3,
}

/// One piece of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// A special token, by its vocabulary string.
    Special(&'static str),
    /// Plain text, encoded with BPE.
    Text(String),
}

impl ChatFormat {
    /// Pick the format from the template string (falling back on the vocabulary when the
    /// file has no template).
    pub fn detect(template: Option<&str>, tokenizer: &Tokenizer) -> Result<ChatFormat, LocalError> {
        let has = |token: &str| tokenizer.token_id(token).is_some();
        match template {
            Some(t) if t.contains("<|im_start|>") => Ok(ChatFormat::ChatMl),
            Some(t) if t.contains("<|start_header_id|>") => Ok(ChatFormat::Llama3),
            Some(t) => Err(LocalError::Template(format!(
                "unrecognised chat template (supported: ChatML, Llama 3): {}",
                t.chars().take(120).collect::<String>()
            ))),
            None if has("<|im_start|>") && has("<|im_end|>") => Ok(ChatFormat::ChatMl),
            None if has("<|start_header_id|>") && has("<|eot_id|>") => Ok(ChatFormat::Llama3),
            None => Err(LocalError::Template(
                "the model has no chat template and no ChatML or Llama 3 tokens".into(),
            )),
        }
    }

    /// The prompt for one system + user exchange, ending where the assistant speaks.
    pub fn pieces(self, system: &str, user: &str) -> Vec<Piece> {
        let text = |s: String| Piece::Text(s);
        match self {
            ChatFormat::ChatMl => vec![
                Piece::Special("<|im_start|>"),
                text(format!("system\n{system}")),
                Piece::Special("<|im_end|>"),
                text("\n".into()),
                Piece::Special("<|im_start|>"),
                text(format!("user\n{user}")),
                Piece::Special("<|im_end|>"),
                text("\n".into()),
                Piece::Special("<|im_start|>"),
                text("assistant\n".into()),
            ],
            ChatFormat::Llama3 => vec![
                Piece::Special("<|begin_of_text|>"),
                Piece::Special("<|start_header_id|>"),
                text("system".into()),
                Piece::Special("<|end_header_id|>"),
                text(format!("\n\n{system}")),
                Piece::Special("<|eot_id|>"),
                Piece::Special("<|start_header_id|>"),
                text("user".into()),
                Piece::Special("<|end_header_id|>"),
                text(format!("\n\n{user}")),
                Piece::Special("<|eot_id|>"),
                Piece::Special("<|start_header_id|>"),
                text("assistant".into()),
                Piece::Special("<|end_header_id|>"),
                text("\n\n".into()),
            ],
        }
    }

    /// [`ChatFormat::pieces`] with the assistant's answer already begun with `prefill`
    /// (nothing added when it is empty): the model continues from there.
    pub fn pieces_prefilled(self, system: &str, user: &str, prefill: &str) -> Vec<Piece> {
        let mut pieces = self.pieces(system, user);
        if !prefill.is_empty() {
            pieces.push(Piece::Text(prefill.to_owned()));
        }
        pieces
    }

    /// The prompt as a string (special tokens written out), for logs and tests.
    pub fn render_text(self, system: &str, user: &str) -> String {
        self.render_text_prefilled(system, user, "")
    }

    /// [`ChatFormat::render_text`] with the answer begun with `prefill`.
    ///
    /// ```
    /// use llm_compactor::backend::local::ChatFormat;
    /// let text = ChatFormat::ChatMl.render_text_prefilled("S", "U", "## Goals\n");
    /// assert!(text.ends_with("<|im_start|>assistant\n## Goals\n"));
    /// assert_eq!(ChatFormat::ChatMl.render_text_prefilled("S", "U", ""), ChatFormat::ChatMl.render_text("S", "U"));
    /// ```
    pub fn render_text_prefilled(self, system: &str, user: &str, prefill: &str) -> String {
        self.pieces_prefilled(system, user, prefill)
            .into_iter()
            .map(|p| match p {
                Piece::Special(s) => s.to_owned(),
                Piece::Text(t) => t,
            })
            .collect()
    }

    /// The prompt as token ids. `add_bos` prepends the model's BOS token when the
    /// format does not already start with one.
    pub fn encode(
        self,
        tokenizer: &Tokenizer,
        system: &str,
        user: &str,
        add_bos: bool,
    ) -> Result<Vec<u32>, LocalError> {
        self.encode_prefilled(tokenizer, system, user, "", add_bos)
    }

    /// [`ChatFormat::encode`] with the answer begun with `prefill` (encoded as plain
    /// text, like the transcript).
    pub fn encode_prefilled(
        self,
        tokenizer: &Tokenizer,
        system: &str,
        user: &str,
        prefill: &str,
        add_bos: bool,
    ) -> Result<Vec<u32>, LocalError> {
        let mut ids = Vec::new();
        if add_bos
            && self == ChatFormat::ChatMl
            && let Some(bos) = tokenizer.bos()
        {
            ids.push(bos);
        }
        for piece in self.pieces_prefilled(system, user, prefill) {
            match piece {
                Piece::Special(s) => ids.push(
                    tokenizer
                        .token_id(s)
                        .ok_or_else(|| LocalError::Template(format!("the vocabulary lacks {s}")))?,
                ),
                Piece::Text(t) => ids.extend(tokenizer.encode(&t)),
            }
        }
        Ok(ids)
    }

    /// The ids that end the assistant's turn.
    pub fn stop_ids(self, tokenizer: &Tokenizer) -> Vec<u32> {
        let names: &[&str] = match self {
            ChatFormat::ChatMl => &["<|im_end|>", "<|endoftext|>"],
            ChatFormat::Llama3 => &["<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"],
        };
        let mut ids: Vec<u32> = names.iter().filter_map(|n| tokenizer.token_id(n)).collect();
        ids.extend(tokenizer.eos());
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}
