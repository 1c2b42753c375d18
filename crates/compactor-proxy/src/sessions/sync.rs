//! Sharing sessions between proxy instances: catching up on the store, and the lease.
//!
//! Why: behind a load balancer, consecutive rounds of one session reach different
//! instances. An instance's in-memory replayer is then only a cache of the store's log:
//! recording a round from a stale cache would record again the messages another
//! instance already recorded (new ids, so the store's idempotence cannot catch it) and
//! break replay. So every round first applies the events appended since this instance
//! last looked (one indexed read; none when it served the previous round itself), and
//! re-reads the rewrite when there were any.
//!
//! Compaction runs under the store's lease. The holder renews it while the pass runs
//! (a slow summarizer must not let the lease lapse while it still works); an instance
//! that finds it taken waits, a bounded poll of at most the lease's lifetime, because a
//! dead holder's lease has run out by then, and a live holder has finished.

use std::future::Future;
use std::time::Duration;

use llm_compactor::session::decode_line;
use llm_compactor::store::StoreError;
use tokio::time::Instant;

use super::SessionState;
use crate::config::ProxyConfig;
use crate::error::ProxyError;

/// The first pause of the lease poll; it doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(20);
/// The longest pause of the lease poll.
const MAX_POLL: Duration = Duration::from_millis(500);

fn corrupt(message: String) -> ProxyError {
    ProxyError::Store(StoreError::Backend(message))
}

impl SessionState {
    /// Brings this state up to date with the store: loads the session when this
    /// process has not met it (or dropped its state), else applies the events other
    /// instances appended since `seq`, and then reads the current rewrite.
    pub(super) async fn sync(&mut self, config: &ProxyConfig) -> Result<(), ProxyError> {
        if !self.loaded {
            return self.load(config).await;
        }
        let events = config.store.events(&self.store_key, self.seq).await?;
        if events.is_empty() {
            return Ok(());
        }
        for event in &events {
            let (id, record) = decode_line(&event.line)
                .map_err(|e| corrupt(format!("session {:?}, event {}: {e}", self.store_key, event.seq)))?;
            if event.kind == super::CONTINUED {
                // Another instance started the session over: follow it from the store.
                self.loaded = false;
                return self.load(config).await;
            }
            self.replayer
                .apply(&id, &record)
                .map_err(|e| corrupt(format!("session {:?}, event {}: {e}", self.store_key, event.seq)))?;
            self.seq = event.seq;
        }
        self.opened = true;
        let rewrite = config.store.rewrite(&self.store_key).await?;
        self.set_rewrite(rewrite)?;
        tracing::debug!(session = %self.key, seq = self.seq, applied = events.len(), "caught up with the store");
        Ok(())
    }
}

/// Polls for the session's lease until this instance holds it (true) or a lease
/// lifetime (and a little) has passed (false).
pub(super) async fn wait_for_lease(config: &ProxyConfig, store_key: &str) -> Result<bool, ProxyError> {
    let deadline = Instant::now() + config.lease_ttl + MAX_POLL;
    let mut pause = FIRST_POLL;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        if config
            .store
            .try_lease(store_key, &config.holder, config.lease_ttl)
            .await?
        {
            return Ok(true);
        }
        pause = (pause * 2).min(MAX_POLL);
    }
}

/// Runs `work` (a compaction under the lease) while renewing the lease every third of
/// its lifetime.
pub(super) async fn renewing<T>(config: &ProxyConfig, store_key: &str, work: impl Future<Output = T>) -> T {
    renewing_lease(config.store.as_ref(), &config.holder, config.lease_ttl, store_key, work).await
}

/// Runs `work` while renewing `holder`'s lease on `key` every third of `ttl`.
pub(super) async fn renewing_lease<T>(
    store: &dyn llm_compactor::store::SessionStore,
    holder: &str,
    ttl: Duration,
    key: &str,
    work: impl Future<Output = T>,
) -> T {
    let every = (ttl / 3).max(Duration::from_millis(10));
    let mut tick = tokio::time::interval_at(Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(work);
    loop {
        tokio::select! {
            result = &mut work => return result,
            _ = tick.tick() => {
                match store.try_lease(key, holder, ttl).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(session = key, "a lease was lost while its work ran"),
                    Err(e) => tracing::warn!(session = key, error = %e, "could not renew a lease"),
                }
            }
        }
    }
}
