//! Media in a message: what an image, an audio clip or a file costs in context.
//!
//! Why a rule of its own: a part the crate does not model ([`Part::Other`]) is counted
//! by its compact JSON, and for text-like parts (a citation, a search result) that is a
//! fair stand-in for what the model reads. For media it is not. A screenshot travels as
//! a base64 string of hundreds of kilobytes, which a tokenizer would count as ~100k
//! tokens or more, while the provider bills it by its pixels: Anthropic about
//! `width × height / 750` tokens, at most ~1,600 for an image at its size limit;
//! OpenAI 85 + 170 per 512-pixel tile. Counting the base64 would make one screenshot
//! look like a full window, so an agent that sends them (computer use, browser agents)
//! would be compacted on every turn, and the aging of old screenshots would reclaim
//! "tokens" that were never billed.
//!
//! So, in a [`Part::Other`]:
//!
//! - a **media part** is one whose `type` names media ([`MEDIA_PART_TYPES`]: an image,
//!   audio, a file or document, by URL, file id or inline, or a generated image);
//! - a **payload** is a string that carries binary data inline: anywhere in a part, a
//!   `data:` URL with `;base64` ending its header; in a media part, also a string of at
//!   least [`MIN_PAYLOAD_BYTES`] bytes made only of the base64 alphabets
//!   (`A-Z a-z 0-9 + / - _ =`, line breaks allowed). Long base64 in other parts (the
//!   encrypted content of a search result or of redacted reasoning) stands for text the
//!   model reads, and is counted as it was;
//! - a media part costs [`MEDIA_PART_TOKENS`] per payload (at least one for a media
//!   type, so an image by URL is not counted as its URL's few tokens), plus the compact
//!   JSON of the part with each payload written as an empty string (its `type`, a
//!   `media_type`, a `detail`, a file name);
//! - but a payload that is a PDF costs [`PDF_PAGE_TOKENS`] per page
//!   ([`super::pdf`]: its pages read from its page objects, or estimated from its size),
//!   in units of [`MEDIA_PART_TOKENS`] rounded up;
//! - a document whose source is text (`"source": {"type": "text"}`) is not media: it is
//!   counted as the text it holds.
//!
//! The figure is an estimate, the same for every image (the counter does not decode
//! pixels): Anthropic's largest image, and above any OpenAI image at `detail: low`. A
//! PDF is billed per page (text and an image of each), hence its own figure; a PDF by
//! URL or file id, whose pages the counter cannot see, counts as one unit.
//! The calibrated counter replaces the estimate with the provider's bill as soon as one
//! is known. The counters agree with each other: the heuristic sees
//! [`MEDIA_PART_CHARS`] chars per payload (four chars a token), the exact counters
//! [`MEDIA_PART_TOKENS`] tokens.
//!
//! [`Part::Other`]: crate::message::Part::Other

use std::borrow::Cow;

use serde_json::Value;

use super::pdf::{PDF_PAGE_TOKENS, pdf_pages};

/// Tokens one image, audio clip or file in a message is counted as (see the module
/// docs for why a flat figure, and why this one).
pub const MEDIA_PART_TOKENS: usize = 1_600;

/// Chars one media payload is counted as by char-based measures (the heuristic counter,
/// the aging thresholds): [`MEDIA_PART_TOKENS`] at four chars a token.
pub const MEDIA_PART_CHARS: usize = 4 * MEDIA_PART_TOKENS;

/// The shortest string taken as an inline base64 payload when it is not a `data:` URL:
/// 1 KiB of base64 is 768 bytes of data, below any real image and above any identifier
/// or hash a part carries as text.
pub const MIN_PAYLOAD_BYTES: usize = 1_024;

/// Part `type`s that are media whatever they carry (a URL, a file id or the data).
pub const MEDIA_PART_TYPES: [&str; 10] = [
    "image",
    "image_url",
    "input_image",
    "input_audio",
    "input_file",
    "file",
    "document",
    "audio",
    "video",
    "image_generation_call",
];

/// True when `text` is a `data:` URL of base64 data.
///
/// ```
/// use llm_compactor::message::media::is_data_url;
/// assert!(is_data_url("data:image/png;base64,iVBORw0KGgo="));
/// assert!(!is_data_url("data:text/plain,hello"));
/// assert!(!is_data_url("https://example.com/cat.png"));
/// ```
pub fn is_data_url(text: &str) -> bool {
    // The header ends at the first comma; base64 data says so in it.
    text.strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .is_some_and(|(header, _)| header.ends_with(";base64"))
}

/// True when `text` is bare base64 of at least [`MIN_PAYLOAD_BYTES`] bytes (line
/// breaks allowed): data, in a media part.
///
/// ```
/// use llm_compactor::message::media::is_bare_base64;
/// assert!(is_bare_base64(&"QUJD".repeat(300)));
/// assert!(!is_bare_base64("QUJD"));
/// assert!(!is_bare_base64(&"word ".repeat(300)));
/// ```
pub fn is_bare_base64(text: &str) -> bool {
    text.len() >= MIN_PAYLOAD_BYTES
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=' | b'\n' | b'\r'))
}

fn is_payload(text: &str, in_media: bool) -> bool {
    is_data_url(text) || in_media && is_bare_base64(text)
}

/// A part whose `type` is media, but for a document whose source is text (Anthropic's
/// plain-text and custom-content documents), which is read as the text it holds.
///
/// ```
/// use llm_compactor::message::media::is_media_type;
/// use serde_json::json;
/// assert!(is_media_type(&json!({"type": "image", "source": {"type": "base64", "data": ""}})));
/// assert!(!is_media_type(&json!({"type": "document", "source": {"type": "text", "data": "hi"}})));
/// assert!(!is_media_type(&json!({"type": "search_result"})));
/// ```
pub fn is_media_type(value: &Value) -> bool {
    let text_source = value
        .get("source")
        .and_then(|source| source.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind == "text" || kind == "content");
    !text_source
        && value
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| MEDIA_PART_TYPES.contains(&kind))
}

/// A [`crate::message::Part::Other`] value as it is counted: the value with every
/// inline payload written as an empty string, and how many media units it costs
/// ([`MEDIA_PART_TOKENS`] each). A value without payloads is borrowed unchanged (with
/// one unit if its type is media, else none).
///
/// ```
/// use llm_compactor::message::media::counted_view;
/// use serde_json::json;
/// let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD".repeat(5000)}});
/// let (view, units) = counted_view(&image);
/// assert_eq!(units, 1);
/// assert_eq!(view.as_ref(), &json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}));
/// let by_url = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
/// assert_eq!(counted_view(&by_url), (std::borrow::Cow::Borrowed(&by_url), 1));
/// let citation = json!({"type": "search_result", "title": "t"});
/// assert_eq!(counted_view(&citation).1, 0);
/// ```
pub fn counted_view(value: &Value) -> (Cow<'_, Value>, usize) {
    let media = is_media_type(value);
    let payloads = count_payloads(value, media);
    let units = if media { payloads.max(1) } else { payloads };
    if payloads == 0 {
        return (Cow::Borrowed(value), units);
    }
    (Cow::Owned(blanked(value, media)), units)
}

/// Chars of a [`crate::message::Part::Other`] value as char-based measures see it: its
/// compact JSON with payloads blanked, plus [`MEDIA_PART_CHARS`] per media unit.
pub fn other_part_chars(value: &Value) -> usize {
    let (view, units) = counted_view(value);
    let json = serde_json::to_string(view.as_ref())
        .map(|s| s.chars().count())
        .unwrap_or(0);
    json + units * MEDIA_PART_CHARS
}

/// Tokens of a [`crate::message::Part::Other`] value under `count_text`: its compact JSON
/// with payloads blanked, plus [`MEDIA_PART_TOKENS`] per media unit.
pub fn other_part_tokens(value: &Value, count_text: &dyn Fn(&str) -> usize) -> usize {
    let (view, units) = counted_view(value);
    count_text(&serde_json::to_string(view.as_ref()).unwrap_or_default()) + units * MEDIA_PART_TOKENS
}

/// What a reader (the summarizer, the grounding gate) can use of a
/// [`crate::message::Part::Other`] value: the value with inline media data blanked (as
/// [`counted_view`]) and without members named `encrypted_*` or `signature` (the
/// encrypted page content of an Anthropic web search result, a reasoning signature),
/// which no reader can decode.
///
/// ```
/// use llm_compactor::message::media::readable_view;
/// use serde_json::json;
/// let result = json!({"type": "web_search_result", "url": "https://a.example", "encrypted_content": "EqgfCio"});
/// assert_eq!(readable_view(&result), json!({"type": "web_search_result", "url": "https://a.example"}));
/// ```
pub fn readable_view(value: &Value) -> Value {
    // The view only: what the payloads cost (a PDF's pages, decoded) is not asked here.
    let media = is_media_type(value);
    let mut view = if has_payload(value, media) {
        blanked(value, media)
    } else {
        value.clone()
    };
    drop_unreadable(&mut view);
    view
}

fn drop_unreadable(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|key, _| !key.starts_with("encrypted") && key != "signature");
            members.values_mut().for_each(drop_unreadable);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_unreadable),
        _ => {}
    }
}

fn count_payloads(value: &Value, in_media: bool) -> usize {
    match value {
        Value::String(text) if is_payload(text, in_media) => payload_units(text),
        Value::Array(items) => items.iter().map(|item| count_payloads(item, in_media)).sum(),
        Value::Object(members) => members.values().map(|member| count_payloads(member, in_media)).sum(),
        _ => 0,
    }
}

fn has_payload(value: &Value, in_media: bool) -> bool {
    match value {
        Value::String(text) => is_payload(text, in_media),
        Value::Array(items) => items.iter().any(|item| has_payload(item, in_media)),
        Value::Object(members) => members.values().any(|member| has_payload(member, in_media)),
        _ => false,
    }
}

/// The media units of one payload: one, or a PDF's pages at [`PDF_PAGE_TOKENS`] each.
fn payload_units(payload: &str) -> usize {
    pdf_pages(payload).map_or(1, |pages| {
        pages.saturating_mul(PDF_PAGE_TOKENS).div_ceil(MEDIA_PART_TOKENS)
    })
}

/// A copy of `value` with every payload written as an empty string, made without
/// copying the payloads first (a screenshot is hundreds of kilobytes, and a count of a
/// conversation of screenshots would copy each of them).
fn blanked(value: &Value, in_media: bool) -> Value {
    match value {
        Value::String(text) if is_payload(text, in_media) => Value::String(String::new()),
        Value::Array(items) => Value::Array(items.iter().map(|item| blanked(item, in_media)).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, member)| (key.clone(), blanked(member, in_media)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_data_url_is_a_payload_only_when_its_header_says_base64() {
        assert!(is_data_url("data:image/jpeg;base64,/9j/4AAQ"));
        assert!(is_data_url("data:;base64,"));
        assert!(!is_data_url("data:text/plain,hello"));
        assert!(!is_data_url("data:text/plain,a;base64,b"));
        assert!(!is_data_url("data:"));
    }

    #[test]
    fn a_bare_string_is_base64_from_the_minimum_length_and_only_in_the_base64_alphabets() {
        let just = "A".repeat(MIN_PAYLOAD_BYTES);
        assert!(is_bare_base64(&just));
        assert!(!is_bare_base64(&just[1..]));
        assert!(is_bare_base64(&format!(
            "{}\r\n{}==",
            "a/b+".repeat(200),
            "-_09".repeat(200)
        )));
        for odd in [' ', '.', '"', 'é', '\t'] {
            assert!(!is_bare_base64(&format!("{just}{odd}")), "{odd:?}");
        }
    }

    #[test]
    fn bare_base64_is_data_only_in_a_media_part() {
        let data = "QUJD".repeat(2_000);
        let redacted = json!({"type": "redacted_thinking", "data": data});
        assert_eq!(counted_view(&redacted), (Cow::Borrowed(&redacted), 0));
        let generated = json!({"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": data});
        assert_eq!(counted_view(&generated).1, 1);
        let file = json!({"type": "input_file", "filename": "a.pdf", "file_data": data});
        assert_eq!(
            counted_view(&file),
            (
                Cow::Owned(json!({"type": "input_file", "filename": "a.pdf", "file_data": ""})),
                1
            )
        );
    }

    #[test]
    fn every_payload_in_a_part_is_one_unit_and_is_blanked() {
        let audio = json!({"type": "input_audio", "input_audio": {"data": "UklG".repeat(400), "format": "wav"}});
        let (view, units) = counted_view(&audio);
        assert_eq!(units, 1);
        assert_eq!(
            view.as_ref(),
            &json!({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}})
        );
        let two = json!({"type": "tool_result_images", "items": [
            {"url": "data:image/png;base64,AAAA"}, {"url": "data:image/png;base64,BBBB"}, {"alt": "x"}
        ]});
        assert_eq!(counted_view(&two).1, 2);
        let chars = other_part_chars(&two);
        let blanked = r#"{"type":"tool_result_images","items":[{"url":""},{"url":""},{"alt":"x"}]}"#;
        assert_eq!(chars, blanked.chars().count() + 2 * MEDIA_PART_CHARS);
    }

    #[test]
    fn a_text_document_is_its_text_not_media() {
        let text = json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "A".repeat(2_000)}});
        assert_eq!(counted_view(&text), (Cow::Borrowed(&text), 0));
        let pdf = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE".repeat(500)}});
        assert_eq!(counted_view(&pdf).1, 1);
    }

    #[test]
    fn a_part_without_media_is_counted_as_its_compact_json() {
        let part =
            json!({"type": "web_search_tool_result", "content": [{"title": "Rust", "url": "https://rust-lang.org"}]});
        let json = serde_json::to_string(&part).unwrap();
        assert_eq!(other_part_chars(&part), json.chars().count());
        assert_eq!(other_part_tokens(&part, &|t: &str| t.len()), json.len());
    }

    #[test]
    fn a_screenshot_costs_the_flat_figure_not_its_base64() {
        let data = "iVBORw0KGgo".repeat(40_000); // ~440 KB of base64
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
        let tokens = other_part_tokens(&image, &|t: &str| t.len().div_ceil(4));
        assert!(
            tokens > MEDIA_PART_TOKENS && tokens < MEDIA_PART_TOKENS + 40,
            "{tokens}"
        );
    }
}
