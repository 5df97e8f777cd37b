//! `--retry`: which finished transfers are tried again, and after how long, by curl's rules.
//!
//! A transfer is retried (while retries remain) when it failed transiently:
//!
//! * a timeout (28) or a name that did not resolve (6, or the proxy's: 5);
//! * a refused connection (7) with `--retry-connrefused`;
//! * a response with status 408, 429, 500, 502, 503 or 504 (with or without `-f`);
//! * any error at all with `--retry-all-errors`.
//!
//! The wait is `--retry-delay` if given, else the response's `Retry-After` (seconds) for an
//! HTTP status, else 1 s doubling after each retry up to 10 minutes. `--retry-max-time` stops
//! retrying once the next attempt would start after that much time since the first.

use std::time::Duration;

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
    left: u32,
    /// The next backoff when no delay is given.
    backoff: Duration,
}

/// A decision to try again.
#[derive(Debug, Clone)]
pub(crate) struct Again {
    /// How long to wait first.
    pub(crate) delay: Duration,
    /// The warning curl prints.
    pub(crate) warning: String,
}

impl Retry {
    /// The state for a transfer under `args`.
    pub(crate) fn new(args: &TransferArgs) -> Retry {
        Retry {
            left: args.retry,
            backoff: Duration::from_secs(1),
        }
    }

    /// Whether and when the transfer that produced `record` (exit code `code`) runs again.
    pub(crate) fn next(
        &mut self,
        args: &TransferArgs,
        code: u8,
        record: &TransferRecord,
    ) -> Option<Again> {
        if self.left == 0 {
            return None;
        }
        let status = record.status.map(|s| s.as_u16());
        let transient_status = matches!(status, Some(408 | 429 | 500 | 502 | 503 | 504));
        let reason = match code {
            28 | 6 | 5 => Reason::Timeout,
            7 if args.retry_connrefused => Reason::ConnRefused,
            0 | 22 if transient_status => Reason::Http,
            0 => return None,
            _ if args.retry_all_errors => Reason::AllErrors,
            _ => return None,
        };
        let retry_after = (reason == Reason::Http)
            .then(|| record.headers.get(RETRY_AFTER))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let delay = match (args.retry_delay, retry_after) {
            (Some(delay), _) => delay,
            (None, Some(after)) => after,
            (None, None) => {
                let delay = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                delay
            }
        };
        if let Some(max) = args.retry_max_time.filter(|m| !m.is_zero()) {
            if record.started.elapsed() + delay > max {
                return None;
            }
        }
        self.left -= 1;
        let seconds = delay.as_secs_f64();
        let plural = if self.left == 1 { "retry" } else { "retries" };
        Some(Again {
            delay,
            warning: format!(
                "Warning: Problem {}. Will retry in {seconds} seconds. {} {plural} left.",
                reason.text(),
                self.left
            ),
        })
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
        assert_eq!(
            first.warning,
            "Warning: Problem : HTTP error. Will retry in 1 seconds. 2 retries left."
        );
        assert_eq!(
            retry.next(&a, 28, &record(None)).unwrap().delay,
            Duration::from_secs(2)
        );
        assert_eq!(
            retry.next(&a, 6, &record(None)).unwrap().delay,
            Duration::from_secs(4)
        );
        assert!(
            retry.next(&a, 28, &record(None)).is_none(),
            "no retries left"
        );
    }

    #[test]
    fn what_is_not_transient_is_not_retried() {
        let a = args(&["--retry", "3"]);
        let mut retry = Retry::new(&a);
        assert!(retry.next(&a, 0, &record(Some(200))).is_none());
        assert!(retry.next(&a, 0, &record(Some(404))).is_none());
        assert!(retry.next(&a, 7, &record(None)).is_none());
        assert!(retry.next(&a, 56, &record(None)).is_none());
        let all = args(&["--retry", "1", "--retry-all-errors"]);
        assert!(Retry::new(&all).next(&all, 56, &record(None)).is_some());
        let refused = args(&["--retry", "1", "--retry-connrefused"]);
        assert!(
            Retry::new(&refused)
                .next(&refused, 7, &record(None))
                .is_some()
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
        assert!(
            Retry::new(&c).next(&c, 0, &r).is_none(),
            "7 s would pass the 3 s limit"
        );
    }
}
