//! Gauges per (partition, origin) and the snapshots users read.
//!
//! Each gauge changes at its named transition, before any listener callback about that
//! transition runs. Two peaks ride along: the most admitted connections and the most waiting
//! requests the cell has had since it was created or since [`Gauges::reset_peaks`]. A peak is
//! raised only where its gauge can grow (a new establishment, a new waiter), never on the
//! reuse hit's idle-to-active transfer, which leaves the admitted count unchanged. Gauges live in the origin's cell of the partition that owns the connection
//! (a waiting request is counted by the partition it waits in), so a reuse hit writes only
//! partition-local counters and nothing shared by the origin. Reads are relaxed: an
//! [`OriginStats`] is not an atomic snapshot of all counters, and one transition may appear in
//! one field before another.

use std::fmt;
use std::time::Duration;

use crate::partition::PartitionId;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Arc, OwnLine};

/// One gauge of a [`Gauges`] set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gauge {
    /// Attempts and flights admitted and not yet failed or installed.
    Establishing,
    /// HTTP/1 connections in the idle set, dispatch-eligible.
    H1Idle,
    /// HTTP/1 connections reserved or checked out by a request.
    H1Active,
    /// HTTP/1 connections logically closed whose transport is still live.
    H1Draining,
    /// HTTP/2 generations that accept new streams.
    H2Accepting,
    /// HTTP/2 generations that accept no new streams but whose transport is still live.
    H2Draining,
    /// Request leases (streams) on accepting and draining generations, but abandoned ones.
    H2ActiveStreams,
    /// Streams the pool gave up on that the protocol still holds open: a refused upload whose
    /// body hyper keeps, waiting for flow-control window the server does not grant. They count
    /// against the server's stream limit but keep no connection in use.
    H2AbandonedStreams,
    /// Requests with a body that hold a stream and wait for their connection's upload permit
    /// (once the cell sends one request body at a time per connection: `pool-h2`'s `uploads`).
    H2UploadsWaiting,
    /// Transports from the connector's return until their I/O is dropped.
    PhysicallyLive,
    /// Requests registered in the cell's waiter queues. Stays last: the gauges before it
    /// index [`Gauges`]' array of connection gauges, and this one lives on a line of its own.
    WaitingRequests,
}

impl Gauge {
    /// Whether a connection counted here holds admission (see [`PartitionStats::admitted`]).
    #[inline]
    const fn is_admitted(self) -> bool {
        matches!(
            self,
            Gauge::Establishing | Gauge::H1Idle | Gauge::H1Active | Gauge::H2Accepting
        )
    }
}

/// The live counters of one (partition, origin) cell, and its two peaks.
///
/// Laid out for the peers that read it: on a miss at the bound, a partition reads its peers'
/// idle and accepting gauges (`cell::borrow`) without their locks. Those connection gauges
/// change when a connection changes phase; the waiting count (and its peak) changes on every
/// request that waits, which at the bound is every request. Sharing a cache line, the owner's
/// per-request writes would take the line from every peer reading the connection gauges, and
/// each of those reads would miss: so the waiting count has a line of its own, and the set
/// starts on a line boundary (a heap address is otherwise only 16-byte aligned, and where the
/// lines fell changed from one pool to the next), in the order declared (`repr(C)`). The price
/// is memory: a cell's gauges take 384 bytes with their `Arc` instead of about 100.
///
/// Gauges made with [`counting_idle_in`](Self::counting_idle_in) also count their
/// [`Gauge::H1Idle`] changes in a counter shared by many cells (the pool-wide idle count behind
/// `max_idle_connections`); the others pay one branch on a field they never change.
#[repr(C, align(128))]
pub struct Gauges {
    /// Every gauge but [`Gauge::WaitingRequests`], indexed by the gauge.
    values: [AtomicUsize; CONNECTION_GAUGES],
    peak_admitted: AtomicUsize,
    /// Where [`Gauge::H1Idle`] is counted a second time, if anywhere.
    idle_total: Option<Arc<AtomicUsize>>,
    waiting: OwnLine<Waiting>,
}

/// The waiting count and its peak, written on every request that waits.
#[derive(Default)]
struct Waiting {
    count: AtomicUsize,
    peak: AtomicUsize,
}

/// The gauges before [`Gauge::WaitingRequests`] in the enum: those of connections.
const CONNECTION_GAUGES: usize = Gauge::WaitingRequests as usize;

impl Default for Gauges {
    fn default() -> Self {
        Gauges {
            values: std::array::from_fn(|_| AtomicUsize::new(0)),
            peak_admitted: AtomicUsize::new(0),
            idle_total: None,
            waiting: OwnLine::default(),
        }
    }
}

impl Gauges {
    /// Gauges that also count every change of [`Gauge::H1Idle`] in `total`, which other cells'
    /// gauges may share: `total` then reads the idle HTTP/1 connections of all of them, exactly
    /// as the sum of their own idle gauges would (the same increments, the same order of
    /// increment before decrement, see [`arrive`](Self::arrive)).
    pub fn counting_idle_in(total: Arc<AtomicUsize>) -> Gauges {
        Gauges {
            idle_total: Some(total),
            ..Gauges::default()
        }
    }

    /// Adds one to `gauge`, raising the peak it feeds.
    #[inline]
    pub fn inc(&self, gauge: Gauge) {
        self.count_total(gauge, true);
        let now = self.slot(gauge).fetch_add(1, Ordering::Relaxed) + 1;
        if gauge.is_admitted() {
            self.raise_admitted_peak();
        } else if matches!(gauge, Gauge::WaitingRequests) {
            self.waiting.0.peak.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// Raises the admitted peak to the current admitted count. Called only when that count
    /// grew; the sum is read relaxed, like every other reading of these gauges.
    #[cold]
    fn raise_admitted_peak(&self) {
        let admitted = self.admitted();
        self.peak_admitted.fetch_max(admitted, Ordering::Relaxed);
    }

    fn admitted(&self) -> usize {
        [
            Gauge::Establishing,
            Gauge::H1Idle,
            Gauge::H1Active,
            Gauge::H2Accepting,
        ]
        .into_iter()
        .map(|g| self.get(g))
        .fold(0, usize::saturating_add)
    }

    /// Starts both peaks again from the current values.
    pub fn reset_peaks(&self) {
        self.peak_admitted.store(self.admitted(), Ordering::Relaxed);
        self.waiting
            .0
            .peak
            .store(self.get(Gauge::WaitingRequests), Ordering::Relaxed);
    }

    /// Subtracts one from `gauge`.
    ///
    /// # Panics
    ///
    /// In debug builds and under loom, when the gauge is already zero: that is an accounting
    /// bug, or a transition that decremented before the one it follows had counted (see
    /// [`arrive`](Self::arrive)).
    #[inline]
    pub fn dec(&self, gauge: Gauge) {
        let prev = self.slot(gauge).fetch_sub(1, Ordering::Relaxed);
        if cfg!(any(debug_assertions, pool_loom)) {
            assert!(prev > 0, "gauge {gauge:?} decremented below zero");
        }
        self.count_total(gauge, false);
    }

    /// Counts a change of `gauge` in the shared idle total too, if these gauges have one and
    /// `gauge` is [`Gauge::H1Idle`]. An increment goes there before the gauge's own, a
    /// decrement after it, so the total never reads below the sum it stands for.
    #[inline]
    fn count_total(&self, gauge: Gauge, up: bool) {
        if let (Gauge::H1Idle, Some(total)) = (gauge, &self.idle_total) {
            if up {
                total.fetch_add(1, Ordering::Relaxed);
            } else {
                total.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts a unit arriving in the admitted gauge `to` from another admitted gauge (idle to
    /// active, and back), *before* the connection's transition that moves it; once the
    /// transition won, [`dec`](Self::dec) takes the unit out of the gauge it left (or, if the
    /// transition lost, out of `to` again). No peak moves: the unit was admitted all along.
    ///
    /// Counting first is what keeps a gauge from reading below zero: a racing transition that
    /// decrements `to` (a close right after a checkout) runs only after it saw this one's new
    /// state, so after this increment.
    #[inline]
    pub fn arrive(&self, to: Gauge) {
        debug_assert!(to.is_admitted(), "{to:?} is not an admitted gauge");
        self.count_total(to, true);
        self.slot(to).fetch_add(1, Ordering::Relaxed);
    }

    /// Moves one unit from `from` to `to` (for example idle to active). A move between two
    /// admitted gauges (the reuse hit's idle to active) touches no peak.
    #[inline]
    pub fn transfer(&self, from: Gauge, to: Gauge) {
        self.dec(from);
        if from.is_admitted() && to.is_admitted() {
            self.count_total(to, true);
            self.slot(to).fetch_add(1, Ordering::Relaxed);
        } else {
            self.inc(to);
        }
    }

    /// The current value of one gauge (relaxed).
    pub fn get(&self, gauge: Gauge) -> usize {
        self.slot(gauge).load(Ordering::Relaxed)
    }

    /// Whether every gauge reads zero: nothing is counted here (the peaks aside).
    pub fn all_zero(&self) -> bool {
        self.values.iter().all(|v| v.load(Ordering::Relaxed) == 0)
            && self.waiting.0.count.load(Ordering::Relaxed) == 0
    }

    /// The counter of `gauge` (a constant at nearly every call, so the branch folds away).
    #[inline]
    fn slot(&self, gauge: Gauge) -> &AtomicUsize {
        match gauge {
            Gauge::WaitingRequests => &self.waiting.0.count,
            connection => &self.values[connection as usize],
        }
    }

    /// Reads every gauge (relaxed; not an atomic snapshot).
    pub fn snapshot(&self) -> PartitionStats {
        PartitionStats {
            establishing: self.get(Gauge::Establishing),
            h1_idle: self.get(Gauge::H1Idle),
            h1_active: self.get(Gauge::H1Active),
            h1_draining: self.get(Gauge::H1Draining),
            h2_accepting: self.get(Gauge::H2Accepting),
            h2_draining: self.get(Gauge::H2Draining),
            h2_active_streams: self.get(Gauge::H2ActiveStreams),
            h2_abandoned_streams: self.get(Gauge::H2AbandonedStreams),
            h2_uploads_waiting: self.get(Gauge::H2UploadsWaiting),
            physically_live: self.get(Gauge::PhysicallyLive),
            waiting_requests: self.get(Gauge::WaitingRequests),
        }
    }

    /// Reads both peaks (relaxed).
    pub fn peaks(&self) -> Peaks {
        Peaks {
            admitted: self.peak_admitted.load(Ordering::Relaxed),
            waiting: self.waiting.0.peak.load(Ordering::Relaxed),
        }
    }
}

/// The peaks of one cell since it was created or since [`Gauges::reset_peaks`]; the pool sums
/// them per origin into [`OriginStats::peak_admitted`] and [`OriginStats::peak_waiting`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peaks {
    /// The most connections admitted at once.
    pub admitted: usize,
    /// The most requests waiting at once.
    pub waiting: usize,
}

impl fmt::Debug for Gauges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}

/// The gauges of one origin in one partition: a plain record of counters, read as fields.
///
/// [`OriginStats`], what the pool's `stats` returns, answers every question about an origin
/// through methods (totals, peaks, the bound); these rows are the raw counters of one cell
/// that its [`get`](OriginStats::get), [`iter`](OriginStats::iter) and
/// [`total`](OriginStats::total) hand out. [`admitted`](Self::admitted) is the one derived value,
/// a method because it is a sum of four fields, not a counter of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionStats {
    /// Attempts and flights admitted and not yet failed or installed.
    pub establishing: usize,
    /// HTTP/1 connections in the idle set.
    pub h1_idle: usize,
    /// HTTP/1 connections serving (or reserved for) a request.
    pub h1_active: usize,
    /// HTTP/1 connections closed logically whose transport is still live.
    pub h1_draining: usize,
    /// HTTP/2 generations accepting new streams.
    pub h2_accepting: usize,
    /// HTTP/2 generations draining their accepted streams.
    pub h2_draining: usize,
    /// Streams in flight on this partition's HTTP/2 generations, but abandoned ones.
    pub h2_active_streams: usize,
    /// Streams the pool gave up on while the server holds them open (a refused upload waiting
    /// for flow-control window); they count against the server's stream limit only.
    pub h2_abandoned_streams: usize,
    /// Of `h2_active_streams`, requests with a body waiting for their connection's upload
    /// permit: a server that ended a connection when uploads overlapped on it gets one request
    /// body at a time per connection, and a connection where one waits takes no new stream.
    pub h2_uploads_waiting: usize,
    /// Transports whose I/O has not been dropped yet, in any state.
    pub physically_live: usize,
    /// Requests of this partition waiting for a connection.
    pub waiting_requests: usize,
}

impl PartitionStats {
    /// Connections that hold admission: establishing + H1 idle + H1 active + H2 accepting.
    pub fn admitted(&self) -> usize {
        self.establishing
            .saturating_add(self.h1_idle)
            .saturating_add(self.h1_active)
            .saturating_add(self.h2_accepting)
    }

    fn add(&mut self, other: &PartitionStats) {
        self.establishing += other.establishing;
        self.h1_idle += other.h1_idle;
        self.h1_active += other.h1_active;
        self.h1_draining += other.h1_draining;
        self.h2_accepting += other.h2_accepting;
        self.h2_draining += other.h2_draining;
        self.h2_active_streams += other.h2_active_streams;
        self.h2_abandoned_streams += other.h2_abandoned_streams;
        self.h2_uploads_waiting += other.h2_uploads_waiting;
        self.physically_live += other.physically_live;
        self.waiting_requests += other.waiting_requests;
    }
}

/// One method per gauge, each the sum over partitions.
macro_rules! totals {
    ($($(#[$doc:meta])* $field:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $field(&self) -> usize {
                self.rows.iter().map(|(_, row)| row.$field).fold(0, usize::saturating_add)
            }
        )*
    };
}

/// The gauges of one origin across the partitions that have seen it.
///
/// Read it through its methods: every gauge summed over partitions (`waiting_requests()`,
/// `establishing()`, ...), [`admitted`](Self::admitted), the peaks, the bound; and one
/// partition's raw counters with [`get`](Self::get).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OriginStats {
    limit: Option<usize>,
    available: Option<usize>,
    rows: Vec<(PartitionId, PartitionStats)>,
    peaks: Peaks,
    request_quota: Option<u64>,
    uploads_one_at_a_time: bool,
    larger_stream_window: bool,
    sends_empty_data_frames: bool,
    server_idle_timeout: Option<Duration>,
}

impl OriginStats {
    /// Assembles the rows read from each partition's cell.
    pub fn new(limit: Option<usize>, rows: Vec<(PartitionId, PartitionStats)>) -> OriginStats {
        OriginStats {
            limit,
            available: None,
            rows,
            peaks: Peaks::default(),
            request_quota: None,
            uploads_one_at_a_time: false,
            larger_stream_window: false,
            sends_empty_data_frames: false,
            server_idle_timeout: None,
        }
    }

    /// Adds the per-connection request quotas the partitions' cells know (they share one
    /// learner per origin, so these agree but for a forward route's; the smallest is kept).
    pub fn with_request_quotas(mut self, quotas: impl IntoIterator<Item = u64>) -> OriginStats {
        self.request_quota = quotas.into_iter().min();
        self
    }

    /// Sets whether a partition's HTTP/2 connections to the origin send one request body at a
    /// time (see [`uploads_one_at_a_time`](Self::uploads_one_at_a_time)).
    pub fn with_uploads_one_at_a_time(mut self, one_at_a_time: bool) -> OriginStats {
        self.uploads_one_at_a_time = one_at_a_time;
        self
    }

    /// Whether HTTP/2 connections to the origin (in at least one partition) send one request
    /// body at a time: the origin's server ended a connection with
    /// `GOAWAY(ENHANCE_YOUR_CALM)` after uploads overlapped on it (Tomcat's overhead
    /// protection), so each upload there waits for the one before it to get its response
    /// head. Learnt per partition, and kept.
    pub fn uploads_one_at_a_time(&self) -> bool {
        self.uploads_one_at_a_time
    }

    /// Sets whether a partition's HTTP/2 connections to the origin open with a larger stream
    /// window (see [`larger_stream_window`](Self::larger_stream_window)).
    pub fn with_larger_stream_window(mut self, larger: bool) -> OriginStats {
        self.larger_stream_window = larger;
        self
    }

    /// Whether new HTTP/2 connections to the origin (in at least one partition) open with a
    /// 32 MiB stream window instead of hyper's 2 MiB: the origin's server ended a connection
    /// with `GOAWAY(ENHANCE_YOUR_CALM)` while no uploads overlapped on it, for which the
    /// suspect is the rate of the connection's `WINDOW_UPDATE`s (Jetty's rate control), and a
    /// larger window sends fewer. Learnt per partition, and kept; a stream window the caller
    /// set stays as set.
    pub fn larger_stream_window(&self) -> bool {
        self.larger_stream_window
    }

    /// Sets whether a partition's HTTP/2 connections to the origin met empty DATA frames (see
    /// [`sends_empty_data_frames`](Self::sends_empty_data_frames)).
    pub fn with_sends_empty_data_frames(mut self, sends: bool) -> OriginStats {
        self.sends_empty_data_frames = sends;
        self
    }

    /// Whether the origin's HTTP/2 server (in at least one partition) sends DATA frames with no
    /// data that do not end their stream (a relay on hyper sends one per response), of which
    /// h2 allows 100 per connection before it ends the connection itself: its connections take
    /// at most 45 streams, and each retires (`empty_data_frames`) before that limit. Learnt per
    /// partition, and kept.
    pub fn sends_empty_data_frames(&self) -> bool {
        self.sends_empty_data_frames
    }

    /// Adds the idle timeouts the partitions' cells learnt of the origin's server (each
    /// learns its own; the shortest is kept).
    pub fn with_server_idle_timeouts(
        mut self,
        timeouts: impl IntoIterator<Item = Duration>,
    ) -> OriginStats {
        self.server_idle_timeout = timeouts.into_iter().min();
        self
    }

    /// How long the origin's HTTP/1 server keeps an idle connection open, as the pool learnt
    /// it (in at least one partition) from two idle connections the server closed after the
    /// same time without having announced it (no `Keep-Alive: timeout`): idle connections
    /// there retire (`idle_timeout`) a margin before it, so no request meets the server's
    /// close. `None` until learnt.
    pub fn server_idle_timeout(&self) -> Option<Duration> {
        self.server_idle_timeout
    }

    /// How many requests the origin's HTTP/2 server serves on one connection before it ends
    /// the connection with `GOAWAY`, as the pool learnt it from connections the server cut
    /// off in any partition: new connections carry at most that many and
    /// then retire as `request_quota`. `None` until two connections in a row were cut off
    /// after the same count.
    pub fn request_quota(&self) -> Option<u64> {
        self.request_quota
    }

    /// Adds the peaks of every partition's cell (summed).
    pub fn with_peaks(mut self, peaks: impl IntoIterator<Item = Peaks>) -> OriginStats {
        for peak in peaks {
            self.peaks.admitted += peak.admitted;
            self.peaks.waiting += peak.waiting;
        }
        self
    }

    /// Adds the number of permits nobody holds (bounded origins).
    pub fn with_available_permits(mut self, available: Option<usize>) -> OriginStats {
        self.available = available;
        self
    }

    /// For a bounded origin, the permits nobody holds: `limit - available_permits` permits are
    /// held by admitted connections, establishments, and HTTP/1 connections whose socket is
    /// still closing. Once everything has settled, `limit - available - admitted` is the number
    /// of leaked permits, which must be zero.
    pub fn available_permits(&self) -> Option<usize> {
        self.available
    }

    /// Admitted connections across partitions (derived from the rows, not another counter).
    pub fn admitted(&self) -> usize {
        self.rows
            .iter()
            .map(|(_, row)| row.admitted())
            .fold(0, usize::saturating_add)
    }

    /// The configured `max_connections_per_host`, or `None` for an unbounded origin.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The row of one partition.
    pub fn get(&self, partition: PartitionId) -> Option<&PartitionStats> {
        self.rows
            .iter()
            .find(|(id, _)| *id == partition)
            .map(|(_, row)| row)
    }

    /// Every partition row, in partition order.
    pub fn iter(&self) -> impl Iterator<Item = (PartitionId, &PartitionStats)> + '_ {
        self.rows.iter().map(|(id, row)| (*id, row))
    }

    /// Whether no partition has seen this origin.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The peak of admitted connections: with one partition, the most connections of this
    /// origin admitted at once since the pool started or since
    /// its peaks were reset. With several partitions it is the sum of each partition's peak, which
    /// bounds the origin's peak from above (partitions need not peak at the same moment), capped
    /// by the limit of a bounded origin.
    pub fn peak_admitted(&self) -> usize {
        let sum = self.peaks.admitted;
        self.limit.map_or(sum, |limit| sum.min(limit))
    }

    /// The peak of waiting requests, counted like [`peak_admitted`](Self::peak_admitted): exact
    /// with one partition, the sum of each partition's peak with several.
    pub fn peak_waiting(&self) -> usize {
        self.peaks.waiting
    }

    totals! {
        /// Attempts and flights admitted and not yet failed or installed, all partitions.
        establishing;
        /// HTTP/1 connections in the idle sets, all partitions.
        h1_idle;
        /// HTTP/1 connections serving (or reserved for) a request, all partitions.
        h1_active;
        /// HTTP/1 connections closed logically whose transport is still live, all partitions.
        h1_draining;
        /// HTTP/2 generations accepting new streams, all partitions.
        h2_accepting;
        /// HTTP/2 generations draining their accepted streams, all partitions.
        h2_draining;
        /// Streams in flight on HTTP/2 generations, but abandoned ones, all partitions.
        h2_active_streams;
        /// Abandoned HTTP/2 streams the servers still hold open, all partitions.
        h2_abandoned_streams;
        /// Requests with a body waiting for their connection's upload permit, all partitions.
        h2_uploads_waiting;
        /// Transports whose I/O has not been dropped yet, all partitions.
        physically_live;
        /// Requests waiting for a connection, all partitions.
        waiting_requests;
    }

    /// The sum of every partition row.
    pub fn total(&self) -> PartitionStats {
        let mut total = PartitionStats::default();
        for (_, row) in &self.rows {
            total.add(row);
        }
        total
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests;
