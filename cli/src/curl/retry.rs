//! `--retry`: which finished transfers are tried again, and after how long, by curl's rules.
//!
//! A transfer is retried (while retries remain) when it failed transiently:
//!
//! * a timeout (28) or a name that did not resolve (6, or the proxy's: 5);
//! * a refused connection (7) with `--retry-connrefused`;
//! * a response with status 408, 429, 500, 502, 503 or 504 (with or without `-f`);
//! * any error at all with `--retry-all-errors`.
//!
//! The wait is `--retry-delay` if given (and not 0), else the response's `Retry-After` (seconds) for an
//! HTTP status, else 1 s doubling after each retry up to 10 minutes. `--retry-max-time` stops
//! retrying once that much time has passed since the first attempt started, and refuses a
//! `Retry-After` that would pass it (with curl's warning).
//!
//! The warning is curl 7.88's: the retries left counted before this one is taken (`--retry 1`
//! says "1 retries left"), the wait in whole seconds.

use std::time::{Duration, Instant};

use http::header::RETRY_AFTER;

use super::args::TransferArgs;
use super::record::TransferRecord;

/// The longest backoff between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// Why a transfer is retried, for the warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Any error, with `--retry-all-errors`.
    AllErrors,
    /// A timeout or a name that did not resolve.
    Timeout,
    /// A refused connection, with `--retry-connrefused`.
    ConnRefused,
    /// A transient HTTP status.
    Http,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::AllErrors => "(retrying all errors)",
            Reason::Timeout => ": timeout",
            Reason::ConnRefused => ": connection refused",
            Reason::Http => ": HTTP error",
        }
    }
}

/// The retry state of one transfer.
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    /// Retries left.
    left: u64,
    /// The next backoff when no delay is given.
    backoff: Duration,
    /// When the first attempt started (`--retry-max-time` counts from here).
    started: Instant,
}

/// A decision to try again.
#[derive(Debug, Clone)]
pub(crate) struct Again {
    /// How long to wait first.
    pub(crate) delay: Duration,
    /// The warning curl prints (without its `Warning: ` prefix).
    pub(crate) warning: String,
}

/// curl's warning when a `Retry-After` would pass `--retry-max-time`.
pub(crate) const RETRY_AFTER_TOO_LATE: &str = "The Retry-After: time would make this command \
    line exceed the maximum allowed time for retries.";

impl Retry {
    /// The state for a transfer under `args`, whose first attempt starts now.
    pub(crate) fn new(args: &TransferArgs) -> Retry {
        Retry {
            left: args.retry,
            backoff: Duration::from_secs(1),
            started: Instant::now(),
        }
    }

    /// Whether and when the transfer that produced `record` (exit code `code`) runs again:
    /// `Ok` to try again, `Err` to stop, with curl's warning when it says why.
    pub(crate) fn next(
        &mut self,
        args: &TransferArgs,
        code: u8,
        record: &TransferRecord,
    ) -> Result<Again, Option<&'static str>> {
        let max_time = args.retry_max_time.filter(|m| !m.is_zero());
        if self.left == 0 || max_time.is_some_and(|max| self.started.elapsed() >= max) {
            return Err(None);
        }
        let status = record.status.map(|s| s.as_u16());
        let transient_status = matches!(status, Some(408 | 429 | 500 | 502 | 503 | 504));
        let reason = match code {
            28 | 6 | 5 => Reason::Timeout,
            7 if args.retry_connrefused => Reason::ConnRefused,
            0 | 22 if transient_status => Reason::Http,
            0 => return Err(None),
            _ if args.retry_all_errors => Reason::AllErrors,
            _ => return Err(None),
        };
        let retry_after = (reason == Reason::Http)
            .then(|| record.headers.get(RETRY_AFTER))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        // `--retry-delay 0` is curl's "not given": the backoff applies.
        let fixed = args.retry_delay.filter(|delay| !delay.is_zero());
        let delay = match (fixed, retry_after) {
            (Some(delay), _) => delay,
            (None, Some(after)) => {
                // In whole seconds, as curl counts both.
                let elapsed = Duration::from_secs(self.started.elapsed().as_secs());
                if max_time.is_some_and(|max| elapsed + after > max) {
                    return Err(Some(RETRY_AFTER_TOO_LATE));
                }
                after
            }
            (None, None) => {
                let delay = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                delay
            }
        };
        let warning = format!(
            "Problem {}. Will retry in {} seconds. {} retries left.",
            reason.text(),
            delay.as_secs(),
            self.left
        );
        self.left -= 1;
        Ok(Again { delay, warning })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderValue, Method, StatusCode};

    fn args(argv: &[&str]) -> TransferArgs {
        let mut full = argv.to_vec();
        full.push("http://a/");
        crate::curl::args::parse_test_args(&full).0.transfer
    }

    fn record(status: Option<u16>) -> TransferRecord {
        let mut r = TransferRecord::start("http://a/", Method::GET);
        r.status = status.map(|s| StatusCode::from_u16(s).unwrap());
        r
    }

    #[test]
    fn transient_failures_retry_with_doubling_backoff() {
        let a = args(&["--retry", "3"]);
        let mut retry = Retry::new(&a);
        let first = retry.next(&a, 0, &record(Some(503))).unwrap();
        assert_eq!(first.delay, Duration::from_secs(1));
        // curl 7.88 counts the retries left before taking this one.
        assert_eq!(
            first.warning,
            "Problem : HTTP error. Will retry in 1 seconds. 3 retries left."
        );
        assert_eq!(
            retry.next(&a, 28, &record(None)).unwrap().delay,
            Duration::from_secs(2)
        );
        assert_eq!(
            retry.next(&a, 6, &record(None)).unwrap().delay,
            Duration::from_secs(4)
        );
        assert_eq!(
            retry.next(&a, 28, &record(None)).unwrap_err(),
            None,
            "no retries left"
        );
    }

    #[test]
    fn what_is_not_transient_is_not_retried() {
        let a = args(&["--retry", "3"]);
        let mut retry = Retry::new(&a);
        assert!(retry.next(&a, 0, &record(Some(200))).is_err());
        assert!(retry.next(&a, 0, &record(Some(404))).is_err());
        assert!(retry.next(&a, 7, &record(None)).is_err());
        assert!(retry.next(&a, 56, &record(None)).is_err());
        let all = args(&["--retry", "1", "--retry-all-errors"]);
        assert!(Retry::new(&all).next(&all, 56, &record(None)).is_ok());
        let refused = args(&["--retry", "1", "--retry-connrefused"]);
        assert!(
            Retry::new(&refused)
                .next(&refused, 7, &record(None))
                .is_ok()
        );
    }

    #[test]
    fn delay_flags_and_retry_after() {
        let a = args(&["--retry", "2", "--retry-delay", "0.25"]);
        let mut r = record(Some(429));
        r.headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(
            Retry::new(&a).next(&a, 0, &r).unwrap().delay,
            Duration::from_millis(250)
        );
        let b = args(&["--retry", "2"]);
        assert_eq!(
            Retry::new(&b).next(&b, 0, &r).unwrap().delay,
            Duration::from_secs(7)
        );
        let c = args(&["--retry", "2", "--retry-max-time", "3"]);
        assert_eq!(
            Retry::new(&c).next(&c, 0, &r).unwrap_err(),
            Some(RETRY_AFTER_TOO_LATE),
            "7 s would pass the 3 s limit"
        );
        // Without Retry-After, only the time already spent counts, as in curl: a 1 s backoff
        // right after the first attempt goes ahead under a 1 s limit.
        let d = args(&["--retry", "2", "--retry-max-time", "1"]);
        assert!(Retry::new(&d).next(&d, 28, &record(None)).is_ok());
        let zero = args(&["--retry", "2", "--retry-delay", "0"]);
        let again = Retry::new(&zero).next(&zero, 28, &record(None)).unwrap();
        assert_eq!(
            again.delay,
            Duration::from_secs(1),
            "0 is curl's default backoff"
        );
    }
}
