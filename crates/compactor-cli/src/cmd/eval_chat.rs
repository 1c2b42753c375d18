//! Generated chat sessions for `compactor eval --instructions --chat-sessions N`: a
//! system prompt and `turns` user turns, each answered, of what fills a long chat
//! between the turns that instruct: questions, acknowledgements and the assistant's
//! answers (the instructions are planted afterwards, [`super::eval_plant`]). Deterministic:
//! the same seed gives the same session.

use llm_compactor::Message;

/// User turns in a generated session.
pub const TURNS: usize = 100;

/// A small deterministic generator (an LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const CITIES: [&str; 6] = ["Lisbon", "Kyoto", "Oslo", "Lima", "Cairo", "Quebec"];

/// The name of session `seed` in reports.
pub fn name(seed: u64) -> String {
    format!("chat-{seed}")
}

/// Session `seed`: a system prompt and `turns` answered user turns.
pub fn session(seed: u64, turns: usize) -> Vec<Message> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xC0FFEE);
    let city = rng.pick(&CITIES);
    let mut messages = vec![Message::system(
        "You are a travel assistant. Be concise and answer every question.",
    )];
    for i in 0..turns {
        let user = match rng.below(5) {
            0 => "ok, thanks".to_owned(),
            1 => format!("What about option {} on day {}?", rng.below(5), 1 + rng.below(5)),
            2 => format!("Is the museum in {city} open on day {}?", 1 + rng.below(5)),
            3 => format!(
                "Question {i}: how long is the walk from the hotel to stop {}?",
                rng.below(9)
            ),
            _ => "Great! And the train?".to_owned(),
        };
        let opening = rng.pick(&["Noted.", "Sure.", "Here is what I found.", "Good question."]);
        let answer = format!(
            "{opening} For turn {i}: option {} in {city} costs {} euros and leaves at {}:00; \
             the walk takes {} minutes.",
            rng.below(5),
            90 + rng.below(200),
            6 + rng.below(12),
            5 + rng.below(40)
        );
        messages.push(Message::user(user));
        messages.push(Message::assistant(answer));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_session_and_seeds_differ() {
        let a = session(1, 40);
        assert_eq!(a.len(), 81);
        assert_eq!(a, session(1, 40));
        assert_ne!(a, session(2, 40));
        assert!(a[1..].iter().step_by(2).all(|m| m.role == llm_compactor::Role::User));
    }
}
