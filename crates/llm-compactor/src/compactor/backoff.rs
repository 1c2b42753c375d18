//! Waiting between summarizer attempts: how long, and how to wait.
//!
//! Backoff before attempt n+1 is `min(2^(n-1) + jitter, 30)` seconds with jitter in
//! `[0, 0.5)`, and a server's Retry-After as a floor (still capped). The jitter is drawn
//! from a hash of the conversation digest and the attempt number rather than from a
//! random source, so a pass is byte-reproducible. Waiting goes through [`Sleeper`] so
//! tests can run on paused time and a cancel ends any wait at once.

use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait before attempt `failures + 1`, after `failures` (>= 1) failed attempts.
///
/// ```
/// use std::time::Duration;
/// use llm_compactor::compactor::backoff_delay;
/// let d = backoff_delay(1, None, "seed");
/// assert!(d >= Duration::from_secs(1) && d < Duration::from_millis(1500));
/// assert_eq!(d, backoff_delay(1, None, "seed"));
/// assert!(backoff_delay(3, None, "seed") >= Duration::from_secs(4));
/// assert_eq!(backoff_delay(10, None, "seed"), Duration::from_secs(30));
/// assert_eq!(backoff_delay(1, Some(Duration::from_secs(20)), "seed"), Duration::from_secs(20));
/// assert_eq!(backoff_delay(1, Some(Duration::from_secs(90)), "seed"), Duration::from_secs(30));
/// ```
pub fn backoff_delay(failures: u32, retry_after: Option<Duration>, seed: &str) -> Duration {
    let exponent = failures.saturating_sub(1).min(16);
    let base = Duration::from_secs(1u64 << exponent);
    let digest = Sha256::digest(format!("{seed}\n{failures}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    // A fraction in [0, 1) with 53 bits, then scaled to [0, 0.5).
    let fraction = (u64::from_be_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
    let jitter = Duration::from_secs_f64(fraction * 0.5);
    let wait = (base + jitter).max(retry_after.unwrap_or_default());
    wait.min(MAX_BACKOFF)
}

/// How the compactor waits. Injectable so that tests and simulations control time.
#[async_trait]
pub trait Sleeper: Send + Sync {
    /// Waits `duration`, or less when `cancel` fires. Returns true when the whole wait
    /// elapsed, false when it was cancelled.
    async fn sleep(&self, duration: Duration, cancel: &CancellationToken) -> bool;
}

/// Waits on the tokio timer (which `#[tokio::test(start_paused = true)]` makes instant).
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleeper;

#[async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, duration: Duration, cancel: &CancellationToken) -> bool {
        tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            () = tokio::time::sleep(duration) => true,
        }
    }
}
