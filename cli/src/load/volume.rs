//! How much load to send: a request count (`-n`) or a duration (`-z`), parsed the way oha and
//! hey spell them.
//!
//! * `-n` takes a whole number with an optional decimal suffix: `500`, `10k` (10 000), `1.5k`,
//!   `1m` (1 000 000), `2g`. The result must be a positive whole number.
//! * `-z` takes a number with a unit: `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds
//!   (`1.5`). It must be positive.
//!
//! Both parsers return messages for clap, which turns them into a usage error (exit 2).

use std::time::Duration;

/// The volume of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Volume {
    /// Send exactly this many requests (`-n`).
    Requests(u64),
    /// Send requests until this much time has passed since the start (`-z`).
    Duration(Duration),
}

/// Parses `-n`: `500`, `10k`, `1.5k`, `1m`, `2g` (decimal multipliers, case-insensitive).
pub(crate) fn parse_count(text: &str) -> Result<u64, String> {
    let bad = || format!("expected a request count such as 500, 10k or 1m, got {text:?}");
    let trimmed = text.trim();
    let (number, multiplier) = match trimmed.char_indices().last() {
        Some((at, 'k' | 'K')) => (&trimmed[..at], 1_000u64),
        Some((at, 'm' | 'M')) => (&trimmed[..at], 1_000_000),
        Some((at, 'g' | 'G')) => (&trimmed[..at], 1_000_000_000),
        _ => (trimmed, 1),
    };
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let count = match number.split_once('.') {
        None => number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(multiplier))
            .ok_or_else(bad)?,
        Some((whole, fraction)) => {
            // Exact decimal arithmetic: "1.5k" is 1500, "1.0005k" is not a whole number.
            let digits = u32::try_from(fraction.len()).map_err(|_| bad())?;
            let scale = 10u64.checked_pow(digits).ok_or_else(bad)?;
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| bad())?
            };
            let fraction: u64 = if fraction.is_empty() {
                0
            } else {
                fraction.parse().map_err(|_| bad())?
            };
            let scaled = whole
                .checked_mul(scale)
                .and_then(|w| w.checked_add(fraction))
                .and_then(|v| v.checked_mul(multiplier))
                .ok_or_else(bad)?;
            if scaled % scale != 0 {
                return Err(format!("{text:?} is not a whole number of requests"));
            }
            scaled / scale
        }
    };
    if count == 0 {
        return Err("the request count must be at least 1".to_owned());
    }
    Ok(count)
}

/// Parses `-z`: `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected a duration such as 30s, 2m or 500ms, got {text:?}");
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "" | "s" | "sec" => value,
        "ms" => value / 1_000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3_600.0,
        _ => return Err(bad()),
    };
    let duration = Duration::try_from_secs_f64(seconds).map_err(|_| bad())?;
    if duration.is_zero() {
        return Err("the duration must be positive".to_owned());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_decimal_suffixes() {
        assert_eq!(parse_count("500"), Ok(500));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("10K"), Ok(10_000));
        assert_eq!(parse_count("1.5k"), Ok(1_500));
        assert_eq!(parse_count("1m"), Ok(1_000_000));
        assert_eq!(parse_count("2g"), Ok(2_000_000_000));
        assert_eq!(parse_count(".5k"), Ok(500));
    }

    #[test]
    fn bad_counts_are_refused() {
        for text in [
            "",
            "k",
            "10x",
            "-1",
            "0",
            "1.0005k",
            "1.5",
            "1e3",
            "99999999999999999999",
        ] {
            assert!(parse_count(text).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1_500)));
        for text in ["", "s", "0s", "10x", "-1s", "1d"] {
            assert!(parse_duration(text).is_err(), "{text:?} was accepted");
        }
    }
}
