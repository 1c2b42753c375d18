//! Parsing a `Retry-After` header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
//!
//! The compactor honours it as a floor for the next wait (still capped), so a rate-limited
//! server is not hammered; a header we cannot read is ignored rather than guessed at.

use std::time::{Duration, SystemTime};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc2822;
use time::macros::format_description;

/// The wait a `Retry-After` value asks for, measured from `now`.
///
/// Accepts delta-seconds (`"120"`), the IMF-fixdate form (`"Sun, 06 Nov 1994 08:49:37
/// GMT"`) and other RFC 2822 dates. A date in the past gives zero; anything unreadable
/// gives `None`.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use llm_compactor::backend::http::parse_retry_after;
/// assert_eq!(parse_retry_after("7", SystemTime::now()), Some(Duration::from_secs(7)));
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 06 Nov 1994 08:49:37
/// assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    // Fractional seconds are not in the RFC, but some proxies send them.
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)));
    }
    let date = parse_http_date(value)?;
    let now = OffsetDateTime::from(now);
    let delta = date - now;
    Some(if delta.is_negative() {
        Duration::ZERO
    } else {
        delta.unsigned_abs()
    })
}

fn parse_http_date(value: &str) -> Option<OffsetDateTime> {
    // IMF-fixdate, the form servers must send.
    let imf = format_description!("[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT");
    if let Ok(date) = time::PrimitiveDateTime::parse(value, imf) {
        return Some(date.assume_utc());
    }
    OffsetDateTime::parse(value, &Rfc2822).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("1.5", now), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now),
            Some(Duration::ZERO),
            "a past date is no wait"
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:37 +0000", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(parse_retry_after("NaN", now), None);
    }
}
