//! The sessions this process holds in memory: a map bounded by least-recent use.
//!
//! A proxy that runs for weeks meets an unbounded number of sessions; holding every one
//! (its replayer is the whole conversation) would grow without end. Nothing is lost by
//! dropping one: a session's state is rebuilt from the store the next time it is met
//! (its transcript, its rewrite, and the key of the transcript it continues in), so the
//! map keeps at most `cap` sessions and drops the least recently used ones that no
//! request is using. What a dropped session does lose is its calibrated counter's last
//! bill: until the next answer reports usage it counts with the fallback counter.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// One entry: the value and when it was last handed out.
struct Slot<V> {
    value: Arc<V>,
    tick: u64,
}

/// A map of shared values bounded to `cap` entries by least-recent use; an entry still
/// shared by a caller is never dropped (the map can then hold more than `cap` until those
/// callers finish).
pub struct BoundedMap<V> {
    cap: usize,
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    slots: HashMap<String, Slot<V>>,
    /// Tick → key, oldest first.
    order: BTreeMap<u64, String>,
    next_tick: u64,
}

impl<V> BoundedMap<V> {
    /// An empty map holding at most `cap` idle entries (at least 1).
    pub fn new(cap: usize) -> Self {
        BoundedMap {
            cap: cap.max(1),
            inner: Mutex::new(Inner {
                slots: HashMap::new(),
                order: BTreeMap::new(),
                next_tick: 0,
            }),
        }
    }

    /// The value of `key`, made by `make` when absent; the least recently used idle
    /// entries beyond the cap are dropped.
    pub fn get_or_insert_with(&self, key: &str, make: impl FnOnce() -> V) -> Arc<V> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = &mut *inner;
        let tick = inner.next_tick;
        inner.next_tick += 1;
        if let Some(slot) = inner.slots.get_mut(key) {
            inner.order.remove(&slot.tick);
            slot.tick = tick;
            inner.order.insert(tick, key.to_owned());
            return slot.value.clone();
        }
        let value = Arc::new(make());
        inner.slots.insert(
            key.to_owned(),
            Slot {
                value: value.clone(),
                tick,
            },
        );
        inner.order.insert(tick, key.to_owned());
        if inner.slots.len() > self.cap {
            let excess = inner.slots.len() - self.cap;
            let idle: Vec<(u64, String)> = inner
                .order
                .iter()
                .filter(|(_, k)| inner.slots.get(*k).is_some_and(|s| Arc::strong_count(&s.value) == 1))
                .take(excess)
                .map(|(t, k)| (*t, k.clone()))
                .collect();
            for (t, k) in idle {
                inner.order.remove(&t);
                inner.slots.remove(&k);
                tracing::debug!(session = %k, "session dropped from memory (least recently used)");
            }
        }
        value
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).slots.len()
    }

    /// True when `key` is held.
    #[cfg(test)]
    pub fn contains(&self, key: &str) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .slots
            .contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_entry_goes_first() {
        let map = BoundedMap::new(2);
        drop(map.get_or_insert_with("a", || 1));
        drop(map.get_or_insert_with("b", || 2));
        drop(map.get_or_insert_with("a", || 0));
        drop(map.get_or_insert_with("c", || 3));
        assert_eq!(map.len(), 2);
        assert!(map.contains("a") && map.contains("c") && !map.contains("b"));
        assert_eq!(*map.get_or_insert_with("b", || 20), 20, "a dropped entry is made anew");
    }

    #[test]
    fn an_entry_in_use_is_never_dropped() {
        let map = BoundedMap::new(1);
        let held = map.get_or_insert_with("held", || 1);
        drop(map.get_or_insert_with("x", || 2));
        assert!(map.contains("held"), "in use");
        assert_eq!(map.len(), 2, "over the cap while the held one is in use");
        drop(map.get_or_insert_with("y", || 3));
        assert!(map.contains("held"));
        assert!(Arc::ptr_eq(&held, &map.get_or_insert_with("held", || 9)));
        drop(held);
        drop(map.get_or_insert_with("z", || 4));
        assert_eq!(map.len(), 1);
        assert!(map.contains("z"));
    }
}
