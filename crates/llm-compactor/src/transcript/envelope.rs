//! The JSONL envelope: `{"id", "payload", "ts", "type", "v"}`, keys sorted, one per line.
//!
//! Encoding is a derived struct whose fields are declared in sorted order (serde keeps
//! declaration order), so no re-sorting pass touches the payload: a message's `extras`
//! keep the order they had, which is what makes replay byte-identical. Decoding checks
//! every field a reader relies on and says precisely what is wrong, because the loader
//! turns that text into an error naming the file and the line.

use serde::Serialize;
use serde_json::Value;

use super::message_line::write_message_line;
use super::record::{
    CompactionRecord, ElisionRecord, Record, RepairRecord, TYPE_COMPACTION, TYPE_ELISION, TYPE_MESSAGE, TYPE_META,
    TYPE_REPAIR, VERSION,
};
use crate::message::Message;

#[derive(Serialize)]
struct EnvelopeOut<'a, P: Serialize> {
    id: &'a str,
    payload: &'a P,
    ts: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    v: u64,
}

/// Appends one line (JSON plus the terminating newline) for a payload to `out`.
fn write<P: Serialize>(
    out: &mut Vec<u8>,
    id: &str,
    ts: &str,
    kind: &str,
    payload: &P,
) -> Result<(), serde_json::Error> {
    serde_json::to_writer(
        &mut *out,
        &EnvelopeOut {
            id,
            payload,
            ts,
            kind,
            v: VERSION,
        },
    )?;
    out.push(b'\n');
    Ok(())
}

/// One transcript line (JSON plus the terminating newline) for a record, byte-identical
/// to what [`crate::session::Session`] writes for it. A message is written with its `id`
/// set to the envelope id.
///
/// Stores and proxies that keep transcripts elsewhere than in a file use this, so that
/// their export replays exactly like a file written by a `Session`.
///
/// # Errors
/// A payload that cannot be encoded as JSON (a non-finite number in an unknown record).
pub fn encode_line(id: &str, ts: &str, record: &Record) -> Result<String, serde_json::Error> {
    let mut line = Vec::new();
    write_line(&mut line, id, ts, record)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// [`encode_line`] appended to `out`: the session writer puts a round's lines in one
/// buffer and writes them at once.
pub(crate) fn write_line(out: &mut Vec<u8>, id: &str, ts: &str, record: &Record) -> Result<(), serde_json::Error> {
    match record {
        Record::Meta(meta) => write(out, id, ts, TYPE_META, meta),
        Record::Message(message) => {
            if message.id.as_deref() == Some(id) {
                write_message_line(out, id, ts, TYPE_MESSAGE, message);
                Ok(())
            } else {
                let message = message.clone().with_id(id);
                write(out, id, ts, TYPE_MESSAGE, &message)
            }
        }
        Record::Compaction(compaction) => write(out, id, ts, TYPE_COMPACTION, compaction),
        Record::Elision(elision) => write(out, id, ts, TYPE_ELISION, elision),
        Record::Repair(repair) => write(out, id, ts, TYPE_REPAIR, repair),
        Record::Unknown { kind, payload } => write(out, id, ts, kind, payload),
    }
}

/// Decodes one transcript line (with or without its newline) into its envelope id and
/// record: the inverse of [`encode_line`].
///
/// Stores and proxies that read a session's lines back one by one (a proxy instance
/// catching up on what another instance appended) use this with a
/// [`crate::session::Replayer`], instead of re-reading the whole transcript.
///
/// # Errors
/// The problem in words: not JSON, or an envelope a reader cannot use (its version, a
/// missing field, a payload of the wrong shape).
pub fn decode_line(line: &str) -> Result<(String, Record), String> {
    let value: Value =
        serde_json::from_str(line.trim_end_matches(['\n', '\r'])).map_err(|e| format!("not JSON: {e}"))?;
    let decoded = decode_value(value)?;
    Ok((decoded.id, decoded.record))
}

/// A decoded line: envelope id, timestamp, record.
pub(crate) struct Decoded {
    pub id: String,
    pub ts: String,
    pub record: Record,
}

/// Decodes one line, already parsed as JSON. The error is the problem in words.
pub(crate) fn decode_value(value: Value) -> Result<Decoded, String> {
    let Value::Object(mut object) = value else {
        return Err("an envelope must be a JSON object".to_owned());
    };
    let v = object
        .get("v")
        .ok_or_else(|| "the envelope has no \"v\" (format version)".to_owned())?;
    if v.as_u64() != Some(VERSION) {
        return Err(format!(
            "unsupported envelope version {v} (this reader knows version {VERSION})"
        ));
    }
    let id = match object.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => id,
        Some(_) => return Err("the envelope \"id\" must be a non-empty string".to_owned()),
        None => return Err("the envelope has no \"id\"".to_owned()),
    };
    let ts = match object.remove("ts") {
        Some(Value::String(ts)) => ts,
        Some(_) => return Err("the envelope \"ts\" must be a string".to_owned()),
        None => return Err("the envelope has no \"ts\"".to_owned()),
    };
    let kind = match object.remove("type") {
        Some(Value::String(kind)) => kind,
        Some(_) => return Err("the envelope \"type\" must be a string".to_owned()),
        None => return Err("the envelope has no \"type\"".to_owned()),
    };
    let payload = object
        .remove("payload")
        .ok_or_else(|| "the envelope has no \"payload\"".to_owned())?;
    let record = match kind.as_str() {
        TYPE_META => Record::Meta(typed(payload, TYPE_META)?),
        TYPE_MESSAGE => {
            let mut message: Message = typed(payload, TYPE_MESSAGE)?;
            match message.id.as_deref() {
                Some(inner) if inner != id => {
                    return Err(format!(
                        "message payload id {inner:?} differs from the envelope id {id:?}"
                    ));
                }
                Some(_) => {}
                None => message.id = Some(id.clone()),
            }
            Record::Message(message)
        }
        TYPE_COMPACTION => Record::Compaction(typed::<CompactionRecord>(payload, TYPE_COMPACTION)?),
        TYPE_ELISION => Record::Elision(typed::<ElisionRecord>(payload, TYPE_ELISION)?),
        TYPE_REPAIR => Record::Repair(typed::<RepairRecord>(payload, TYPE_REPAIR)?),
        _ => Record::Unknown { kind, payload },
    };
    Ok(Decoded { id, ts, record })
}

fn typed<T: serde::de::DeserializeOwned>(payload: Value, kind: &str) -> Result<T, String> {
    serde_json::from_value(payload).map_err(|e| format!("bad {kind} payload: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::record::{CompactionRecord, ElisionItem, ElisionRecord};

    #[test]
    fn decode_line_inverts_encode_line() {
        let records = [
            Record::Message(Message::user("hello")),
            Record::Elision(ElisionRecord {
                items: vec![ElisionItem {
                    id: "m1".into(),
                    stub: "[stub]".into(),
                }],
                receipt: None,
            }),
            Record::Compaction(CompactionRecord {
                dropped: 2,
                exhausted: false,
                fallback: true,
                // A receipt's floats round-trip to the same bytes.
                receipt: Some(crate::plan::CostReceipt::compute(
                    &crate::plan::policy::ReceiptInput {
                        tokens_before: 100,
                        tokens_after: 10,
                        cached_prefix_kept: 3,
                        rounds: 7,
                        ..Default::default()
                    },
                    &crate::plan::CostPolicy::default(),
                )),
                replaces_through_id: "m1".into(),
                summary: "[summary]".into(),
                summarizer: None,
                attempts: Vec::new(),
                tokens_after: 10,
                tokens_before: 100,
                usage: crate::usage::Usage::default(),
            }),
        ];
        for record in records {
            let line = encode_line("e1", "2026-01-01T00:00:00.000000Z", &record).unwrap();
            let (id, decoded) = decode_line(&line).unwrap();
            assert_eq!(id, "e1");
            let expected = match record {
                Record::Message(m) => Record::Message(m.with_id("e1")),
                other => other,
            };
            assert_eq!(decoded, expected);
            // Without the newline too, and the same bytes when encoded again.
            let (_, again) = decode_line(line.trim_end()).unwrap();
            assert_eq!(encode_line("e1", "2026-01-01T00:00:00.000000Z", &again).unwrap(), line);
        }
        assert!(decode_line("not json").unwrap_err().contains("not JSON"));
        assert!(decode_line("{\"v\":1}").is_err());
    }
}
