//! Sessions: the stable-prefix rewrite, the trigger, and the durable record.
//!
//! An agent sends its whole history every round. Per session the proxy keeps the last
//! [`Rewrite`] (the digest of the leading messages it replaced, and their replacement)
//! so that a request whose first messages match is sent as *replacement + new messages*:
//! the upstream sees the same prefix round after round (its prompt cache keeps hitting)
//! while the agent changes nothing. A request that does not match — the agent edited its
//! history — starts over from the request as sent, in a fresh transcript.
//!
//! The transcript of a session is exactly the conversation the upstream last saw, as
//! replayable lines, written by the library's transcript writer
//! ([`llm_compactor::session::Lines`]: the same lines, repairs included, that a
//! `Session` writes to a file); a session's state is rebuilt from the store
//! when a process first meets it, so a restarted proxy carries on where it stopped.
//!
//! A session that started over lives on in a transcript of its own (`KEY~xxxxxxxx`);
//! the session's own transcript gets a `proxy-continued` line naming it (a line type
//! replay skips), so a restarted proxy, or one that dropped the session from memory,
//! finds the current transcript and its rewrite again.
//!
//! Several proxy instances may share one store (PostgreSQL) with a load balancer
//! sending the rounds of one session to any of them, so this process's state is only a
//! cache: every round first catches up on the events other instances appended (see
//! [`sync`]), and compaction is done under the store's lease, which this process
//! renews while it works and waits for when another instance holds it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use llm_compactor::count::{CalibratedCounter, TokenCounter};
use llm_compactor::message::Message;
use llm_compactor::session::{Line, Lines, Record, Replayer, Transcript, continued_in, same_but_id};
use llm_compactor::store::{NewEvent, Rewrite, StoreError};
use serde_json::{Map, Value};

use crate::config::ProxyConfig;
use crate::error::ProxyError;
use crate::session_map::BoundedMap;

/// The line type that points a session at the transcript it continues in.
pub use llm_compactor::session::CONTINUED;

mod binding;
mod forwarded;
mod hidden;
mod prepare;
mod rewrite;
mod round;
mod sync;

pub use crate::pass_done::PassDone;
pub use forwarded::Prepared;
pub use round::{Attempt, Round};
use round::{Compacted, Lease, PassRequest};

/// One session's live state in this process.
pub struct SessionState {
    key: String,
    store_key: String,
    loaded: bool,
    opened: bool,
    replayer: Replayer,
    rewrite: Option<Rewrite>,
    /// The rewrite's replacement, decoded once (not on every request).
    replacement: Option<Arc<Vec<Message>>>,
    /// Tokens the rewrite removes from every request it applies to (counted the first
    /// time it applies in this process).
    removed: Option<usize>,
    /// The session started over: its transcript must be pointed at once it is written.
    pointer_due: bool,
    /// The client's messages that last matched the rewrite's digest: a request that
    /// starts with exactly these matches without hashing its whole prefix again
    /// (comparison runs at memory speed; the digest is canonical JSON through SHA-256).
    verified: Option<Arc<Vec<Message>>>,
    counter: Arc<CalibratedCounter>,
    /// The last event of the store's log applied to `replayer`.
    seq: u64,
    /// The pass prepared in the background, if any (see [`prepare`]).
    preparer: prepare::Preparer,
    /// The signed thinking blocks of the rewrite's replacement that a pass moved onto a
    /// new prefix (kept turns after a summary or a stub), by signature: while there is
    /// one, a request carrying the rewrite asks the provider to drop them (see
    /// [`binding`]).
    stale_thinking: Vec<String>,
}

/// The sessions this process holds, by key (bounded: see [`crate::session_map`]); each
/// behind its own async mutex so that rounds of one session are prepared one at a time
/// while sessions run in parallel.
pub struct Sessions {
    map: BoundedMap<tokio::sync::Mutex<SessionState>>,
}

impl Sessions {
    /// No sessions; at most `cap` idle ones held.
    pub fn new(cap: usize) -> Self {
        Sessions {
            map: BoundedMap::new(cap),
        }
    }

    /// The session named `key`, created empty (and loaded lazily) when new.
    pub fn get(&self, key: &str, fallback: &Arc<dyn TokenCounter>) -> Arc<tokio::sync::Mutex<SessionState>> {
        self.map.get_or_insert_with(key, || {
            tokio::sync::Mutex::new(SessionState {
                key: key.to_owned(),
                store_key: key.to_owned(),
                loaded: false,
                opened: false,
                replayer: Replayer::new(),
                rewrite: None,
                replacement: None,
                removed: None,
                pointer_due: false,
                verified: None,
                counter: Arc::new(CalibratedCounter::with_fallback(fallback.clone())),
                seq: 0,
                preparer: prepare::Preparer::default(),
                stale_thinking: Vec::new(),
            })
        })
    }

    /// How many sessions are held in memory.
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

fn backend_error(problem: impl std::fmt::Display) -> ProxyError {
    ProxyError::Store(StoreError::Backend(problem.to_string()))
}

/// The replayer of a stored transcript, and the last transcript it says the session
/// continues in.
fn replay_events(
    store_key: &str,
    events: &[llm_compactor::store::StoredEvent],
) -> Result<(Replayer, Option<String>), ProxyError> {
    let mut replayer = Replayer::new();
    let mut continued = None;
    if events.is_empty() {
        return Ok((replayer, continued));
    }
    // Read as lines, not exported to text and parsed again.
    let transcript =
        Transcript::from_lines(Path::new(store_key), events.iter().map(|e| e.line.as_str())).map_err(backend_error)?;
    for entry in transcript.entries() {
        if let Some(next) = continued_in(&entry.record) {
            continued = Some(next.to_owned());
        }
        replayer.apply(&entry.id, &entry.record).map_err(backend_error)?;
    }
    Ok((replayer, continued))
}

impl SessionState {
    async fn load(&mut self, config: &ProxyConfig) -> Result<(), ProxyError> {
        if self.loaded {
            return Ok(());
        }
        // Always from the session's own transcript: it says where the session went on.
        let events = config.store.events(&self.key, 0).await?;
        let (mut replayer, continued) = replay_events(&self.key, &events)?;
        let mut opened = !events.is_empty();
        let mut seq = events.last().map_or(0, |e| e.seq);
        self.store_key = self.key.clone();
        if let Some(next) = continued.filter(|k| k.starts_with(&format!("{}~", self.key))) {
            let events = config.store.events(&next, 0).await?;
            replayer = replay_events(&next, &events)?.0;
            opened = !events.is_empty();
            seq = events.last().map_or(0, |e| e.seq);
            self.store_key = next;
        }
        self.opened = opened;
        self.seq = seq;
        self.replayer = replayer;
        let rewrite = config.store.rewrite(&self.store_key).await?;
        self.set_rewrite(rewrite)?;
        self.pointer_due = false;
        self.loaded = true;
        Ok(())
    }

    /// Writes the line that points the session's own transcript at the current one.
    async fn point_here(&mut self, config: &ProxyConfig) -> Result<(), ProxyError> {
        // The session's own transcript is not the one this state replays: the pointer is
        // checked on a replayer of its own (a line type replay skips, a fresh id).
        let mut lines = Lines::default();
        lines
            .push_continued(&mut Replayer::new(), &self.store_key)
            .map_err(backend_error)?;
        config.store.append(&self.key, &events(lines.take())).await?;
        self.pointer_due = false;
        Ok(())
    }

    /// Rewrites, records and (when the compactor's decision says so, or on a
    /// context-length retry) compacts one request.
    pub async fn prepare(&mut self, round: &Round<'_>) -> Result<Prepared, ProxyError> {
        let config = round.config;
        // The transcript key whose lease this round took after waiting for it.
        let mut leased: Option<String> = None;
        let result = loop {
            if let Err(e) = self.sync(config).await {
                break Err(e);
            }
            let lease = if leased.is_some() { Lease::Held } else { Lease::ToTake };
            match self.prepare_loaded(round, lease).await {
                // Another instance held the lease and this one now holds it: what that
                // instance did is in the store; prepare the round again from there.
                Ok(Step::LeaseTaken) if leased.is_none() => {
                    leased = Some(self.store_key.clone());
                    self.loaded = false;
                }
                Ok(Step::LeaseTaken) => {
                    break Err(ProxyError::Store(llm_compactor::store::StoreError::Backend(
                        "the compaction lease was taken twice in one round".to_owned(),
                    )));
                }
                Ok(Step::Ready(prepared)) => break Ok(*prepared),
                Err(e) => break Err(e),
            }
        };
        if let Some(store_key) = leased {
            release_lease(config, &self.key, &store_key).await;
        }
        if result.is_err() {
            // The replayer may be ahead of the store: rebuild from the store next time.
            self.loaded = false;
        }
        result
    }

    /// Appends this round's lines and advances `seq`; a log that grew by more than
    /// these lines (another instance appended to the same session at the same moment) is
    /// re-read from the store next round.
    async fn append(&mut self, config: &ProxyConfig, lines: &mut Lines) -> Result<(), ProxyError> {
        if lines.is_empty() {
            return Ok(());
        }
        let added = lines.lines().len() as u64;
        let last = config.store.append(&self.store_key, &events(lines.take())).await?;
        if last == self.seq + added {
            self.seq = last;
        } else {
            tracing::warn!(session = %self.key, last, expected = self.seq + added, "the session's log moved under us; re-reading it next round");
            self.loaded = false;
        }
        Ok(())
    }

    async fn prepare_loaded(&mut self, round: &Round<'_>, lease: Lease) -> Result<Step, ProxyError> {
        let Round {
            config,
            compactor,
            api,
            request,
            original,
            ..
        } = *round;
        let client = request.wire.messages();
        let mut rewritten = false;
        let mut removed = 0;
        let mut effective: Vec<Message> = match self.matching_replacement(client) {
            Some((len, replacement)) => {
                rewritten = true;
                removed = *self.removed.get_or_insert_with(|| {
                    let counter = compactor.counter();
                    counter
                        .count_messages(&client[..len])
                        .saturating_sub(counter.count_messages(&replacement))
                });
                let mut messages = Vec::with_capacity(replacement.len() + client.len() - len);
                messages.extend_from_slice(&replacement);
                messages.extend_from_slice(&client[len..]);
                messages
            }
            None => client.to_vec(),
        };
        let mut lines = Lines::default();
        let recorded = self.replayer.messages();
        let extends =
            recorded.len() <= effective.len() && recorded.iter().zip(&effective).all(|(a, b)| same_but_id(a, b));
        if !extends {
            // The new branch keeps what the session knows of its bills (tools and framing
            // the fallback does not count), so its first request is not counted raw.
            self.counter.rebase(recorded, &effective);
            if self.preparer.busy() {
                // The pass prepared for the old history cannot stand for the new one.
                round.metrics.prepared_abandoned.fetch_add(1, Ordering::Relaxed);
            }
            self.start_over();
            tracing::info!(session = %self.key, store_key = %self.store_key, "history edited: session starts over");
        }
        if !self.opened {
            let mut extra = Map::new();
            extra.insert("api".into(), Value::String(api.name().to_owned()));
            // Exported back in its own format (`compactor session replay --to`), with every
            // field that format keeps.
            if let Some(format) = api.format() {
                extra.insert(
                    llm_compactor::session::SOURCE_FORMAT_KEY.into(),
                    Value::String(format.name().to_owned()),
                );
            }
            extra.insert("model".into(), Value::String(request.model.clone()));
            extra.insert("session".into(), Value::String(self.key.clone()));
            crate::identity::record(&request.identity, &mut extra);
            lines
                .push_meta(&mut self.replayer, extra)
                .map_err(|e| ProxyError::Internal(e.to_string()))?;
            self.opened = true;
        }
        let start = self.replayer.messages().len();
        for message in &effective[start..] {
            lines
                .push(&mut self.replayer, Record::Message(message.clone()))
                .map_err(|e| ProxyError::Internal(e.to_string()))?;
        }
        // The replayer's conversation is `effective`, counted as its messages arrived:
        // the decision costs this round's new messages.
        if !self.replayer.conversation().counted_by(self.counter.as_ref()) {
            self.replayer.count_with(self.counter.clone());
        }
        let tokens = self
            .counter
            .count_conversation_for_model(self.replayer.conversation(), &request.model);
        let (mut compacted, mut done) = (false, None);
        let target = round.pass_target(self.replayer.conversation(), tokens, self.counter.as_ref());
        // Prepared compaction (issue 28): the pass may be under way, or ready to install.
        let (target, install) = self.prepared_round(round, tokens, target).await;
        if let Some(target) = target {
            let agent = install
                .is_none()
                .then(|| round.inline_agent_round(rewritten.then_some(&effective[..]), &self.key));
            match self
                .compact(
                    round,
                    &mut lines,
                    lease,
                    PassRequest {
                        client,
                        target,
                        install,
                        tokens,
                        agent,
                    },
                )
                .await?
            {
                Compacted::Yes(messages, pass) => {
                    done = Some(pass);
                    effective = messages;
                    compacted = true;
                    removed = self.removed.unwrap_or(0);
                }
                Compacted::No => {}
                Compacted::LeaseTaken => return Ok(Step::LeaseTaken),
            }
        }
        self.append(config, &mut lines).await?;
        if self.pointer_due {
            self.point_here(config).await?;
        }
        // On a model that binds thinking to its prefix, the oldest stubs go out as the
        // client's own results with the provider's clearing of them (the blocks stay
        // valid); `effective` stays what the model reads, for calibration.
        let clearing = (rewritten || compacted)
            .then(|| {
                binding::server_clearing(
                    config.server_clearing,
                    request,
                    client,
                    &effective,
                    compactor.config().age_min_chars,
                )
            })
            .flatten();
        let clear_keep = clearing.as_ref().map(|c| c.keep);
        let (body, json) = if !rewritten && !compacted {
            (original.clone(), None)
        } else {
            let value = match clearing {
                Some(clearing) => request.wire.to_value(clearing.messages).0,
                None => {
                    let (value, messages) = request.wire.to_value(effective);
                    effective = messages;
                    value
                }
            };
            // The wire options write this JSON when they change it (breakpoints, cache
            // key), so the round writes it only for a preparation; an empty body is one
            // not written yet (each body is written once: `outgoing::finish`).
            let body =
                if (api == crate::api::Api::Anthropic || config.wire.openai_cache_key) && config.prepare.is_none() {
                    bytes::Bytes::new()
                } else {
                    round.metrics.wire.written();
                    bytes::Bytes::from(serde_json::to_vec(&value).map_err(|e| ProxyError::Internal(e.to_string()))?)
                };
            (body, Some(value))
        };
        if !compacted && round.attempt == Attempt::First {
            self.maybe_prepare(round, &body, tokens);
        }
        let pass = self
            .rewrite
            .as_ref()
            .filter(|_| rewritten || compacted)
            .map(|r| format!("{}/{}", self.store_key, r.generation));
        let needs_drop_block = (rewritten || compacted)
            && !self.stale_thinking.is_empty()
            && binding::needs_drop_block(request.thinking, request.drop_block, &request.model);
        Ok(Step::Ready(Box::new(Prepared {
            pass,
            done,
            body,
            json,
            messages: effective,
            counter: self.counter.clone(),
            store_key: self.store_key.clone(),
            removed,
            needs_drop_block,
            clear_keep,
        })))
    }

    fn start_over(&mut self) {
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        self.store_key = format!("{}~{}", self.key, &suffix[..8]);
        self.replayer = Replayer::new();
        self.rewrite = None;
        self.replacement = None;
        self.removed = None;
        self.verified = None;
        self.opened = false;
        self.pointer_due = true;
        self.seq = 0;
        self.preparer = prepare::Preparer::default();
        self.stale_thinking = Vec::new();
    }

    /// Compacts under the session's lease, aiming at the pass's `target` (the compactor's own
    /// target when `None`).
    async fn compact(
        &mut self,
        round: &Round<'_>,
        lines: &mut Lines,
        lease: Lease,
        pass: PassRequest<'_>,
    ) -> Result<Compacted, ProxyError> {
        let config = round.config;
        if lease == Lease::ToTake
            && !config
                .store
                .try_lease(&self.store_key, &config.holder, config.lease_ttl)
                .await?
        {
            tracing::info!(session = %self.key, "another instance is compacting this session; waiting for its lease");
            if sync::wait_for_lease(config, &self.store_key).await? {
                return Ok(Compacted::LeaseTaken);
            }
            tracing::warn!(session = %self.key, "the compaction lease stayed taken; serving the current rewrite");
            return Ok(Compacted::No);
        }
        let store_key = self.store_key.clone();
        let outcome = sync::renewing(config, &store_key, self.compact_leased(round, lines, pass)).await;
        if lease == Lease::ToTake {
            release_lease(config, &self.key, &store_key).await;
        }
        Ok(match outcome? {
            Some((messages, pass)) => Compacted::Yes(messages, pass),
            None => Compacted::No,
        })
    }

    async fn compact_leased(
        &mut self,
        round: &Round<'_>,
        lines: &mut Lines,
        pass: PassRequest<'_>,
    ) -> Result<Option<(Vec<Message>, PassDone)>, ProxyError> {
        let PassRequest {
            client,
            target,
            install,
            tokens,
            agent,
        } = pass;
        let Round {
            config,
            compactor,
            metrics,
            ..
        } = *round;
        let result = match install {
            Some(prepared) => match self.install_prepared(&prepared, compactor, metrics, lines)? {
                Some(result) => result,
                // Discarded under the hard limit: the round goes out as it is (a new
                // pass is prepared at the end of the round).
                None if tokens <= compactor.config().context_budget => return Ok(None),
                None => self.inline_pass(round, target, agent).await?,
            },
            None => self.inline_pass(round, target, agent).await?,
        };
        if result.is_noop() {
            if round.attempt == Attempt::ContextLengthRetry {
                tracing::warn!(session = %self.key, "context-length retry: nothing left to compact");
            }
            return Ok(None);
        }
        let clearing = binding::clears_on_server(config.server_clearing, round.request)
            .then_some((client, compactor.config().age_min_chars));
        let stale_thinking = binding::stale_after(
            self.replayer.messages(),
            &result.messages,
            &self.stale_thinking,
            clearing,
        );
        // The pass's repair line (an orphan dropped, a lost call answered) comes first, as
        // a `Session` writes it: the rewrite then never carries what the pass repaired.
        if let Err(problem) = lines.push_pass(&mut self.replayer, &result) {
            tracing::error!(session = %self.key, %problem, "compaction not recorded; request sent uncompacted");
            return Ok(None);
        }
        if let Some(line) = binding::stale_line(round.request, &stale_thinking)
            && let Err(problem) = lines.push(&mut self.replayer, line)
        {
            tracing::warn!(session = %self.key, %problem, "the stale thinking line was not recorded");
        }
        let messages = self.stand_for(config, lines, client).await?;
        self.stale_thinking = stale_thinking;
        let removed = compactor
            .counter()
            .count_messages(client)
            .saturating_sub(compactor.counter().count_messages(&messages));
        self.removed = Some(removed);
        if let Some(receipt) = &result.receipt {
            metrics.pass_cost(receipt, compactor.config().cost_policy.summarizer_price);
        }
        metrics.compactions.fetch_add(1, Ordering::Relaxed);
        metrics
            .elisions
            .fetch_add(result.elisions.len() as u64, Ordering::Relaxed);
        metrics.tokens_saved.fetch_add(
            result.tokens_before.saturating_sub(result.tokens_after) as u64,
            Ordering::Relaxed,
        );
        tracing::info!(
            session = %self.key,
            before = result.tokens_before,
            after = result.tokens_after,
            fallback = result.fallback,
            elided = result.elisions.len(),
            "compacted"
        );
        Ok(Some((messages, PassDone::of(&result))))
    }
}

/// The store's events for transcript lines.
fn events(lines: Vec<Line>) -> Vec<NewEvent> {
    lines
        .into_iter()
        .map(|line| NewEvent {
            id: line.id,
            kind: line.kind,
            line: line.text,
        })
        .collect()
}

/// The messages without their ids (what goes on the wire and into a rewrite).
fn without_ids(messages: &[Message]) -> Vec<Message> {
    messages.iter().map(|m| Message { id: None, ..m.clone() }).collect()
}

async fn release_lease(config: &ProxyConfig, key: &str, store_key: &str) {
    if let Err(e) = config.store.release_lease(store_key, &config.holder).await {
        tracing::warn!(session = %key, error = %e, "could not release the compaction lease (it expires)");
    }
}

/// How preparing one round ended.
enum Step {
    /// The body to send (boxed: the other variant is empty).
    Ready(Box<Prepared>),
    /// This round waited for another instance's compaction lease and now holds it: the
    /// round is prepared again from the store.
    LeaseTaken,
}
