//! Between a JSONL transcript and a store's events: [`events_from_jsonl`] splits a
//! transcript into the [`NewEvent`]s a store appends (id and type read from each
//! envelope, the line kept byte for byte), so that import then export gives back the
//! same bytes.

use super::{NewEvent, StoreError};

/// The events of a JSONL transcript, one per line, in order. `origin` names the source
/// in errors (a file name).
///
/// # Errors
/// [`StoreError::Rejected`] naming the line number: a line that is not a JSON object
/// with a string `id` and `type`. The transcript loader's tolerance applies: blank lines
/// are skipped, a CRLF line ending is read as LF, and a complete final line without its
/// newline is kept (callers reject a torn final line first, with
/// [`crate::session::Transcript`]).
pub fn events_from_jsonl(origin: &str, text: &str) -> Result<Vec<NewEvent>, StoreError> {
    let reject = |line: usize, reason: String| StoreError::Rejected {
        session: origin.to_owned(),
        reason: format!("line {line}: {reason}"),
    };
    let mut events = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| reject(number, format!("not JSON: {e}")))?;
        let field = |name: &str| {
            value
                .get(name)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .ok_or_else(|| reject(number, format!("no string {name:?} field")))
        };
        events.push(NewEvent {
            id: field("id")?,
            kind: field("type")?,
            line: line.to_owned(),
        });
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_bytes_and_errors_name_the_line() {
        let text = "{\"id\":\"a\",\"type\":\"session-meta\",\"x\": 1}\n{\"type\":\"message\",\"id\":\"b\"}\n";
        let events = events_from_jsonl("t.jsonl", text).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].line, "{\"id\":\"a\",\"type\":\"session-meta\",\"x\": 1}");
        assert_eq!((events[1].id.as_str(), events[1].kind.as_str()), ("b", "message"));
        let err = events_from_jsonl("t.jsonl", "{\"id\":\"a\",\"type\":\"m\"}\n{\"id\":1}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.jsonl") && err.contains("line 2"), "{err}");
        // As the transcript loader: a complete final line without its newline is kept,
        // CRLF is read as LF, and blank lines are skipped.
        let events = events_from_jsonl(
            "t.jsonl",
            "{\"id\":\"a\",\"type\":\"m\"}\r\n\n{\"id\":\"b\",\"type\":\"m\"}",
        )
        .unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].line, "{\"id\":\"a\",\"type\":\"m\"}");
        assert!(events_from_jsonl("t.jsonl", "").unwrap().is_empty());
    }
}
