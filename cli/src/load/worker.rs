//! One worker: a task on its partition's runtime that keeps one request in flight at a time,
//! through a [`pool::Client`] of that partition, until the [`Schedule`] runs out.
//!
//! ```text
//! take slot ─ (open loop: sleep until due) ─ request ─ head (TTFB) ─ read body ─ record
//!      ^                                                                          │
//!      └──────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! With `--ramp` in closed loop, the worker first waits for its start time
//! ([`Schedule::worker_start`]). Latency runs from the request's start: now in closed loop, the
//! slot's due time in open loop.
//! `-m` bounds one exchange (head and body) from the moment it is sent; when it elapses the
//! request is a `timeout` failure.
//!
//! The worker writes its own [`Record`], three relaxed counters of its partition
//! ([`PartitionGauges`], read by the progress display) and, once per batch of samples, its
//! partition's latency histograms; only its partition's thread writes any of these. If the run
//! is aborted (`-z` drain limit, second Ctrl-C), the worker's loop is dropped where it is; a
//! request it had in flight is counted as aborted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use pool::PartitionId;
use tokio::sync::watch;

use super::events::chain;
use super::prototype::Prototype;
use super::record::{Completed, ErrorClass, Latencies, Record, Served, Tag};
use super::schedule::Schedule;

/// What every worker of a run shares; read-only apart from the schedule's counter and the
/// gauges.
#[derive(Debug)]
pub(crate) struct RunShared {
    /// When requests start.
    pub(crate) schedule: Schedule,
    /// Partition index → what a request to each URL sends (or why it cannot be built), the
    /// URLs used round-robin. Each partition has copies of its own (see `prototype`).
    pub(crate) requests: Box<[Vec<Result<Prototype, String>>]>,
    /// Each URL's origin, as an index into the run's distinct origins (like `urls`).
    pub(crate) url_origins: Vec<usize>,
    /// `-c`: how many workers there are.
    pub(crate) concurrency: usize,
    /// `-m`: the limit of one exchange.
    pub(crate) max_time: Option<Duration>,
    /// `--fail`: status >= 400 is a failure.
    pub(crate) fail: bool,
    /// Live counters per partition index, for progress.
    pub(crate) gauges: Box<[PartitionGauges]>,
    /// Latency histograms per partition index. Only the partition's own thread locks its set
    /// during the run, once per batch of a worker's samples (see [`super::record`]).
    pub(crate) latencies: Box<[Mutex<Latencies>]>,
}

/// Live counters of one partition's workers. Written only by that partition's thread, read by
/// the progress display; aligned so partitions do not share a cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct PartitionGauges {
    /// Requests sent and not yet finished.
    pub(crate) in_flight: AtomicU64,
    /// Requests finished (successfully or not).
    pub(crate) completed: AtomicU64,
    /// Requests finished with a failure.
    pub(crate) failed: AtomicU64,
}

/// Why one exchange failed.
#[derive(Debug)]
enum Failure {
    /// The pool (or the body) reported an error.
    Pool(pool::Error),
    /// `-m` elapsed.
    MaxTime(Duration),
    /// The request could not be built.
    Build(String),
}

impl Failure {
    fn class(&self) -> ErrorClass {
        match self {
            Failure::Pool(error) => ErrorClass::of(error),
            Failure::MaxTime(_) => ErrorClass::Timeout,
            Failure::Build(_) => ErrorClass::Io,
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Pool(error) => chain(error),
            Failure::MaxTime(limit) => {
                format!("no complete response within -m {} s", limit.as_secs_f64())
            }
            Failure::Build(message) => message.clone(),
        }
    }
}

/// One worker. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Worker {
    /// The worker's number (it starts at URL `index % urls`).
    index: usize,
    /// Its partition's index.
    partition: usize,
    /// A client of that partition.
    client: pool::Client,
    /// The run's shared state.
    run: Arc<RunShared>,
    /// Becomes `true` when the run is aborted.
    abort: watch::Receiver<bool>,
}

impl Worker {
    /// Worker number `index` on partition `partition`.
    pub(crate) fn new(
        index: usize,
        partition: usize,
        client: pool::Client,
        run: Arc<RunShared>,
        abort: watch::Receiver<bool>,
    ) -> Worker {
        Worker {
            index,
            partition,
            client,
            run,
            abort,
        }
    }

    /// Runs until the schedule ends or the run is aborted; returns the partition index and
    /// what the worker saw.
    pub(crate) async fn run(self) -> (usize, Record) {
        let mut record = Record::default();
        let mut abort = self.abort.clone();
        let aborted = async move {
            // The sender lives as long as the run; if it is gone there is nothing to wait for.
            if abort.wait_for(|aborted| *aborted).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            biased;
            () = aborted => {}
            () = self.requests(&mut record) => {}
        }
        if record.in_flight {
            record.in_flight = false;
            record.aborted += 1;
            self.gauges().in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        self.flush(&mut record);
        (self.partition, record)
    }

    /// Adds the record's buffered samples to the partition's histograms.
    fn flush(&self, record: &mut Record) {
        let mut latencies = self.run.latencies[self.partition]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        record.flush_into(&mut latencies);
    }

    fn gauges(&self) -> &PartitionGauges {
        &self.run.gauges[self.partition]
    }

    /// The request loop.
    async fn requests(&self, record: &mut Record) {
        let run = &*self.run;
        let gauges = self.gauges();
        let requests = &run.requests[self.partition];
        let mut next_url = self.index % requests.len();
        if let Some(at) = run.schedule.worker_start(self.index, run.concurrency) {
            tokio::time::sleep_until(at.into()).await;
        }
        // One clock read per request before it starts: the schedule's deadline check and the
        // closed loop's start share it.
        loop {
            let now = Instant::now();
            let Some(slot) = run.schedule.take_at(now) else {
                break;
            };
            let start = match slot.due {
                Some(due) => {
                    if due > now {
                        tokio::time::sleep_until(due.into()).await;
                    }
                    due
                }
                None => now,
            };
            let prototype = &requests[next_url];
            let origin = run.url_origins.get(next_url).copied().unwrap_or(0);
            next_url = (next_url + 1) % requests.len();
            record.in_flight = true;
            gauges.in_flight.fetch_add(1, Ordering::Relaxed);
            let outcome = match run.max_time {
                None => self.exchange(prototype, start, record).await,
                Some(limit) => tokio::time::timeout(limit, self.exchange(prototype, start, record))
                    .await
                    .unwrap_or(Err(Failure::MaxTime(limit))),
            };
            record.in_flight = false;
            gauges.in_flight.fetch_sub(1, Ordering::Relaxed);
            let failed_before = record.failures();
            // A completed request knows when it ended; only a failure reads the clock again.
            let ended = match &outcome {
                Ok(completed) => start + completed.total,
                Err(_) => Instant::now(),
            };
            let tag = Tag {
                second: usize::try_from(
                    ended
                        .saturating_duration_since(run.schedule.start())
                        .as_secs(),
                )
                .unwrap_or(usize::MAX),
                origin,
            };
            match outcome {
                Ok(completed) => record.completed(&completed, tag, run.fail),
                Err(failure) => record.failed(failure.class(), tag, || failure.message()),
            }
            if record.failures() != failed_before {
                gauges.failed.fetch_add(1, Ordering::Relaxed);
            }
            gauges.completed.fetch_add(1, Ordering::Relaxed);
            if record.flush_due() {
                self.flush(record);
            }
        }
    }

    /// One request: send, wait for the head, read the body to its end.
    async fn exchange(
        &self,
        prototype: &Result<Prototype, String>,
        start: Instant,
        record: &mut Record,
    ) -> Result<Completed, Failure> {
        let request = match prototype {
            Ok(prototype) => prototype.request(),
            Err(message) => return Err(Failure::Build(message.clone())),
        };
        let response = self.client.request(request).await.map_err(Failure::Pool)?;
        let head_at = Instant::now();
        let served = Some(response.body().connection()).map(|handle| Served {
            connection: handle.id().as_u64(),
            reused: handle.is_reused(),
            borrowed: handle.info().partition() != self.partition_id(),
            waited: handle.wait_time(),
        });
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut bytes = 0u64;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => {
                    if let Some(data) = frame.data_ref() {
                        bytes += data.len() as u64;
                    }
                }
                Err(error) => {
                    if let Some(served) = &served {
                        record.served(served);
                    }
                    return Err(Failure::Pool(error));
                }
            }
        }
        let end = Instant::now();
        Ok(Completed {
            status,
            bytes,
            ttfb: head_at.saturating_duration_since(start),
            total: end.saturating_duration_since(start),
            served,
        })
    }

    fn partition_id(&self) -> PartitionId {
        self.client.partition()
    }
}
