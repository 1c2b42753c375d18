//! Texts as the report quotes them: a message's text with its tool calls, cut to a cap;
//! a summary split into its ledger sections; the billed usage an assistant turn carries.

use llm_compactor::Usage;
use llm_compactor::message::Message;
use llm_compactor::plan::ledger::SECTION_TITLES;
use serde_json::{Map, Value};

use crate::model::SummarySection;

/// The first `max` chars of `text` and how many chars were left out.
pub fn cut(text: &str, max: usize) -> (String, usize) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), 0),
        Some((at, _)) => (text[..at].to_owned(), text[at..].chars().count()),
    }
}

/// A message's text, then one `name(arguments)` line per tool call.
pub fn message_text(message: &Message) -> String {
    let mut text = message.text();
    for call in &message.tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("→ {}({})", call.name, call.arguments));
    }
    text
}

/// A summary split at its markdown headings (`#`, `##`, `###`; inside the ledger, at its
/// own section headings only ([`SECTION_TITLES`]: the verbatim user request it quotes may
/// hold markdown headings of its own)): the text before the first heading is a section without a
/// title. Each body is cut to `max` chars.
pub fn summary_sections(summary: &str, max: usize) -> Vec<SummarySection> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut title = String::new();
    let mut body = String::new();
    let mut in_ledger = false;
    for line in summary.lines() {
        let heading = line.trim_start_matches('#');
        let level = line.len() - heading.len();
        let is_heading = line.starts_with('#')
            && heading.starts_with(' ')
            && level <= 3
            && (!in_ledger || level <= 2 || SECTION_TITLES.iter().any(|t| heading.trim_start().starts_with(t)));
        if is_heading {
            in_ledger = in_ledger || (level == 2 && heading.trim_start().starts_with("Ledger"));
            if !title.is_empty() || !body.trim().is_empty() {
                sections.push((std::mem::take(&mut title), std::mem::take(&mut body)));
            }
            title = heading.trim().to_owned();
            body.clear();
        } else {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(line);
        }
    }
    if !title.is_empty() || !body.trim().is_empty() {
        sections.push((title, body));
    }
    sections
        .into_iter()
        .map(|(title, body)| {
            let (body, cut_chars) = cut(body.trim_end(), max);
            SummarySection { title, body, cut_chars }
        })
        .collect()
}

fn number(object: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| object.get(*k).and_then(Value::as_u64))
}

/// Billed usage from a wire `usage` object: OpenAI chat (`prompt_tokens`, cached in
/// `prompt_tokens_details.cached_tokens` or DeepSeek's `prompt_cache_hit_tokens`), the
/// Responses API (`input_tokens`, `input_tokens_details.cached_tokens`) or Anthropic
/// (`input_tokens` plus `cache_read_input_tokens` and `cache_creation_input_tokens`).
pub fn usage_from(value: &Value) -> Option<Usage> {
    let object = value.as_object()?;
    let output_tokens = number(object, &["completion_tokens", "output_tokens"]).unwrap_or(0);
    if let Some(prompt) = number(object, &["prompt_tokens"]) {
        let cached = object
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64)
            .or_else(|| number(object, &["prompt_cache_hit_tokens"]))
            .unwrap_or(0);
        return Some(Usage {
            input_tokens: prompt,
            output_tokens,
            cache_read_tokens: cached.min(prompt),
            cache_write_tokens: 0,
        });
    }
    let input = number(object, &["input_tokens"])?;
    let read = number(object, &["cache_read_input_tokens"]);
    let write = number(object, &["cache_creation_input_tokens"]);
    if read.is_some() || write.is_some() {
        // Anthropic: input_tokens is the uncached part only.
        let (read, write) = (read.unwrap_or(0), write.unwrap_or(0));
        return Some(Usage {
            input_tokens: input + read + write,
            output_tokens,
            cache_read_tokens: read,
            cache_write_tokens: write,
        });
    }
    let cached = object
        .get("input_tokens_details")
        .and_then(|d| d.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage {
        input_tokens: input,
        output_tokens,
        cache_read_tokens: cached.min(input),
        cache_write_tokens: 0,
    })
}

/// The billed usage an assistant turn recorded in its wire fields: `usage`,
/// `response.usage`, or mini-swe-agent's `extra.response.usage`.
pub fn recorded_usage(message: &Message) -> Option<Usage> {
    let extras = &message.extras;
    extras
        .get("usage")
        .and_then(usage_from)
        .or_else(|| extras.get("response").and_then(|r| r.get("usage")).and_then(usage_from))
        .or_else(|| {
            extras
                .get("extra")
                .and_then(|e| e.get("response"))
                .and_then(|r| r.get("usage"))
                .and_then(usage_from)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cutting_counts_chars_not_bytes() {
        assert_eq!(cut("héllo", 2), ("hé".to_owned(), 3));
        assert_eq!(cut("hi", 5), ("hi".to_owned(), 0));
    }

    #[test]
    fn a_ledger_splits_at_its_headings() {
        let s = "[Summary]\n## Ledger\n### Last user request (verbatim)\n- fix it\n### Steps\n1. run\n### Files touched\n- a.rs (edit)\n### Commands run\n- `ls` ✓";
        let sections = summary_sections(s, 100);
        let titles: Vec<_> = sections.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "",
                "Ledger",
                "Last user request (verbatim)",
                "Files touched",
                "Commands run"
            ]
        );
        assert_eq!(sections[2].body, "- fix it\n### Steps\n1. run");
        assert_eq!(sections[3].body, "- a.rs (edit)");
    }

    #[test]
    fn every_title_of_the_library_s_ledger_starts_a_section() {
        // The report reads the titles from `plan::ledger` (it once held a copy, which
        // lacked the pinned instructions).
        let mut s = format!("{}\n", llm_compactor::plan::ledger::LEDGER_HEADING);
        for title in SECTION_TITLES {
            s.push_str(&format!("### {title}\n- a line\n"));
        }
        let sections = summary_sections(&s, 100);
        assert_eq!(sections.len(), 1 + SECTION_TITLES.len(), "{sections:?}");
        assert!(sections.iter().any(|s| s.title.starts_with("Pinned instructions")));
    }

    #[test]
    fn usage_of_each_wire() {
        let openai =
            json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 60}});
        assert_eq!(
            usage_from(&openai).map(|u| (u.input_tokens, u.cache_read_tokens)),
            Some((100, 60))
        );
        let anthropic = json!({"input_tokens": 10, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 10, "output_tokens": 3});
        assert_eq!(
            usage_from(&anthropic).map(|u| (u.input_tokens, u.cache_read_tokens)),
            Some((100, 80))
        );
        let deepseek = json!({"prompt_tokens": 50, "prompt_cache_hit_tokens": 20});
        assert_eq!(usage_from(&deepseek).map(|u| u.cache_read_tokens), Some(20));
        assert_eq!(usage_from(&json!({"nothing": 1})), None);
    }
}
