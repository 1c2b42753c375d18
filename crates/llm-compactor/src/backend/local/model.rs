//! The transformer itself: Llama / Qwen 2 decoder blocks on dequantized f32 weights.
//!
//! candle's quantized matmul kernels are slow on CPUs without AVX enabled at compile
//! time (a portable build cannot assume it), while its f32 GEMM is fast everywhere.
//! For the small models this backend is meant for, dequantizing once at load time
//! (135M parameters → ~540 MB of f32) measured several times faster than running the
//! quantized kernels, so that is what happens here. The query/key/value and gate/up
//! projections are fused into one matrix each, weights are stored pre-transposed, and
//! the key/value cache is preallocated, so a generated token costs few, large ops.

use candle_core::quantized::gguf_file::Content;
use candle_core::{D, DType, Device, Tensor};

use super::error::LocalError;
use super::gguf::{Architecture, Hyperparams};

/// One decoder block's weights (matrices stored as `(in, out)`).
#[derive(Debug)]
struct Block {
    attn_norm: Tensor,
    qkv: Tensor,
    qkv_bias: Option<Tensor>,
    out: Tensor,
    ffn_norm: Tensor,
    gate_up: Tensor,
    down: Tensor,
}

/// A loaded model: immutable, shared by concurrent requests.
#[derive(Debug)]
pub(crate) struct Weights {
    pub(crate) hyper: Hyperparams,
    embed: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    /// `(hidden, vocab)`.
    output: Tensor,
    cos: Tensor,
    sin: Tensor,
    /// Positions the RoPE tables cover.
    pub(crate) max_positions: usize,
}

impl Weights {
    /// Read and dequantize every tensor. `progress(done, total)` is called per tensor.
    pub(crate) fn load<R: std::io::Read + std::io::Seek>(
        content: &Content,
        reader: &mut R,
        hyper: Hyperparams,
        max_positions: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Weights, LocalError> {
        let device = Device::Cpu;
        let total = content.tensor_infos.len();
        let mut done = 0usize;
        let mut get = |name: &str| -> Result<Tensor, LocalError> {
            let q = content
                .tensor(reader, name, &device)
                .map_err(|e| LocalError::Format(format!("tensor {name}: {e}")))?;
            let t = q.dequantize(&device)?.to_dtype(DType::F32)?;
            done += 1;
            progress(done.min(total), total);
            Ok(t)
        };
        let has = |name: &str| content.tensor_infos.contains_key(name);
        let expect = |t: &Tensor, name: &str, dims: &[usize]| -> Result<(), LocalError> {
            if t.dims() == dims {
                Ok(())
            } else {
                Err(LocalError::Format(format!(
                    "tensor {name} has shape {:?}, expected {dims:?}",
                    t.dims()
                )))
            }
        };
        let h = &hyper;
        let (q_out, kv_out) = (h.heads * h.head_dim, h.kv_heads * h.head_dim);

        let embed = get("token_embd.weight")?;
        let vocab = embed.dim(0)?;
        expect(&embed, "token_embd.weight", &[vocab, h.hidden])?;
        let mut blocks = Vec::with_capacity(h.layers);
        for i in 0..h.layers {
            let name = |s: &str| format!("blk.{i}.{s}");
            let wq = get(&name("attn_q.weight"))?;
            let wk = get(&name("attn_k.weight"))?;
            let wv = get(&name("attn_v.weight"))?;
            expect(&wq, &name("attn_q.weight"), &[q_out, h.hidden])?;
            expect(&wk, &name("attn_k.weight"), &[kv_out, h.hidden])?;
            expect(&wv, &name("attn_v.weight"), &[kv_out, h.hidden])?;
            let qkv = Tensor::cat(&[&wq, &wk, &wv], 0)?.t()?.contiguous()?;
            let qkv_bias = if h.architecture == Architecture::Qwen2 && has(&name("attn_q.bias")) {
                let (bq, bk, bv) = (
                    get(&name("attn_q.bias"))?,
                    get(&name("attn_k.bias"))?,
                    get(&name("attn_v.bias"))?,
                );
                Some(Tensor::cat(&[&bq, &bk, &bv], 0)?)
            } else {
                None
            };
            let out = get(&name("attn_output.weight"))?;
            expect(&out, &name("attn_output.weight"), &[h.hidden, q_out])?;
            let gate = get(&name("ffn_gate.weight"))?;
            let up = get(&name("ffn_up.weight"))?;
            let down = get(&name("ffn_down.weight"))?;
            expect(&gate, &name("ffn_gate.weight"), &[h.feed_forward, h.hidden])?;
            expect(&up, &name("ffn_up.weight"), &[h.feed_forward, h.hidden])?;
            expect(&down, &name("ffn_down.weight"), &[h.hidden, h.feed_forward])?;
            blocks.push(Block {
                attn_norm: get(&name("attn_norm.weight"))?,
                qkv,
                qkv_bias,
                out: out.t()?.contiguous()?,
                ffn_norm: get(&name("ffn_norm.weight"))?,
                gate_up: Tensor::cat(&[&gate, &up], 0)?.t()?.contiguous()?,
                down: down.t()?.contiguous()?,
            });
        }
        let norm = get("output_norm.weight")?;
        let output = if has("output.weight") {
            get("output.weight")?
        } else {
            embed.clone()
        };
        expect(&output, "output.weight", &[vocab, h.hidden])?;
        let output = output.t()?.contiguous()?;
        // Llama 3.x stores its RoPE frequency scaling as a tensor.
        let freq_factors = if has("rope_freqs.weight") {
            Some(get("rope_freqs.weight")?.to_vec1::<f32>()?)
        } else {
            None
        };
        let (cos, sin) = rope_tables(h, max_positions, freq_factors.as_deref())?;
        Ok(Weights {
            hyper,
            embed,
            blocks,
            norm,
            output,
            cos,
            sin,
            max_positions,
        })
    }
}

fn rope_tables(h: &Hyperparams, positions: usize, factors: Option<&[f32]>) -> Result<(Tensor, Tensor), LocalError> {
    let half = h.head_dim / 2;
    let inv_freq: Vec<f32> = (0..half)
        .map(|i| {
            let f = 1.0 / h.rope_base.powf(2.0 * i as f64 / h.head_dim as f64);
            let scale = factors.and_then(|f| f.get(i)).copied().unwrap_or(1.0) as f64;
            (f / scale) as f32
        })
        .collect();
    let mut angles = Vec::with_capacity(positions * half);
    for p in 0..positions {
        angles.extend(inv_freq.iter().map(|f| p as f32 * f));
    }
    let angles = Tensor::from_vec(angles, (positions, half), &Device::Cpu)?;
    Ok((angles.cos()?, angles.sin()?))
}

/// One request's running state: the key/value cache over the weights.
pub(crate) struct Session<'w> {
    weights: &'w Weights,
    /// Per block: `(keys, values)`, each `(kv_heads, capacity, head_dim)`.
    cache: Vec<(Tensor, Tensor)>,
    capacity: usize,
    len: usize,
}

impl<'w> Session<'w> {
    /// A fresh session with room for `capacity` positions.
    pub(crate) fn new(weights: &'w Weights, capacity: usize) -> Result<Self, LocalError> {
        let h = &weights.hyper;
        let capacity = capacity.min(weights.max_positions);
        let mut cache = Vec::with_capacity(h.layers);
        for _ in 0..h.layers {
            let shape = (h.kv_heads, capacity, h.head_dim);
            cache.push((
                Tensor::zeros(shape, DType::F32, &Device::Cpu)?,
                Tensor::zeros(shape, DType::F32, &Device::Cpu)?,
            ));
        }
        Ok(Session {
            weights,
            cache,
            capacity,
            len: 0,
        })
    }

    /// Positions still free.
    pub(crate) fn room(&self) -> usize {
        self.capacity - self.len
    }

    /// Feed `ids` (a prompt chunk or one generated token) and return the logits of
    /// the last position as a vector.
    pub(crate) fn forward(&mut self, ids: &[u32]) -> Result<Vec<f32>, LocalError> {
        let seq = ids.len();
        if seq == 0 || seq > self.room() {
            return Err(LocalError::PromptTooLong {
                prompt: self.len + seq,
                context: self.capacity,
            });
        }
        let w = self.weights;
        let h = &w.hyper;
        let offset = self.len;
        let total = offset + seq;
        let ids_t = Tensor::new(ids, &Device::Cpu)?;
        let mut x = w.embed.index_select(&ids_t, 0)?;
        let cos = w.cos.narrow(0, offset, seq)?;
        let sin = w.sin.narrow(0, offset, seq)?;
        let mask = if seq > 1 { Some(causal_mask(seq, offset)?) } else { None };
        let group = h.heads / h.kv_heads;
        let scale = 1.0 / (h.head_dim as f64).sqrt();
        let (q_w, kv_w) = (h.heads * h.head_dim, h.kv_heads * h.head_dim);
        let eps = h.rms_eps as f32;

        for (block, (k_cache, v_cache)) in w.blocks.iter().zip(self.cache.iter_mut()) {
            let xn = candle_nn::ops::rms_norm(&x, &block.attn_norm, eps)?;
            let mut qkv = xn.matmul(&block.qkv)?;
            if let Some(bias) = &block.qkv_bias {
                qkv = qkv.broadcast_add(bias)?;
            }
            let heads = |t: Tensor, n: usize| -> candle_core::Result<Tensor> {
                t.reshape((seq, n, h.head_dim))?
                    .transpose(0, 1)?
                    .contiguous()?
                    .unsqueeze(0)
            };
            let q = heads(qkv.narrow(1, 0, q_w)?, h.heads)?;
            let k = heads(qkv.narrow(1, q_w, kv_w)?, h.kv_heads)?;
            let v = heads(qkv.narrow(1, q_w + kv_w, kv_w)?, h.kv_heads)?;
            let (q, k) = match h.architecture {
                Architecture::Llama => (
                    candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?,
                ),
                Architecture::Qwen2 => (
                    candle_nn::rotary_emb::rope(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope(&k, &cos, &sin)?,
                ),
            };
            k_cache.slice_set(&k.squeeze(0)?, 1, offset)?;
            v_cache.slice_set(&v.squeeze(0)?, 1, offset)?;
            let keys = k_cache.narrow(1, 0, total)?;
            let values = v_cache.narrow(1, 0, total)?;
            // Grouped-query attention without copying keys: the `group` query heads
            // that share a kv head are stacked along the sequence axis.
            let q = q.reshape((h.kv_heads, group * seq, h.head_dim))?;
            let mut att = (q.matmul(&keys.t()?)? * scale)?;
            if let Some(mask) = &mask {
                att = att
                    .reshape((h.kv_heads, group, seq, total))?
                    .broadcast_add(mask)?
                    .reshape((h.kv_heads, group * seq, total))?;
            }
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att
                .matmul(&values)?
                .reshape((h.heads, seq, h.head_dim))?
                .transpose(0, 1)?
                .reshape((seq, q_w))?;
            x = (x + y.matmul(&block.out)?)?;
            let xn = candle_nn::ops::rms_norm(&x, &block.ffn_norm, eps)?;
            let gate_up = xn.matmul(&block.gate_up)?;
            let gate = gate_up.narrow(D::Minus1, 0, h.feed_forward)?;
            let up = gate_up.narrow(D::Minus1, h.feed_forward, h.feed_forward)?;
            let act = (candle_nn::ops::silu(&gate)? * up)?;
            x = (x + act.matmul(&block.down)?)?;
        }
        self.len = total;
        let last = x.narrow(0, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &w.norm, eps)?;
        let logits = last.matmul(&w.output)?.squeeze(0)?;
        Ok(logits.to_vec1::<f32>()?)
    }
}

/// `(seq, offset + seq)`: 0 where position `offset + i` may see `j`, −∞ after it.
fn causal_mask(seq: usize, offset: usize) -> Result<Tensor, LocalError> {
    let total = offset + seq;
    let mut mask = Vec::with_capacity(seq * total);
    for i in 0..seq {
        mask.extend((0..total).map(|j| if j > offset + i { f32::NEG_INFINITY } else { 0.0 }));
    }
    Ok(Tensor::from_vec(mask, (seq, total), &Device::Cpu)?)
}
