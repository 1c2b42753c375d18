//! Helpers of the multi-instance proxy tests: `compactor proxy` child processes, an
//! agent-like client that sends its full growing history, and the checks made on the
//! shared database afterwards.

pub mod observe;
pub mod upstream;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin;

/// A `compactor proxy` child process; SIGKILLed on drop (a failing test leaves no
/// process behind).
pub struct ProxyProcess {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// What it logged on stderr.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl ProxyProcess {
    /// Starts `compactor proxy` on a free port in front of `upstream`, recording into
    /// `store`, with `extra` flags; returns once it listens.
    pub fn start(upstream: &str, store: &str, extra: &[&str]) -> ProxyProcess {
        let mut child = bin()
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream,
                "--store",
                store,
            ])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("compactor proxy starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        let mut url = None;
        // The address line comes first, after at most a few log lines.
        for _ in 0..50 {
            first.clear();
            if stderr.read_line(&mut first).unwrap() == 0 {
                break;
            }
            if let Some(rest) = first.split("listening on ").nth(1) {
                url = rest.split_whitespace().next().map(str::to_owned);
                break;
            }
        }
        let Some(url) = url else {
            let _ = child.kill();
            panic!("compactor proxy did not say where it listens: {first:?}");
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        ProxyProcess {
            child: Some(child),
            url,
            log,
        }
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL the proxy");
            child.wait().expect("reap the proxy");
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The lines it logged that contain `needle`.
    pub fn logged(&self, needle: &str) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect()
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An agent's side of one session: the history it keeps and sends whole every round.
pub struct Agent {
    /// The session key (sent as `x-compactor-session`).
    pub name: String,
    /// Everything sent so far, plus the last answer.
    pub history: Vec<Value>,
    /// Rounds answered.
    pub round: usize,
}

impl Agent {
    /// A new session with a system prompt.
    pub fn new(name: &str) -> Agent {
        Agent {
            name: name.to_owned(),
            history: vec![json!({"role":"system","content": format!("You are agent {name}. Be brief.")})],
            round: 0,
        }
    }

    /// Adds this round's new message: the tool result when the last answer called a
    /// tool, else a user turn (asking for a tool every fifth round).
    pub fn next_message(&mut self) {
        let r = self.round;
        let filler = "the quick brown fox jumps over the lazy dog; ".repeat(5);
        let last = self.history.last().cloned().unwrap_or(Value::Null);
        if let Some(call) = last["tool_calls"].as_array().and_then(|c| c.first()) {
            let id = call["id"].as_str().unwrap().to_owned();
            self.history.push(json!({"role":"tool","tool_call_id": id,
                "content": format!("{} r{r} result of {id}: {filler}", self.name)}));
        } else {
            let ask = if r % 5 == 2 { "please use a tool. " } else { "" };
            self.history.push(json!({"role":"user",
                "content": format!("{} r{r} {ask}question: {filler}", self.name)}));
        }
    }

    /// The request body of this round.
    pub fn body(&self) -> Value {
        json!({"model": "m", "messages": self.history})
    }

    /// Takes the answer of this round.
    pub fn answered(&mut self, response: &Value) {
        self.history.push(response["choices"][0]["message"].clone());
        self.round += 1;
    }

    /// What was sent (the history without the last, unsent, answer).
    pub fn sent(&self) -> &[Value] {
        &self.history[..self.history.len() - 1]
    }
}

/// Sends one round to `proxy`: the status and the body as JSON (or as a string).
pub async fn send(client: &reqwest::Client, proxy: &str, agent: &Agent) -> Result<(u16, Value), String> {
    let response = client
        .post(format!("{proxy}/v1/chat/completions"))
        .header("x-compactor-session", &agent.name)
        .json(&agent.body())
        .send()
        .await
        .map_err(|e| format!("{e}"))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|e| format!("{e}"))?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, body))
}

/// An HTTP client with a bound on every request (a hang fails the test).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(64)
        .build()
        .unwrap()
}
