//! `compactor proxy sessions`: which tier identified each session, and each subagent's
//! session listed under the session it was started from.

use std::collections::BTreeMap;

use llm_compactor::store::{SessionInfo, SessionStore};

/// How a session was identified, read back from its first (meta) event.
pub type IdentityMeta = compactor_proxy::RecordedIdentity;

/// The identity recorded in `session`'s meta event (default when none is).
pub async fn identity_of(store: &dyn SessionStore, session: &str) -> IdentityMeta {
    match store.events(session, 0).await {
        Ok(events) => events
            .first()
            .map(|first| IdentityMeta::from_meta_line(&first.line))
            .unwrap_or_default(),
        Err(_) => IdentityMeta::default(),
    }
}

/// The listing: one line a session (key, events, last timestamp, tier, source), children
/// indented under their parent when the parent is in the store.
pub fn listing(rows: &[(SessionInfo, IdentityMeta)]) -> String {
    let known: std::collections::HashSet<&str> = rows.iter().map(|(i, _)| i.session.as_str()).collect();
    let mut children: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut roots = Vec::new();
    for (n, (_, meta)) in rows.iter().enumerate() {
        match meta.parent.as_deref().filter(|p| known.contains(p)) {
            Some(parent) => children.entry(parent).or_default().push(n),
            None => roots.push(n),
        }
    }
    let mut out = String::new();
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|n| (n, 0)).collect();
    let mut seen = vec![false; rows.len()];
    while let Some((n, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[n], true) {
            continue;
        }
        let (info, meta) = &rows[n];
        let tier = if meta.tier.is_empty() { "-" } else { &meta.tier };
        let source = if meta.source.is_empty() { "-" } else { &meta.source };
        out.push_str(&format!(
            "{}{}\t{} events\t{}\t{tier}\t{source}\n",
            "  ".repeat(depth),
            info.session,
            info.events,
            info.last_ts.clone().unwrap_or_default()
        ));
        for &child in children.get(info.session.as_str()).into_iter().flatten().rev() {
            stack.push((child, depth + 1));
        }
    }
    // A cycle of parents leaves sessions unreached: list them flat rather than drop them.
    for (n, done) in seen.iter().enumerate() {
        if !done {
            let (info, meta) = &rows[n];
            out.push_str(&format!(
                "{}\t{} events\t{}\t{}\t{}\n",
                info.session,
                info.events,
                info.last_ts.clone().unwrap_or_default(),
                meta.tier,
                meta.source
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_listed_under_its_parent() {
        let info = |s: &str| SessionInfo::new(s, 1, None);
        let meta = |tier: &str, parent: Option<&str>| IdentityMeta::new(tier, "x", parent.map(str::to_owned));
        let rows = vec![
            (info("a-child"), meta("client", Some("z-root"))),
            (info("b"), meta("digest", None)),
            (info("z-root"), meta("client", None)),
        ];
        let text = listing(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("b\t"));
        assert!(lines[1].starts_with("z-root\t"));
        assert!(lines[2].starts_with("  a-child\t") && lines[2].contains("\tclient\t"));
    }
}
