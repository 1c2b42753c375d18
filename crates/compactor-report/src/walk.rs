//! [`build`]: a transcript's lines walked once, replayed as they go, into a
//! [`SessionReport`].
//!
//! A *request* is the conversation as it stood when an assistant turn was asked for (the
//! line before each assistant message), plus, when the transcript ends with a pass or
//! with messages no assistant answered yet, the request that would be sent next. A
//! *pass* is a run of repair, elision and compaction lines in that order (as the engine
//! and the proxy write them); a line that cannot belong to the same pass (an elision
//! after a compaction) starts the next one.
//!
//! Each message is counted once when it arrives and again only when a pass changes it
//! (a stub, a summary, a synthetic answer), so a 10,000-message session is counted in
//! one sweep. The uncompacted size of a request is the sum of every message appended so
//! far, as appended.
//!
//! The cost saved is an estimate in base-input-token units under the pricing preset,
//! generous to *not* compacting: without compaction every request is assumed read whole
//! from the cache (`uncompacted x cache_read`); with it, each request reads what it sent
//! from the cache, each pass writes what it rewrote (`tokens_rewritten x (cache_write -
//! cache_read)`, the tokens after the pass when no receipt was recorded), and the
//! summarizer's billed calls cost `summarizer_price x (uncached input x uncached +
//! cache-read input x cache_read + output x output)` (a summary request that reads the
//! agent's cache is billed its reads at the cache-read price).

use std::collections::{HashMap, HashSet};

use llm_compactor::message::{Message, Role};
use llm_compactor::session::{CompactionRecord, Entry, Record, Replayer};

use crate::ReportError;
use crate::model::{PassKind, PassView, QuotedMessage, RequestPoint, SessionReport, StubView, Totals};
use crate::options::ReportOptions;
use crate::shape::{Cell, segments};
use crate::text::{cut, message_text, recorded_usage, summary_sections};

/// A pass whose lines are being read.
struct Pending {
    line: usize,
    ts: String,
    after_requests: usize,
    /// The conversation just before the pass.
    before: Vec<Message>,
    tokens_before: usize,
    /// 0 repair, 1 elision, 2 compaction: the last stage read.
    stage: u8,
    repairs: usize,
    stubs: Vec<StubView>,
    stubbed: HashSet<String>,
    elision_receipt: Option<llm_compactor::plan::CostReceipt>,
    compaction: Option<(String, CompactionRecord)>,
}

struct Walk<'a> {
    options: &'a ReportOptions,
    replayer: Replayer,
    /// Tokens of each message of the conversation, by id.
    counts: HashMap<String, usize>,
    current: usize,
    uncompacted: usize,
    appended: usize,
    requests: Vec<RequestPoint>,
    passes: Vec<PassView>,
    pending: Option<Pending>,
    last_was_assistant: bool,
}

fn id_of(message: &Message) -> &str {
    message.id.as_deref().unwrap_or_default()
}

/// The report of a transcript's `entries` (in file order; the first is `session-meta`).
///
/// Requests are the conversations before each assistant turn (and the pending one after a
/// final pass); passes are runs of repair, elision and compaction lines. The cost saved is
/// `sum(uncompacted) x cache_read - (sum(sent) x cache_read + sum(rewritten) x
/// (cache_write - cache_read) + summarizer calls)`, in base-input-token units under the
/// options' pricing: an estimate generous to not compacting (every request assumed
/// cached whole).
///
/// # Errors
/// [`ReportError::Replay`] when a line does not replay (a transcript read by
/// [`llm_compactor::session::Transcript`] always does).
pub fn build(entries: &[Entry], options: &ReportOptions) -> Result<SessionReport, ReportError> {
    let mut walk = Walk {
        options,
        replayer: Replayer::new(),
        counts: HashMap::new(),
        current: 0,
        uncompacted: 0,
        appended: 0,
        requests: Vec::new(),
        passes: Vec::new(),
        pending: None,
        last_was_assistant: false,
    };
    let mut created_by = String::new();
    for entry in entries {
        if let Record::Meta(meta) = &entry.record {
            created_by = meta.created_by.clone();
        }
        walk.line(entry)?;
    }
    walk.flush();
    if !walk.last_was_assistant && (walk.appended > 0) {
        let number = walk.requests.len() + 1;
        walk.requests.push(RequestPoint {
            number,
            line: 0,
            tokens: walk.current,
            uncompacted: walk.uncompacted,
            usage: None,
        });
    }
    let shape_now = segments(
        walk.replayer.messages().iter().map(|m| Cell {
            role: m.role.as_str(),
            fate: "kept",
            tokens: walk.counts.get(id_of(m)).copied().unwrap_or(0),
        }),
        options.max_segments,
    );
    let totals = totals(&walk.requests, &walk.passes, options);
    Ok(SessionReport {
        title: options.title.clone(),
        created_by,
        lines: entries.len(),
        messages_now: walk.replayer.messages().len(),
        messages_appended: walk.appended,
        counter: options.counter.name().to_owned(),
        pricing: options.pricing.name.to_owned(),
        limits: options.limits,
        requests: walk.requests,
        passes: walk.passes,
        totals,
        shape_now,
    })
}

impl Walk<'_> {
    fn line(&mut self, entry: &Entry) -> Result<(), ReportError> {
        let stage = match &entry.record {
            Record::Repair(_) => Some(0),
            Record::Elision(_) => Some(1),
            Record::Compaction(_) => Some(2),
            _ => None,
        };
        match (stage, &entry.record) {
            (None, Record::Message(message)) => {
                self.flush();
                if message.role == Role::Assistant {
                    let number = self.requests.len() + 1;
                    self.requests.push(RequestPoint {
                        number,
                        line: entry.line,
                        tokens: self.current,
                        uncompacted: self.uncompacted,
                        usage: recorded_usage(message),
                    });
                }
                self.last_was_assistant = message.role == Role::Assistant;
                self.apply(entry)?;
                let tokens = self.options.counter.count_message(message);
                self.counts.insert(entry.id.clone(), tokens);
                self.current += tokens;
                self.uncompacted += tokens;
                self.appended += 1;
            }
            (Some(stage), record) => {
                if self.pending.as_ref().is_some_and(|p| stage <= p.stage) {
                    self.flush();
                }
                self.begin(entry);
                self.last_was_assistant = false;
                if let Some(pending) = self.pending.as_mut() {
                    pending.stage = stage;
                }
                match record {
                    Record::Repair(repair) => self.pending_mut().repairs += repair.dropped.len() + repair.answers.len(),
                    Record::Elision(elision) => self.read_stubs(elision),
                    Record::Compaction(compaction) => {
                        self.pending_mut().compaction = Some((entry.id.clone(), compaction.clone()));
                    }
                    _ => {}
                }
                self.apply(entry)?;
            }
            _ => self.apply(entry)?,
        }
        Ok(())
    }

    fn apply(&mut self, entry: &Entry) -> Result<(), ReportError> {
        self.replayer
            .apply(&entry.id, &entry.record)
            .map_err(|e| ReportError::Replay {
                line: entry.line,
                problem: e.to_string(),
            })
    }

    fn pending_mut(&mut self) -> &mut Pending {
        self.pending.as_mut().expect("begin() made the pending pass")
    }

    /// Starts a pass at `entry` unless one is being read.
    fn begin(&mut self, entry: &Entry) {
        if self.pending.is_some() {
            return;
        }
        self.pending = Some(Pending {
            line: entry.line,
            ts: entry.ts.clone(),
            after_requests: self.requests.len(),
            before: self.replayer.messages().to_vec(),
            tokens_before: self.current,
            stage: 0,
            repairs: 0,
            stubs: Vec::new(),
            stubbed: HashSet::new(),
            elision_receipt: None,
            compaction: None,
        });
    }

    /// `message` (at `position`) as the page quotes it, its tokens from `counts`.
    fn quote(&self, counts: &HashMap<String, usize>, message: &Message, position: usize) -> QuotedMessage {
        let (text, cut_chars) = cut(&message_text(message), self.options.max_text_chars);
        QuotedMessage {
            id: id_of(message).to_owned(),
            role: message.role.as_str().to_owned(),
            position,
            tokens: counts.get(id_of(message)).copied().unwrap_or(0),
            text,
            cut_chars,
        }
    }

    fn read_stubs(&mut self, elision: &llm_compactor::session::ElisionRecord) {
        let max = self.options.max_listed;
        let mut stubs = Vec::new();
        for item in &elision.items {
            if stubs.len() + self.pending_mut().stubs.len() < max
                && let Some(position) = self.replayer.position(&item.id)
            {
                let original = self.quote(&self.counts, &self.replayer.messages()[position], position);
                let (stub, _) = cut(&item.stub, self.options.max_text_chars);
                stubs.push(StubView { stub, original });
            }
        }
        let pending = self.pending_mut();
        pending.stubs.extend(stubs);
        pending.stubbed.extend(elision.items.iter().map(|i| i.id.clone()));
        if elision.receipt.is_some() {
            pending.elision_receipt = elision.receipt.clone();
        }
    }

    /// Ends the pass being read: counts what it changed and records its view.
    fn flush(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let summary_id = pending.compaction.as_ref().map(|(id, _)| id.clone());
        let before_ids: HashSet<&str> = pending.before.iter().map(id_of).collect();
        // Count what the pass changed; keep the counts of what it did not.
        let mut counts = HashMap::with_capacity(self.replayer.messages().len());
        for message in self.replayer.messages() {
            let id = id_of(message);
            let tokens = match self.counts.get(id) {
                Some(&n) if !pending.stubbed.contains(id) && before_ids.contains(id) => n,
                _ => self.options.counter.count_message(message),
            };
            counts.insert(id.to_owned(), tokens);
        }
        let after_ids: HashSet<&str> = self.replayer.messages().iter().map(id_of).collect();
        // `self.counts` is the conversation before the pass until the end of this function.
        let fate_before = |id: &str| {
            if !after_ids.contains(id) {
                "replaced"
            } else if pending.stubbed.contains(id) {
                "stubbed"
            } else {
                "kept"
            }
        };
        let shape_before = segments(
            pending.before.iter().map(|m| Cell {
                role: m.role.as_str(),
                fate: fate_before(id_of(m)),
                tokens: self.counts.get(id_of(m)).copied().unwrap_or(0),
            }),
            self.options.max_segments,
        );
        let shape_after = segments(
            self.replayer.messages().iter().map(|m| {
                let id = id_of(m);
                let fate = if Some(id) == summary_id.as_deref() {
                    "summary"
                } else if pending.stubbed.contains(id) {
                    "stubbed"
                } else if !before_ids.contains(id) {
                    "added"
                } else {
                    "kept"
                };
                Cell {
                    role: m.role.as_str(),
                    fate,
                    tokens: counts.get(id).copied().unwrap_or(0),
                }
            }),
            self.options.max_segments,
        );
        let gone: Vec<(usize, &Message)> = pending
            .before
            .iter()
            .enumerate()
            .filter(|(_, m)| !after_ids.contains(id_of(m)))
            .collect();
        let replaced: Vec<QuotedMessage> = gone
            .iter()
            .take(self.options.max_listed)
            .map(|(position, m)| self.quote(&self.counts, m, *position))
            .collect();
        let tokens_counted_after = self.replayer.messages().iter().map(|m| counts[id_of(m)]).sum();
        self.counts = counts;
        self.current = tokens_counted_after;
        let stubs_total = pending.stubbed.len();
        let (kind, view_compaction) = match &pending.compaction {
            Some((_, c)) if c.fallback => (PassKind::HardTrim, Some(c)),
            Some((_, c)) => (PassKind::Compaction, Some(c)),
            None if stubs_total > 0 => (PassKind::Elision, None),
            None => (PassKind::Repair, None),
        };
        let summary = view_compaction
            .filter(|c| !c.summary.is_empty())
            .map(|c| summary_sections(&c.summary, self.options.max_text_chars))
            .unwrap_or_default();
        let view = PassView {
            number: self.passes.len() + 1,
            line: pending.line,
            ts: pending.ts,
            after_requests: pending.after_requests,
            kind,
            tokens_before: view_compaction.map_or(pending.tokens_before, |c| c.tokens_before),
            tokens_after: view_compaction.map_or(tokens_counted_after, |c| c.tokens_after),
            messages_replaced: view_compaction.map_or(gone.len(), |c| c.dropped),
            elisions: stubs_total,
            repairs: pending.repairs,
            fallback: view_compaction.is_some_and(|c| c.fallback),
            exhausted: view_compaction.is_some_and(|c| c.exhausted),
            receipt: view_compaction
                .and_then(|c| c.receipt.clone())
                .or(pending.elision_receipt),
            summarizer_usage: view_compaction.map(|c| c.usage).unwrap_or_default(),
            summarizer: view_compaction.and_then(|c| c.summarizer.clone()),
            attempts: view_compaction
                .map(|c| c.attempts.iter().map(attempt_words).collect())
                .unwrap_or_default(),
            summary_chars: view_compaction.map_or(0, |c| c.summary.chars().count()),
            summary,
            stubs_omitted: stubs_total.saturating_sub(pending.stubs.len()),
            stubs: pending.stubs,
            replaced_omitted: gone.len().saturating_sub(replaced.len()),
            replaced,
            shape_before,
            shape_after,
        };
        self.passes.push(view);
    }
}

/// One summarizer request in words: its kind, how it ended, and why when it failed.
fn attempt_words(attempt: &llm_compactor::compactor::Attempt) -> String {
    let kind = serde_json::to_value(attempt.kind).ok();
    let outcome = serde_json::to_value(attempt.outcome).ok();
    let word = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    let mut text = format!("{} {}", word(kind), word(outcome));
    if let Some(class) = attempt.class {
        let class = word(serde_json::to_value(class).ok());
        if !class.is_empty() {
            text.push_str(&format!(" ({class})"));
        }
    }
    text
}

fn totals(requests: &[RequestPoint], passes: &[PassView], options: &ReportOptions) -> Totals {
    let p = &options.pricing;
    let mut totals = Totals {
        requests: requests.len(),
        ..Totals::default()
    };
    for request in requests {
        totals.tokens_sent += request.tokens as u64;
        totals.tokens_uncompacted += request.uncompacted as u64;
        if let Some(usage) = request.usage {
            totals.requests_with_usage += 1;
            totals.billed_input += usage.input_tokens;
            totals.billed_cache_read += usage.cache_read_tokens;
        }
    }
    let mut pass_cost = 0.0;
    for pass in passes {
        match pass.kind {
            PassKind::Compaction => totals.compactions += 1,
            PassKind::HardTrim => totals.hard_trims += 1,
            PassKind::Elision => totals.elision_epochs += 1,
            PassKind::Repair => totals.repairs += 1,
        }
        totals.summarizer_usage += pass.summarizer_usage;
        let rewritten = pass.receipt.as_ref().map_or(pass.tokens_after, |r| r.tokens_rewritten);
        let price = pass.receipt.as_ref().map_or(1.0, |r| r.summarizer_price);
        let u = pass.summarizer_usage;
        let read = u.cache_read_tokens.min(u.input_tokens);
        pass_cost += rewritten as f64 * (p.cache_write - p.cache_read)
            + price
                * ((u.input_tokens - read) as f64 * p.uncached
                    + read as f64 * p.cache_read
                    + u.output_tokens as f64 * p.output);
    }
    let without = totals.tokens_uncompacted as f64 * p.cache_read;
    let with = totals.tokens_sent as f64 * p.cache_read + pass_cost;
    totals.cost_saved = without - with;
    totals
}
