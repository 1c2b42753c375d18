//! Prefix-cache billing: what one request costs when the provider caches prompt prefixes.
//!
//! Providers (Anthropic with `cache_control`, OpenAI automatically) bill the part of a
//! prompt that repeats the previous request's prompt as a cache read, an order of
//! magnitude cheaper than fresh input, and the rest as a cache write (Anthropic charges a
//! premium for it; OpenAI does not). The simulator models that with one rule: the longest
//! run of leading messages that is identical to the previous request's is read from the
//! cache, everything after it is written.
//!
//! Simplifications, all of which favour no strategy in particular: the prefix is compared
//! message by message (a provider matches tokens, in blocks, so a message that changed
//! half-way loses its first half too here); only the immediately previous request is
//! considered a cache source (true for a 5-minute cache and an agent that keeps working);
//! Anthropic's 1,024-token minimum cacheable prefix and OpenAI's 128-token granularity are
//! ignored; the output of the previous request is never in the cache (it was not part of
//! that request's prompt), which is how both providers behave.

use serde::{Deserialize, Serialize};

use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::Tokens;

/// How many leading messages `current` shares, identically, with `previous`.
///
/// ```
/// use llm_compactor::simulate::shared_prefix_len;
/// use llm_compactor::Message;
/// let a = [Message::system("s"), Message::user("u1")];
/// let b = [Message::system("s"), Message::user("u2")];
/// assert_eq!(shared_prefix_len(&a, &b), 1);
/// ```
pub fn shared_prefix_len(previous: &[Message], current: &[Message]) -> usize {
    previous.iter().zip(current).take_while(|(a, b)| a == b).count()
}

/// What one agent request was billed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestBill {
    /// Tokens of the request's conversation (the context it carried).
    pub input_tokens: u64,
    /// Of those, tokens read from the prompt cache.
    pub cached_tokens: u64,
    /// The same bill by token class.
    pub tokens: Tokens,
}

/// Bills a request carrying `current` after a request that carried `previous`, whose
/// answer was `output_tokens` long.
///
/// ```
/// use llm_compactor::count::HeuristicCounter;
/// use llm_compactor::simulate::bill_request;
/// use llm_compactor::Message;
/// let first = [Message::system("0123456789ab")]; // 8 + 3 = 11 tokens
/// let second = [Message::system("0123456789ab"), Message::user("abcd")]; // + 9
/// let bill = bill_request(&first, &second, 5, &HeuristicCounter);
/// assert_eq!((bill.input_tokens, bill.cached_tokens), (20, 11));
/// assert_eq!((bill.tokens.cache_read, bill.tokens.cache_write, bill.tokens.output), (11, 9, 5));
/// ```
pub fn bill_request(
    previous: &[Message],
    current: &[Message],
    output_tokens: usize,
    counter: &dyn TokenCounter,
) -> RequestBill {
    let shared = shared_prefix_len(previous, current);
    let cached: usize = current[..shared].iter().map(|m| counter.count_message(m)).sum();
    let fresh: usize = current[shared..].iter().map(|m| counter.count_message(m)).sum();
    RequestBill {
        input_tokens: (cached + fresh) as u64,
        cached_tokens: cached as u64,
        tokens: Tokens {
            cache_read: cached as u64,
            cache_write: fresh as u64,
            uncached: 0,
            output: output_tokens as u64,
        },
    }
}
