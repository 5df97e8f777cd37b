//! What the workers saw, request by request.
//!
//! Each worker owns a [`Record`]: counters it updates without any shared state, and hands back
//! when it ends; [`Record::merge`] combines them afterwards. Latencies go into HDR histograms
//! ([`Latencies`], microseconds, 3 significant digits, auto-resizing), one set per *partition*
//! rather than per worker: a histogram set covering tens of milliseconds takes over 100 KiB,
//! which per worker would make `-c 20000` cost gigabytes. A worker buffers up to [`BATCH`]
//! samples and then adds them to its partition's set under that set's mutex; only the
//! partition's own thread ever takes that mutex during the run (once per [`BATCH`] requests of
//! a worker), so it is never contended and no lock is taken per request.
//!
//! Only exchanges that ended with a complete response body are recorded in the latency
//! histograms; a request that failed has an error class instead. The permit-wait histogram
//! holds only requests that waited ([`pool::ConnectionHandle::wait_time`] is `Some`).
//!
//! Every request that ends is also tallied by its [`Tag`]: the second of the run it ended in
//! (the time series, [`super::timeline`]) and its URL's origin (the per-origin rows). Latency
//! per second goes into small histograms of their own (2 significant digits), one per second
//! that had a response.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use hdrhistogram::Histogram;

/// Why a request failed, from the pool error's predicates (never its message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ErrorClass {
    /// The host name did not resolve.
    Resolve,
    /// TCP connect (or the HTTP handshake on a new connection) failed.
    Connect,
    /// The TLS handshake failed or the certificate was rejected.
    Tls,
    /// The connect timeout, a read timeout or `-m` elapsed, or the kernel timed the transport
    /// out (`ETIMEDOUT`: a connect nothing answered, a peer gone under keepalive or the TCP
    /// user timeout).
    Timeout,
    /// The origin's pending queue was full (`--max-pending-per-host`).
    Saturated,
    /// The peer reset the stream or the connection.
    Reset,
    /// The peer sent GOAWAY or refused the stream.
    GoAway,
    /// The response head broke HTTP/1 ([`pool::Error::malformed`]).
    Malformed,
    /// Anything else while sending or receiving.
    Io,
    /// Work the request depended on was dropped (its runtime shut down).
    Canceled,
    /// A response with status >= 400 under `--fail`.
    Http,
}

impl ErrorClass {
    /// Every class, in report order.
    pub(crate) const ALL: [ErrorClass; 11] = [
        ErrorClass::Resolve,
        ErrorClass::Connect,
        ErrorClass::Tls,
        ErrorClass::Timeout,
        ErrorClass::Saturated,
        ErrorClass::Reset,
        ErrorClass::GoAway,
        ErrorClass::Malformed,
        ErrorClass::Io,
        ErrorClass::Canceled,
        ErrorClass::Http,
    ];

    /// The JSON key and text label.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Resolve => "resolve",
            ErrorClass::Connect => "connect",
            ErrorClass::Tls => "tls",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Saturated => "saturated",
            ErrorClass::Reset => "reset",
            ErrorClass::GoAway => "goaway",
            ErrorClass::Malformed => "malformed",
            ErrorClass::Io => "io",
            ErrorClass::Canceled => "canceled",
            ErrorClass::Http => "http",
        }
    }

    /// The position in [`ALL`](Self::ALL).
    const fn index(self) -> usize {
        self as usize
    }

    /// Classifies a pool error. The order matters: a saturated request never touched a
    /// connection; TLS and timeouts are connect errors too, and the more specific class wins.
    pub(crate) fn of(error: &pool::Error) -> ErrorClass {
        if error.is_saturated() {
            ErrorClass::Saturated
        } else if error.is_resolve() {
            ErrorClass::Resolve
        } else if error.is_certificate() || error.is_tls() || error.is_pinned_key_mismatch() {
            ErrorClass::Tls
        } else if error.is_timeout() {
            ErrorClass::Timeout
        } else if error.is_connect() {
            ErrorClass::Connect
        } else if error.is_go_away() || error.is_refused_stream() {
            // A refused stream is a reset too: the more specific class wins.
            ErrorClass::GoAway
        } else if error.is_reset() {
            ErrorClass::Reset
        } else if error.is_canceled() {
            ErrorClass::Canceled
        } else if error.is_malformed_response() {
            ErrorClass::Malformed
        } else {
            ErrorClass::Io
        }
    }
}

/// The connection that served one response, as the response's
/// [`pool::ConnectionHandle`] describes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served {
    /// The connection's identity.
    pub(crate) connection: u64,
    /// Whether it had served a request before this one.
    pub(crate) reused: bool,
    /// Whether another partition owns it (the request borrowed it).
    pub(crate) borrowed: bool,
    /// How long the request waited in the pool for it, if it waited.
    pub(crate) waited: Option<Duration>,
}

/// One exchange that produced a complete response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Completed {
    /// The response status.
    pub(crate) status: u16,
    /// Body bytes received.
    pub(crate) bytes: u64,
    /// From the request's start (its scheduled time in open loop) to the response head.
    pub(crate) ttfb: Duration,
    /// From the request's start to the end of the body.
    pub(crate) total: Duration,
    /// The connection, when the response carried a handle.
    pub(crate) served: Option<Served>,
}

/// Samples a worker buffers before adding them to its partition's [`Latencies`].
pub(crate) const BATCH: usize = 256;

/// Where one request that ended is tallied: the second of the run it ended in (0 for the
/// first second) and the index of its URL's origin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tag {
    /// Whole seconds from the run's start to the request's end.
    pub(crate) second: usize,
    /// The origin of the request's URL, as an index into the run's distinct origins.
    pub(crate) origin: usize,
}

/// Requests that ended within one second of the run, or at one origin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Requests that ended (successes + failures).
    pub(crate) requests: u64,
    /// Of those, successes.
    pub(crate) successes: u64,
    /// Response body bytes of the completed ones.
    pub(crate) bytes: u64,
}

impl Tally {
    /// Failed requests.
    pub(crate) fn failures(&self) -> u64 {
        self.requests - self.successes
    }

    fn add(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.successes += other.successes;
        self.bytes += other.bytes;
    }
}

/// The tally at `index` of `tallies`, grown as needed.
fn tally_at(tallies: &mut Vec<Tally>, index: usize) -> &mut Tally {
    if tallies.len() <= index {
        tallies.resize(index + 1, Tally::default());
    }
    &mut tallies[index]
}

/// Adds `from` into `into`, index by index.
fn add_tallies(into: &mut Vec<Tally>, from: &[Tally]) {
    for (index, tally) in from.iter().enumerate() {
        tally_at(into, index).add(tally);
    }
}

/// Latency histograms, in microseconds: one set per partition, merged for the summary.
#[derive(Debug, Clone)]
pub(crate) struct Latencies {
    /// Total time of completed exchanges.
    pub(crate) total: Histogram<u64>,
    /// Time to the response head of completed exchanges.
    pub(crate) ttfb: Histogram<u64>,
    /// Permit waits of requests that waited.
    pub(crate) wait: Histogram<u64>,
    /// Total time of completed exchanges, per second of the run they ended in (2 significant
    /// digits; `None` for a second without a response).
    pub(crate) per_second: Vec<Option<Histogram<u32>>>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            total: histogram(),
            ttfb: histogram(),
            wait: histogram(),
            per_second: Vec::new(),
        }
    }
}

impl Latencies {
    /// Adds `other` into `self`.
    pub(crate) fn merge(&mut self, other: &Latencies) {
        // Auto-resizing histograms of the same precision always add.
        let _ = self.total.add(&other.total);
        let _ = self.ttfb.add(&other.ttfb);
        let _ = self.wait.add(&other.wait);
        for (second, histogram) in other.per_second.iter().enumerate() {
            if let Some(histogram) = histogram {
                let _ = self.second_mut(second).add(histogram);
            }
        }
    }

    /// The histogram of `second`, created when first needed.
    fn second_mut(&mut self, second: usize) -> &mut Histogram<u32> {
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, None);
        }
        self.per_second[second].get_or_insert_with(|| {
            // `new` only fails for a precision above 5.
            Histogram::new(2).unwrap_or_else(|_| unreachable!("2 significant digits are supported"))
        })
    }
}

/// Samples not yet added to a [`Latencies`], in microseconds.
#[derive(Debug, Clone, Default)]
struct Pending {
    total: Vec<u64>,
    ttfb: Vec<u64>,
    wait: Vec<u64>,
    /// The second each `total` sample ended in, index for index.
    seconds: Vec<usize>,
}

/// The counters of one worker, or of several merged.
#[derive(Debug, Clone, Default)]
pub(crate) struct Record {
    /// Requests that ended, successfully or not (aborted ones excluded).
    pub(crate) requests: u64,
    /// Requests that ended with a complete response (and, under `--fail`, a status < 400).
    pub(crate) successes: u64,
    /// Requests cut off unfinished at the end of the run.
    pub(crate) aborted: u64,
    /// Response body bytes received (by requests that completed).
    pub(crate) bytes: u64,
    /// Latency samples not yet in a histogram.
    pending: Pending,
    /// Completed responses by status code.
    pub(crate) status: BTreeMap<u16, u64>,
    /// Failed requests by class, indexed like [`ErrorClass::ALL`].
    pub(crate) errors: [u64; ErrorClass::ALL.len()],
    /// The first error message seen per class, for the summary.
    pub(crate) examples: [Option<String>; ErrorClass::ALL.len()],
    /// Responses per connection identity.
    pub(crate) per_connection: HashMap<u64, u64>,
    /// Responses served by a connection that had served before.
    pub(crate) reused: u64,
    /// Responses served by another partition's connection.
    pub(crate) borrowed: u64,
    /// Requests that ended, per second of the run.
    pub(crate) per_second: Vec<Tally>,
    /// Requests that ended, per origin index.
    pub(crate) per_origin: Vec<Tally>,
    /// Whether a request is in flight right now (set and cleared by the worker, so an abort
    /// knows to count one).
    pub(crate) in_flight: bool,
}

/// An empty auto-resizing histogram with 3 significant digits.
fn histogram() -> Histogram<u64> {
    // `new` only fails for a precision above 5.
    Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits are supported"))
}

/// Microseconds, saturating.
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Records `value` (microseconds). `record` grows an auto-resizing histogram as needed;
/// `saturating_record` would clamp to the current range instead, so it is only the fallback
/// for values beyond any range.
fn record_micros(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

impl Record {
    /// Records a complete response; `fail` applies `--fail` (status >= 400 is a failure).
    pub(crate) fn completed(&mut self, exchange: &Completed, tag: Tag, fail: bool) {
        self.requests += 1;
        self.bytes += exchange.bytes;
        *self.status.entry(exchange.status).or_insert(0) += 1;
        self.pending.total.push(micros(exchange.total));
        self.pending.ttfb.push(micros(exchange.ttfb));
        self.pending.seconds.push(tag.second);
        let success = !(fail && exchange.status >= 400);
        let tally = Tally {
            requests: 1,
            successes: u64::from(success),
            bytes: exchange.bytes,
        };
        tally_at(&mut self.per_second, tag.second).add(&tally);
        tally_at(&mut self.per_origin, tag.origin).add(&tally);
        if success {
            self.successes += 1;
        } else {
            self.count_error(ErrorClass::Http, || {
                format!("the server answered {}", exchange.status)
            });
        }
        if let Some(served) = exchange.served {
            self.served(&served);
        }
    }

    /// Records the connection of a response (also for responses whose body then failed).
    pub(crate) fn served(&mut self, served: &Served) {
        *self.per_connection.entry(served.connection).or_insert(0) += 1;
        self.reused += u64::from(served.reused);
        self.borrowed += u64::from(served.borrowed);
        if let Some(waited) = served.waited {
            self.pending.wait.push(micros(waited));
        }
    }

    /// Records a failed request; `message` is asked for only for the first of its class.
    pub(crate) fn failed(&mut self, class: ErrorClass, tag: Tag, message: impl FnOnce() -> String) {
        self.requests += 1;
        let tally = Tally {
            requests: 1,
            ..Tally::default()
        };
        tally_at(&mut self.per_second, tag.second).add(&tally);
        tally_at(&mut self.per_origin, tag.origin).add(&tally);
        self.count_error(class, message);
    }

    /// Counts an error of `class` for a request already counted.
    fn count_error(&mut self, class: ErrorClass, message: impl FnOnce() -> String) {
        self.errors[class.index()] += 1;
        let example = &mut self.examples[class.index()];
        if example.is_none() {
            *example = Some(message());
        }
    }

    /// Failed requests (of every class).
    pub(crate) fn failures(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Failed requests of `class`.
    pub(crate) fn errors_of(&self, class: ErrorClass) -> u64 {
        self.errors[class.index()]
    }

    /// The example message of `class`, if one was seen.
    pub(crate) fn example_of(&self, class: ErrorClass) -> Option<&str> {
        self.examples[class.index()].as_deref()
    }

    /// Whether enough samples are buffered to add them to the histograms now.
    pub(crate) fn flush_due(&self) -> bool {
        self.pending.total.len() >= BATCH || self.pending.wait.len() >= BATCH
    }

    /// Moves the buffered samples into `latencies`.
    pub(crate) fn flush_into(&mut self, latencies: &mut Latencies) {
        let pending = &mut self.pending;
        for (second, value) in pending.seconds.drain(..).zip(&pending.total) {
            let histogram = latencies.second_mut(second);
            if histogram.record(*value).is_err() {
                histogram.saturating_record(*value);
            }
        }
        for (samples, histogram) in [
            (&mut pending.total, &mut latencies.total),
            (&mut pending.ttfb, &mut latencies.ttfb),
            (&mut pending.wait, &mut latencies.wait),
        ] {
            for value in samples.drain(..) {
                record_micros(histogram, value);
            }
        }
    }

    /// Adds `other`'s counters into `self` (its samples must have been flushed).
    pub(crate) fn merge(&mut self, other: &Record) {
        debug_assert!(
            other.pending.total.is_empty() && other.pending.wait.is_empty(),
            "samples are flushed before records merge"
        );
        self.requests += other.requests;
        self.successes += other.successes;
        self.aborted += other.aborted;
        self.bytes += other.bytes;
        for (status, count) in &other.status {
            *self.status.entry(*status).or_insert(0) += count;
        }
        for (i, count) in other.errors.iter().enumerate() {
            self.errors[i] += count;
            if self.examples[i].is_none() {
                self.examples[i].clone_from(&other.examples[i]);
            }
        }
        for (connection, count) in &other.per_connection {
            *self.per_connection.entry(*connection).or_insert(0) += count;
        }
        self.reused += other.reused;
        self.borrowed += other.borrowed;
        add_tallies(&mut self.per_second, &other.per_second);
        add_tallies(&mut self.per_origin, &other.per_origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(status: u16, ms: u64, connection: u64, reused: bool) -> Completed {
        Completed {
            status,
            bytes: 10,
            ttfb: Duration::from_millis(ms / 2),
            total: Duration::from_millis(ms),
            served: Some(Served {
                connection,
                reused,
                borrowed: false,
                waited: (!reused).then(|| Duration::from_millis(1)),
            }),
        }
    }

    #[test]
    fn completed_and_failed_requests_add_up() {
        let mut a = Record::default();
        let first = Tag::default();
        let later = Tag {
            second: 2,
            origin: 1,
        };
        a.completed(&ok(200, 4, 1, false), first, false);
        a.completed(&ok(200, 2, 1, true), later, false);
        a.completed(&ok(503, 2, 1, true), later, true);
        a.failed(ErrorClass::Connect, first, || "refused".into());
        a.failed(ErrorClass::Connect, later, || {
            unreachable!("only the first message is kept")
        });
        assert_eq!((a.requests, a.successes, a.failures()), (5, 2, 3));
        assert_eq!(a.errors_of(ErrorClass::Http), 1);
        assert_eq!(a.errors_of(ErrorClass::Connect), 2);
        assert_eq!(a.example_of(ErrorClass::Connect), Some("refused"));
        assert_eq!(a.status.get(&503), Some(&1));
        assert_eq!(a.per_connection.get(&1), Some(&3));
        assert_eq!(a.reused, 2);
        let mut latencies = Latencies::default();
        a.flush_into(&mut latencies);
        assert_eq!((latencies.total.len(), latencies.wait.len()), (3, 1));
        let tallies = |t: &[Tally]| -> Vec<(u64, u64)> {
            t.iter().map(|t| (t.requests, t.successes)).collect()
        };
        assert_eq!(tallies(&a.per_second), [(2, 1), (0, 0), (3, 1)]);
        assert_eq!(tallies(&a.per_origin), [(2, 1), (3, 1)]);
        assert_eq!(latencies.per_second.len(), 3);
        assert!(latencies.per_second[1].is_none(), "no response in second 1");
        assert_eq!(latencies.per_second[2].as_ref().map(|h| h.len()), Some(2));

        let mut b = Record::default();
        b.completed(&ok(200, 8, 2, false), first, false);
        b.flush_into(&mut latencies);
        b.merge(&a);
        assert_eq!((b.requests, b.successes, b.failures()), (6, 3, 3));
        assert_eq!(b.per_connection.len(), 2);
        assert_eq!(b.bytes, 40);
        assert_eq!(tallies(&b.per_second), [(3, 2), (0, 0), (3, 1)]);
        assert_eq!(latencies.total.len(), 4);
        let max = latencies.total.max();
        assert!((8_000..8_100).contains(&max), "{max}");
    }

    #[test]
    fn samples_wait_for_a_batch_and_histograms_grow() {
        let mut record = Record::default();
        for _ in 0..BATCH - 1 {
            record.completed(&ok(200, 1, 1, true), Tag::default(), false);
        }
        assert!(!record.flush_due());
        record.completed(&ok(200, 90_000, 1, true), Tag::default(), false);
        assert!(record.flush_due());
        let mut latencies = Latencies::default();
        record.flush_into(&mut latencies);
        assert!(!record.flush_due());
        assert!(
            latencies.total.max() >= 89_000_000,
            "auto-resized, not clamped to the initial range"
        );
        let mut merged = Latencies::default();
        merged.merge(&latencies);
        assert_eq!(merged.total.len(), BATCH as u64);
    }
}
