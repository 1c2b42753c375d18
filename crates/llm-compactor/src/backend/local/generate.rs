//! The decoding loop: chunked prefill, then greedy decoding with a mild repeat
//! penalty, checking for cancellation between every step.
//!
//! Greedy decoding keeps summaries deterministic (same transcript, same model, same
//! summary), which the compactor's replayable sessions rely on. Small models greedily
//! decoded tend to loop; a penalty of ~1.1 over the last 64 generated tokens breaks
//! loops without stopping the model from repeating the file names and identifiers a
//! summary must carry (the prompt is not penalised).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::error::LocalError;
use super::model::{Session, Weights};
use crate::summarize::StopReason;

/// What the local backend is doing, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "kebab-case")]
pub enum LocalProgress {
    /// Reading and dequantizing the model: `done` of `total` tensors.
    Loading {
        /// Tensors loaded.
        done: usize,
        /// Tensors in the file.
        total: usize,
    },
    /// Reading the prompt: `done` of `total` tokens processed.
    Prompt {
        /// Prompt tokens processed.
        done: usize,
        /// Prompt tokens in all.
        total: usize,
    },
    /// Writing: `done` tokens generated, at most `max`.
    Generating {
        /// Tokens generated so far.
        done: usize,
        /// The output budget.
        max: usize,
    },
    /// The request finished (successfully or not).
    Finished,
}

/// Sampling and batching knobs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecodeParams {
    /// Logits of recently generated tokens are divided (or, when negative, multiplied)
    /// by this; 1.0 disables the penalty.
    pub repeat_penalty: f32,
    /// How many of the most recent generated tokens the penalty looks at.
    pub repeat_last_n: usize,
    /// Prompt tokens fed per forward pass (bounds memory and cancellation latency).
    pub prefill_chunk: usize,
}

impl Default for DecodeParams {
    fn default() -> Self {
        DecodeParams {
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            prefill_chunk: 256,
        }
    }
}

/// The result of one generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Generation {
    /// Prompt tokens processed.
    pub prompt_tokens: usize,
    /// The generated tokens (the stop token excluded).
    pub tokens: Vec<u32>,
    /// Complete on a stop token; Truncated at the budget or the end of the context.
    pub stop: StopReason,
}

/// Run the model on `prompt` and generate at most `max_new` tokens, ending early on
/// any of `stop_ids`.
pub(crate) fn decode(
    weights: &Weights,
    prompt: &[u32],
    stop_ids: &[u32],
    max_new: usize,
    params: DecodeParams,
    cancel: &CancellationToken,
    progress: &dyn Fn(LocalProgress),
) -> Result<Generation, LocalError> {
    let context = weights.max_positions;
    if prompt.is_empty() || prompt.len() >= context {
        return Err(LocalError::PromptTooLong {
            prompt: prompt.len(),
            context,
        });
    }
    let max_new = max_new.min(context - prompt.len());
    let mut session = Session::new(weights, prompt.len() + max_new)?;
    let chunk = params.prefill_chunk.max(1);
    let mut logits = Vec::new();
    let mut done = 0;
    for piece in prompt.chunks(chunk) {
        if cancel.is_cancelled() {
            return Err(LocalError::Cancelled);
        }
        logits = session.forward(piece)?;
        done += piece.len();
        progress(LocalProgress::Prompt {
            done,
            total: prompt.len(),
        });
    }
    let mut tokens: Vec<u32> = Vec::new();
    loop {
        if cancel.is_cancelled() {
            return Err(LocalError::Cancelled);
        }
        let recent = &tokens[tokens.len().saturating_sub(params.repeat_last_n)..];
        apply_repeat_penalty(&mut logits, params.repeat_penalty, recent);
        let next = argmax(&logits).ok_or_else(|| LocalError::Inference("empty logits".into()))?;
        if stop_ids.contains(&next) {
            return Ok(Generation {
                prompt_tokens: prompt.len(),
                tokens,
                stop: StopReason::Complete,
            });
        }
        tokens.push(next);
        progress(LocalProgress::Generating {
            done: tokens.len(),
            max: max_new,
        });
        if tokens.len() >= max_new || session.room() == 0 {
            return Ok(Generation {
                prompt_tokens: prompt.len(),
                tokens,
                stop: StopReason::Truncated,
            });
        }
        logits = session.forward(&[next])?;
    }
}

/// The index of the largest logit (the first one on ties; NaN never wins).
pub(crate) fn argmax(logits: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in logits.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i as u32)
}

/// Make recently generated tokens less likely, each token once however often it
/// occurred (the usual CTRL-style penalty).
pub(crate) fn apply_repeat_penalty(logits: &mut [f32], penalty: f32, recent: &[u32]) {
    if penalty == 1.0 {
        return;
    }
    let seen: HashSet<u32> = recent.iter().copied().collect();
    for id in seen {
        if let Some(v) = logits.get_mut(id as usize) {
            *v = if *v >= 0.0 { *v / penalty } else { *v * penalty };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_prefers_the_first_maximum_and_skips_nan() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, f32::NAN]), Some(1));
        assert_eq!(argmax(&[f32::NAN]), None);
        assert_eq!(argmax(&[]), None);
    }

    #[test]
    fn penalty_pushes_logits_towards_less_likely() {
        let mut logits = vec![2.0, -2.0, 5.0];
        apply_repeat_penalty(&mut logits, 2.0, &[0, 1, 0, 7]);
        assert_eq!(logits, vec![1.0, -4.0, 5.0]);
    }
}
