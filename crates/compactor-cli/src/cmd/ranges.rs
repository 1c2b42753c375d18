//! Range checks for every numeric flag, in one place.
//!
//! A number that parses is not yet a number the command can use: `--summarizer-timeout
//! 1e20` overflows a `Duration` (a panic), a ratio of `NaN` or `1.5` makes no
//! compaction, a budget of 2^64 overflows the arithmetic behind it. Each numeric flag
//! names one of these clap value parsers, so a bad value is refused while the command
//! line is parsed — a usage error naming the flag and the accepted range, exit 2 —
//! before anything runs. The bounds are generous: they exclude only values that cannot
//! mean anything.

/// The largest token count a flag accepts (a billion: far beyond any context window).
pub const MAX_TOKENS: u64 = 1_000_000_000;
/// The largest char count a flag accepts (a billion chars).
pub const MAX_CHARS: u64 = 1_000_000_000;
/// The largest message count a flag accepts.
pub const MAX_MESSAGES: u64 = 10_000_000;
/// The most summarizer attempts a flag accepts.
pub const MAX_ATTEMPTS: u64 = 100;
/// The longest timeout a flag accepts, in seconds (a week).
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

fn integer(s: &str, min: u64, max: u64) -> Result<u64, String> {
    let value: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number (expected {min}..={max})"))?;
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{value} is out of range (expected {min}..={max})"))
    }
}

fn usize_of(value: u64) -> Result<usize, String> {
    usize::try_from(value).map_err(|_| format!("{value} does not fit this platform"))
}

fn real(s: &str) -> Result<f64, String> {
    let value: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("{s:?} is not a finite number"))
    }
}

/// A token count: a budget, a target, a window, an output budget (1..=10^9).
pub fn tokens(s: &str) -> Result<usize, String> {
    usize_of(integer(s, 1, MAX_TOKENS)?)
}

/// A token count as `u32` (an output budget; 1..=10^9).
pub fn tokens_u32(s: &str) -> Result<u32, String> {
    Ok(integer(s, 1, MAX_TOKENS)? as u32)
}

/// A char count that must be positive: a cap, a threshold, an epoch (1..=10^9).
pub fn chars(s: &str) -> Result<usize, String> {
    usize_of(integer(s, 1, MAX_CHARS)?)
}

/// A message count that may be zero (0..=10^7).
pub fn messages(s: &str) -> Result<usize, String> {
    usize_of(integer(s, 0, MAX_MESSAGES)?)
}

/// Summarizer attempts in total (1..=100).
pub fn attempts(s: &str) -> Result<u32, String> {
    Ok(integer(s, 1, MAX_ATTEMPTS)? as u32)
}

/// A ratio strictly between 0 and 1, finite.
pub fn ratio(s: &str) -> Result<f64, String> {
    let value = real(s)?;
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(format!("{value} is out of range (expected a ratio with 0 < r < 1)"))
    }
}

/// A duration in seconds: finite, positive, at most a week (fractions allowed).
pub fn seconds(s: &str) -> Result<f64, String> {
    let value = real(s)?;
    if value > 0.0 && value <= MAX_SECONDS {
        Ok(value)
    } else {
        Err(format!(
            "{value} is out of range (expected seconds with 0 < s <= {MAX_SECONDS})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_range_and_refuses_everything_else() {
        assert_eq!(tokens("128000"), Ok(128_000));
        for bad in ["0", "-1", "1e3", "1000000001", "18446744073709551616", "", "x"] {
            assert!(tokens(bad).is_err(), "{bad}");
        }
        assert_eq!(messages("0"), Ok(0));
        assert_eq!(ratio("0.8"), Ok(0.8));
        for bad in ["0", "1", "1.5", "-0.1", "NaN", "inf", "1e400"] {
            assert!(ratio(bad).is_err(), "{bad}");
        }
        assert_eq!(seconds("0.5"), Ok(0.5));
        for bad in ["0", "-1", "1e20", "NaN", "inf"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert!(attempts("0").is_err());
        assert!(attempts("101").is_err());
    }
}
