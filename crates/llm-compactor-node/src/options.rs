//! The options object of `compact` / `countTokens`: the library's options overlay
//! ([`OptionsOverlay`], the CLI's flags) in JavaScript's spelling (camelCase), plus this
//! binding's own `format` and `system`. Unknown keys are refused, naming them, so that a
//! misspelt option never silently does nothing.

use std::sync::Arc;

use llm_compactor::Compactor;
use llm_compactor::count::TokenCounter;
use llm_compactor::format::caller::{WireFormat, parse_format};
use llm_compactor::options::OptionsOverlay;
use serde_json::{Map, Value};

/// Every option: the overlay's (`None` meaning "the library's default") and the reading
/// of the messages.
#[derive(Debug, Default)]
pub struct Options {
    /// The library's options (`budget`, `triggerRatio`, `summarizer`, `target`, ...).
    pub overlay: OptionsOverlay,
    /// `auto` (the default), `openai`, `anthropic`, `responses` or `mini-swe-agent`.
    pub format: Option<String>,
    /// Anthropic's `system` beside a bare list of turns.
    pub system: Option<Value>,
}

impl Options {
    /// Reads the caller's options object (absent: every default).
    pub fn read(value: Option<Value>) -> Result<Options, String> {
        let mut object = match value {
            None | Some(Value::Null) => return Ok(Options::default()),
            Some(Value::Object(object)) => object,
            Some(other) => return Err(format!("invalid option: expected an object, got {other}")),
        };
        let format = match object.remove("format") {
            None | Some(Value::Null) => None,
            Some(Value::String(format)) => Some(format),
            Some(other) => return Err(format!("invalid option: format must be a string, got {other}")),
        };
        let system = object.remove("system").filter(|v| !v.is_null());
        let snake: Map<String, Value> = object
            .into_iter()
            .map(|(key, value)| (snake_case(&key), value))
            .collect();
        let overlay = serde_json::from_value(Value::Object(snake))
            .map_err(|e| format!("invalid option: {}", camel_names(&e.to_string())))?;
        Ok(Options {
            overlay,
            format,
            system,
        })
    }

    /// The format to read messages in (`None`: detect).
    pub fn format(&self) -> Result<Option<WireFormat>, String> {
        parse_format(self.format.as_deref().unwrap_or("auto"))
    }

    /// The named counter (`o200k` unless named).
    pub fn counter(&self) -> Result<Arc<dyn TokenCounter>, String> {
        self.overlay.counter().map_err(|e| camel_names(&e.to_string()))
    }

    /// The compactor these options describe (`summarizer`: `ledger` by default).
    pub fn compactor(&self) -> Result<Compactor, String> {
        let summarizer = self.overlay.summarizer().map_err(|e| camel_names(&e.to_string()))?;
        self.overlay
            .compactor(self.counter()?, summarizer)
            .map_err(|e| camel_names(&e.to_string()))
    }
}

/// `triggerRatio` as the overlay spells it (`trigger_ratio`). A key already spelt with
/// an underscore is kept, and so refused as unknown (JavaScript's names are camelCase).
fn snake_case(key: &str) -> String {
    if key.contains('_') {
        return format!("{key}_");
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A message of the overlay's with its option names (words in backticks, and the
/// overlay's snake_case names) in camelCase.
fn camel_names(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    for c in message.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        out.push_str(&camel_word(&word));
        word.clear();
        out.push(c);
    }
    out.push_str(&camel_word(&word));
    out
}

/// `trigger_ratio` as `triggerRatio`; a word without an inner underscore as it is (a
/// key the caller spelt with one comes back as given, its trailing `_` dropped).
fn camel_word(word: &str) -> String {
    if let Some(given) = word.strip_suffix('_') {
        return given.to_owned();
    }
    let mut out = String::with_capacity(word.len());
    let mut upper = false;
    for c in word.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_travel_in_both_spellings() {
        assert_eq!(snake_case("triggerRatio"), "trigger_ratio");
        assert_eq!(snake_case("budget"), "budget");
        assert_eq!(camel_word("trigger_ratio"), "triggerRatio");
        let options = Options::read(Some(serde_json::json!({"keepRecent": 3, "format": "openai"}))).unwrap();
        assert_eq!(options.overlay.keep_recent, Some(3));
        assert_eq!(options.format.as_deref(), Some("openai"));
        let misspelt = Options::read(Some(serde_json::json!({"keep_recent": 3}))).unwrap_err();
        assert!(
            misspelt.contains("unknown field `keep_recent`") && misspelt.contains("`keepRecent`"),
            "{misspelt}"
        );
        let budgett = Options::read(Some(serde_json::json!({"budgett": 3}))).unwrap_err();
        assert!(budgett.contains("`budgett`"), "{budgett}");
    }
}
