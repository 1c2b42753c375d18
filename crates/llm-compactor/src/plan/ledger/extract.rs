//! [`extract`]: one pass over the replaced messages, building the [`Ledger`].

use std::collections::HashMap;

use serde_json::Value;

use super::call_args::{COMMAND_KEYS, EDITOR_COMMANDS, PATH_KEYS, URL_KEYS, argv_command};
use super::carry::parse_rendered;
use super::command::{cap_chars, command_head, command_paths, op_of_tool};
use super::hosted::{Hosted, hosted};
use super::pin_rules::PinMatcher;
use super::pins::split_pinned;
use super::repeats::{drop_said_again, push_repeated};
use super::scan::{self, bash_blocks, code_spans, error_lines, exit_status, is_path, trim_token, urls};
use super::supersede::mark_superseded;
use super::{CommandFact, ErrorFact, FileFact, Ledger, LedgerRules};
use crate::message::{Content, Message, Part, Role};
use crate::plan::SUMMARY_HEADER;
use crate::plan::handle::handle_of;

/// Extracts the ledger of `messages[i]` for every `i` in `indices` (the middle, in
/// order). Pure and deterministic; never fails (unparseable arguments are read as
/// text).
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::ledger::{extract, LedgerRules};
///
/// let messages = vec![
///     Message::user("Fix the crash in parser.py"),
///     Message::assistant("Running the tests.")
///         .with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"command":"pytest tests/test_parser.py"}"#)]),
///     Message::tool("c1", "<returncode>1</returncode>\nFAILED tests/test_parser.py::test_empty - KeyError"),
/// ];
/// let ledger = extract(&messages, &[0, 1, 2], &LedgerRules::default());
/// assert_eq!(ledger.last_user.as_deref(), Some("Fix the crash in parser.py"));
/// assert_eq!(ledger.commands[0].exit, Some(1));
/// assert!(ledger.errors[0].open);
/// assert_eq!(ledger.files[0].path, "tests/test_parser.py");
/// ```
pub fn extract(messages: &[Message], indices: &[usize], rules: &LedgerRules) -> Ledger {
    let mut builder = Builder {
        rules,
        // Patterns are checked where the rules are configured (`OptionsOverlay`); one
        // that slipped through pins nothing rather than failing a pass.
        custom_pins: (!rules.pins.is_empty()).then(|| rules.pins.compile().ok()).flatten(),
        tool_names: HashMap::new(),
        messages,
        ledger: Ledger::default(),
        file_index: HashMap::new(),
        command_index: HashMap::new(),
        shown_index: HashMap::new(),
        pending: HashMap::new(),
        last_text_command: None,
        carried_first: None,
        carried_last: None,
    };
    for &i in indices {
        if let Some(message) = messages.get(i) {
            builder.message(i, message);
        }
    }
    let mut ledger = std::mem::take(&mut builder.ledger);
    if let Some(last) = &ledger.last_user {
        drop_said_again(&mut ledger.earlier_users, &one_line(last, rules.earlier_user_chars));
    }
    // What the user says after the replaced messages (the recent window) may replace
    // what they said in them.
    let after = indices.last().map_or(0, |&i| i + 1);
    for later in messages
        .iter()
        .skip(after)
        .filter(|m| m.role == Role::User && !m.is_sticky())
    {
        let text = later.text();
        if !text.starts_with(SUMMARY_HEADER) && !is_observation(&text) {
            let (_, rest) = split_pinned(&text);
            mark_superseded(&mut ledger.earlier_users, &rest);
            mark_superseded(&mut ledger.pinned, &rest);
            if let Some(last) = ledger.last_user.take() {
                let mut one = vec![last];
                mark_superseded(&mut one, &rest);
                ledger.last_user = one.pop();
            }
        }
    }
    let excess = ledger.identifiers.len().saturating_sub(rules.max_identifiers);
    ledger.identifiers.drain(..excess);
    if rules.handles {
        name_handles(&mut ledger, messages);
        let originals = |seq: &usize| {
            messages
                .get(*seq)
                .filter(|m| !m.text().starts_with(SUMMARY_HEADER))
                .map(|m| handle_of(*seq, m))
        };
        let first = builder.carried_first.or_else(|| indices.iter().find_map(originals));
        let last = indices.iter().rev().find_map(originals).or(builder.carried_last);
        ledger.originals = first.zip(last);
    }
    ledger
}

/// `fact` is resolved at `seq`; with handles, it keeps naming the message that showed it
/// (the error's text is there, not in the run that fixed it).
fn resolve(fact: &mut ErrorFact, seq: usize, messages: &[Message], handles: bool) {
    if handles && fact.handle.is_none() {
        fact.handle = messages.get(fact.last_seen).map(|m| handle_of(fact.last_seen, m));
    }
    fact.open = false;
    fact.last_seen = seq;
}

/// Gives every fact without a handle (one this pass saw, not one carried from an earlier
/// summary and untouched since) the handle of the message it was last seen in.
fn name_handles(ledger: &mut Ledger, messages: &[Message]) {
    let handle = |seq: usize| messages.get(seq).map(|m| handle_of(seq, m));
    for fact in &mut ledger.files {
        fact.handle = fact.handle.take().or_else(|| handle(fact.last_seen));
    }
    for fact in &mut ledger.commands {
        fact.handle = fact.handle.take().or_else(|| handle(fact.last_seen));
    }
    for fact in &mut ledger.errors {
        fact.handle = fact.handle.take().or_else(|| handle(fact.last_seen));
    }
}

struct Builder<'a> {
    rules: &'a LedgerRules,
    /// The user's configured pins, compiled (none configured: `None`).
    custom_pins: Option<PinMatcher>,
    /// tool_call_id -> the called tool's name (for pins by tool name).
    tool_names: HashMap<String, String>,
    messages: &'a [Message],
    ledger: Ledger,
    file_index: HashMap<String, usize>,
    command_index: HashMap<String, usize>,
    /// The shown head of a command -> its fact.
    shown_index: HashMap<String, usize>,
    /// tool_call_id -> the command it ran (when it ran one).
    pending: HashMap<String, Option<String>>,
    /// The last command of a text-format (mini-swe-agent) turn, awaiting its observation.
    last_text_command: Option<String>,
    /// The range of originals an earlier summary named (its first and last handle).
    carried_first: Option<String>,
    carried_last: Option<String>,
}

fn is_observation(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<returncode>")
        || t.starts_with("<output>")
        || t.starts_with("Observation:")
        || t.starts_with("OBSERVATION:")
}

fn one_line(text: &str, cap: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cap_chars(&joined, cap)
}

impl Builder<'_> {
    fn message(&mut self, seq: usize, message: &Message) {
        let text = message.text();
        if text.starts_with(SUMMARY_HEADER) {
            // An earlier summary: not a user request. Its ledger's facts are carried
            // forward, dated at its position (see [`super::carry`]).
            if let Some(prior) = parse_rendered(&text) {
                self.carry(seq, prior);
            }
            return;
        }
        if message.role != Role::User {
            // A pinned tool result (or turn) still shows its facts: go on either way.
            self.custom_pin(message, &text);
        }
        match message.role {
            Role::User if is_observation(&text) => {
                let command = self.last_text_command.take();
                self.result(seq, command, &text);
            }
            Role::User => self.user(message, &text),
            Role::Assistant => self.assistant(seq, message, &text),
            Role::Tool => {
                let command = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.pending.remove(id))
                    .flatten()
                    .or_else(|| self.last_text_command.take());
                self.result(seq, command, &text);
            }
            _ => {}
        }
    }

    /// Folds the facts of an earlier summary's ledger in, as seen at `seq`: what a later
    /// message does to them (a re-run, an edit, a fix) then supersedes or resolves them
    /// by the ordinary rules.
    fn carry(&mut self, seq: usize, prior: Ledger) {
        if let Some((first, last)) = prior.originals {
            self.carried_first.get_or_insert(first);
            self.carried_last = Some(last);
        }
        if let Some(previous) = self.ledger.last_user.take() {
            push_repeated(
                &mut self.ledger.earlier_users,
                one_line(&previous, self.rules.earlier_user_chars),
            );
        }
        for line in prior.earlier_users {
            push_repeated(&mut self.ledger.earlier_users, line);
        }
        for pin in prior.pinned {
            push_repeated(&mut self.ledger.pinned, pin);
        }
        if prior.last_user.is_some() {
            self.ledger.last_user = prior.last_user;
        }
        for fact in prior.files {
            for op in &fact.operations {
                self.file(seq, &fact.path, op);
            }
            if let Some(&i) = self.file_index.get(&fact.path) {
                self.ledger.files[i].handle = fact.handle;
            }
        }
        for fact in prior.commands {
            let i = match self.shown_index.get(&fact.command) {
                Some(&i) => {
                    let known = &mut self.ledger.commands[i];
                    known.runs += fact.runs;
                    known.exit = fact.exit;
                    i
                }
                None => {
                    self.shown_index
                        .insert(fact.command.clone(), self.ledger.commands.len());
                    self.ledger.commands.push(CommandFact {
                        command: fact.command.clone(),
                        ..fact.clone()
                    });
                    self.ledger.commands.len() - 1
                }
            };
            self.ledger.commands[i].last_seen = seq;
            self.ledger.commands[i].handle = fact.handle;
        }
        for fact in prior.errors {
            match self.ledger.errors.iter_mut().find(|e| e.text == fact.text) {
                Some(known) => {
                    known.open = fact.open;
                    known.last_seen = seq;
                    known.handle = fact.handle;
                }
                None => self.ledger.errors.push(ErrorFact { last_seen: seq, ..fact }),
            }
        }
        for id in prior.identifiers {
            self.identifier(id);
        }
    }

    fn user(&mut self, message: &Message, text: &str) {
        let (pins, rest) = split_pinned(text);
        for pin in pins {
            push_repeated(&mut self.ledger.pinned, cap_chars(&pin, self.rules.pinned_chars));
        }
        if rest.is_empty() {
            return;
        }
        let pinned = self.custom_pin(message, &rest);
        if let Some(previous) = self.ledger.last_user.take() {
            push_repeated(
                &mut self.ledger.earlier_users,
                one_line(&previous, self.rules.earlier_user_chars),
            );
        }
        if pinned {
            // Pinned whole: not also one of the user's lines (nor is an older one
            // presented as the last request).
            return;
        }
        mark_superseded(&mut self.ledger.earlier_users, &rest);
        mark_superseded(&mut self.ledger.pinned, &rest);
        self.ledger.last_user = Some(cap_chars(&rest, self.rules.last_user_chars));
    }

    /// Pins `text` (`message`'s, or a user turn's own words) when a configured rule
    /// says so; true when it did.
    fn custom_pin(&mut self, message: &Message, text: &str) -> bool {
        let Some(matcher) = &self.custom_pins else {
            return false;
        };
        let tool_name = message
            .tool_call_id
            .as_ref()
            .and_then(|id| self.tool_names.get(id))
            .map(String::as_str)
            .or(message.name.as_deref());
        let Some(pin) = matcher.pinned_text(message, text, tool_name) else {
            return false;
        };
        if message.role == Role::User {
            // A pinned correction still replaces what it corrects, pinned or not.
            mark_superseded(&mut self.ledger.earlier_users, &pin);
            mark_superseded(&mut self.ledger.pinned, &pin);
        }
        push_repeated(&mut self.ledger.pinned, cap_chars(&pin, self.rules.pinned_chars));
        true
    }

    fn assistant(&mut self, seq: usize, message: &Message, text: &str) {
        if self.custom_pins.is_some() {
            for call in &message.tool_calls {
                self.tool_names.insert(call.id.clone(), call.name.clone());
            }
        }
        for call in &message.tool_calls {
            let command = self.tool_call(seq, &call.name, &call.arguments);
            self.pending.insert(call.id.clone(), command);
        }
        if let Content::Parts(parts) = &message.content {
            for part in parts {
                if let Part::Other(value) = part {
                    self.hosted(seq, value);
                }
            }
        }
        if message.tool_calls.is_empty() {
            if let Some(block) = bash_blocks(text).into_iter().last() {
                self.command(seq, block);
                self.last_text_command = Some(block.to_owned());
            }
        }
        let mut found: Vec<String> = Vec::new();
        for span in code_spans(text) {
            let span = span.trim();
            let core = trim_token(span);
            if scan::is_code_identifier(core) || scan::is_test_name(core) {
                found.push(core.to_owned());
            }
        }
        found.extend(urls(text).map(str::to_owned));
        for id in found {
            self.identifier(id);
        }
    }

    /// `id` is the newest identifier (moved to the end when it was known).
    fn identifier(&mut self, id: String) {
        if let Some(pos) = self.ledger.identifiers.iter().position(|x| *x == id) {
            self.ledger.identifiers.remove(pos);
        }
        self.ledger.identifiers.push(id);
    }

    /// Records a server-side tool's call or result (see [`super::hosted`]).
    fn hosted(&mut self, seq: usize, part: &Value) {
        match hosted(part) {
            Some(Hosted::Call { id, name, arguments }) => {
                let command = self.tool_call(seq, &name, &arguments);
                self.pending.insert(id, command);
            }
            Some(Hosted::Result { id, text, error }) => {
                let command = self.pending.remove(&id).flatten();
                self.result(seq, command.clone(), &text);
                self.marked_error(seq, command, error);
            }
            Some(Hosted::Answered {
                name,
                arguments,
                text,
                error,
            }) => {
                let command = self.tool_call(seq, &name, &arguments);
                self.result(seq, command.clone(), &text);
                self.marked_error(seq, command, error);
            }
            None => {}
        }
    }

    /// Records the error a provider marked a result with, in its own words (capped as
    /// [`error_lines`] caps), as an open error.
    fn marked_error(&mut self, seq: usize, command: Option<String>, error: Option<String>) {
        if let Some(error) = error {
            self.open_error(seq, error.chars().take(self.rules.error_chars).collect(), command);
        }
    }

    /// `text` is an open error as of `seq`, shown by `command`: a known one is reopened.
    fn open_error(&mut self, seq: usize, text: String, command: Option<String>) {
        match self.ledger.errors.iter_mut().find(|e| e.text == text) {
            Some(fact) => {
                fact.open = true;
                fact.last_seen = seq;
                fact.command = command;
                fact.handle = None;
            }
            None => self.ledger.errors.push(ErrorFact {
                text,
                open: true,
                command,
                last_seen: seq,
                handle: None,
            }),
        }
    }

    /// Records one tool call; returns the shell command it ran, if any.
    fn tool_call(&mut self, seq: usize, name: &str, arguments: &str) -> Option<String> {
        let args: Option<serde_json::Map<String, Value>> = serde_json::from_str(arguments).ok();
        let Some(args) = args else {
            // Not a JSON object: a raw command string for a shell-ish tool.
            let lower = name.to_ascii_lowercase();
            if ["bash", "shell", "sh", "exec", "run", "terminal"]
                .iter()
                .any(|k| lower.contains(k))
                && !arguments.trim().is_empty()
            {
                self.command(seq, arguments.trim());
                return Some(arguments.trim().to_owned());
            }
            return None;
        };
        let lower = name.to_ascii_lowercase();
        let sub = args.get("command").and_then(Value::as_str).unwrap_or("");
        let editor_op = EDITOR_COMMANDS.iter().find(|(c, _)| *c == sub).map(|(_, op)| *op);
        let path_op = editor_op.unwrap_or_else(|| op_of_tool(&lower));
        let mut paths = Vec::new();
        for key in PATH_KEYS {
            match args.get(*key) {
                Some(Value::String(p)) if !p.trim().is_empty() && p.len() <= 300 => paths.push(p.trim().to_owned()),
                Some(Value::Array(items)) => {
                    paths.extend(items.iter().filter_map(Value::as_str).map(|p| p.trim().to_owned()));
                }
                _ => {}
            }
        }
        for path in paths {
            self.file(seq, &path, path_op);
        }
        for key in URL_KEYS {
            let values = match args.get(*key) {
                Some(Value::String(url)) => vec![url.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for url in values.into_iter().flat_map(urls) {
                self.identifier(url.to_owned());
            }
        }
        if editor_op.is_some() {
            return None;
        }
        for key in COMMAND_KEYS {
            let command = match args.get(*key) {
                Some(Value::String(command)) => Some(command.trim().to_owned()),
                Some(Value::Array(argv)) => argv_command(argv),
                _ => None,
            };
            if let Some(command) = command.filter(|c| !c.is_empty()) {
                self.command(seq, &command);
                return Some(command);
            }
        }
        None
    }

    fn command(&mut self, seq: usize, command: &str) {
        let shown = command_head(command, self.rules.command_chars);
        // Near-duplicates (the same head: a heredoc rewriting one file) are one fact.
        let known = self
            .command_index
            .get(command)
            .or_else(|| self.shown_index.get(&shown))
            .copied();
        match known {
            Some(i) => {
                self.command_index.insert(command.to_owned(), i);
                let fact = &mut self.ledger.commands[i];
                fact.runs += 1;
                fact.last_seen = seq;
                fact.exit = None;
                fact.handle = None;
            }
            None => {
                let i = self.ledger.commands.len();
                self.command_index.insert(command.to_owned(), i);
                self.shown_index.insert(shown.clone(), i);
                self.ledger.commands.push(CommandFact {
                    command: shown,
                    exit: None,
                    runs: 1,
                    last_seen: seq,
                    handle: None,
                });
            }
        }
        for (path, op) in command_paths(command) {
            self.file(seq, path, op);
        }
    }

    fn file(&mut self, seq: usize, path: &str, op: &str) {
        match self.file_index.get(path) {
            Some(&i) => {
                let fact = &mut self.ledger.files[i];
                if !fact.operations.iter().any(|o| o == op) {
                    fact.operations.push(op.to_owned());
                }
                fact.last_seen = seq;
                fact.handle = None;
            }
            None => {
                self.file_index.insert(path.to_owned(), self.ledger.files.len());
                self.ledger.files.push(FileFact {
                    path: path.to_owned(),
                    operations: vec![op.to_owned()],
                    last_seen: seq,
                    handle: None,
                });
            }
        }
    }

    fn result(&mut self, seq: usize, command: Option<String>, text: &str) {
        let exit = exit_status(text);
        if let Some(command) = &command {
            if let Some(&i) = self.command_index.get(command) {
                self.ledger.commands[i].exit = exit;
            }
        }
        let errors = error_lines(text, self.rules.error_chars);
        // A later clean run of the same command resolves what it showed before.
        if exit == Some(0) {
            if let Some(command) = &command {
                for fact in self.ledger.errors.iter_mut() {
                    if fact.open && fact.command.as_deref() == Some(command) && !errors.contains(&fact.text) {
                        resolve(fact, seq, self.messages, self.rules.handles);
                    }
                }
            }
        }
        // `PASSED x::test_y` (or `-v`'s `x::test_y PASSED`) resolves a failing `x::test_y`.
        for line in text.lines() {
            if let Some(test) = scan::passed_test(line.trim()) {
                for fact in self.ledger.errors.iter_mut() {
                    if fact.open && scan::test_of(&fact.text) == Some(test) {
                        resolve(fact, seq, self.messages, self.rules.handles);
                    }
                }
            }
        }
        // A clean pytest run (`=== 75 passed in 0.42s ===`) resolves the failing tests it
        // covered: the whole suite when its command names no test file, else the tests of
        // the files its command or its output names. (A clean run of `pytest
        // tests/test_tax.py` says nothing about `tests/test_pricing.py`.)
        if text.lines().any(|line| scan::is_clean_test_summary(line.trim())) {
            let command = command.as_deref().unwrap_or("");
            let whole_suite = !command.is_empty() && !command.contains(".py") && !command.contains("::");
            for fact in self.ledger.errors.iter_mut().filter(|fact| fact.open) {
                let Some(test) = scan::test_of(&fact.text) else {
                    continue;
                };
                let file = test.split("::").next().unwrap_or(test);
                if whole_suite || command.contains(file) || text.contains(file) {
                    resolve(fact, seq, self.messages, self.rules.handles);
                }
            }
        }
        for error in errors {
            self.open_error(seq, error, command.clone());
        }
        // Short listings (`find`, `grep -l`) name the files they found.
        let listed: Vec<&str> = text
            .lines()
            .take(200)
            .map(str::trim)
            .filter(|l| !l.contains(' ') && is_path(trim_token(l)))
            .map(trim_token)
            .collect();
        if !listed.is_empty() && listed.len() <= 10 {
            for path in listed {
                self.file(seq, path, "listed");
            }
        }
    }
}

#[cfg(test)]
mod tests;
