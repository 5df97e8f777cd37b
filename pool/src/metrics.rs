//! Publishing the pool's counters and gauges through the [`metrics`] facade (feature
//! `metrics`).
//!
//! With the feature on, every pool publishes unless built with
//! [`Builder::metrics(false)`](crate::Builder::metrics). Counters are recorded as the events
//! happen; gauges are read from the pool's cells when [`ConnectionPool::record_metrics`] runs
//! (call it before each scrape, or on an interval), since the pool keeps its gauges as plain
//! atomics and does not push every change. Without a recorder installed (for example
//! `metrics-exporter-prometheus`'s), the facade discards everything.
//!
//! # Names and labels
//!
//! Labels: `origin` (`scheme://host:port`), `partition` (the partition's index, or
//! `anonymous`), `protocol` (`http1` or `http2`), `reason` (the stable snake_case names of
//! [`CloseReason`] and [`ResendReason`]).
//!
//! | name | type | labels | what |
//! |------|------|--------|------|
//! | `pool_connections_opened_total` | counter | origin, partition, protocol | connections established |
//! | `pool_connections_closed_total` | counter | origin, partition, protocol, reason | connections that stopped accepting work, by why |
//! | `pool_connections_failed_total` | counter | origin, partition | establishments that produced no connection |
//! | `pool_requests_reused_total` | counter | origin, partition, protocol | requests on a connection that had served before, in its own partition |
//! | `pool_requests_borrowed_total` | counter | origin, partition, protocol | requests on another partition's connection (`partition` is the borrower) |
//! | `pool_requests_waited_total` | counter | origin, partition | requests that waited for a connection or permit |
//! | `pool_request_wait_seconds` | histogram | origin, partition | how long those requests waited |
//! | `pool_requests_resent_total` | counter | origin, partition, protocol, reason | transparent re-sends of requests the server did not process |
//! | `pool_connections_establishing` | gauge | origin, partition | establishments in progress |
//! | `pool_connections_idle` | gauge | origin, partition | idle HTTP/1 connections |
//! | `pool_connections_active` | gauge | origin, partition, protocol | HTTP/1 connections serving a request; accepting HTTP/2 connections |
//! | `pool_connections_draining` | gauge | origin, partition, protocol | connections closed to new work whose transport still lives |
//! | `pool_connections_admitted` | gauge | origin, partition | connections holding admission (establishing + idle + active) |
//! | `pool_connections_admitted_peak` | gauge | origin, partition | the most admitted at once since start or [`ConnectionPool::reset_peaks`] |
//! | `pool_requests_waiting` | gauge | origin, partition | requests waiting for a connection |
//! | `pool_requests_waiting_peak` | gauge | origin, partition | the most waiting at once, over the same span |
//! | `pool_http2_streams_active` | gauge | origin, partition | streams in flight on HTTP/2 connections (abandoned ones apart) |
//! | `pool_http2_streams_abandoned` | gauge | origin, partition | streams the pool gave up on that the server holds open (a refused upload waiting for window) |
//! | `pool_http2_uploads_waiting` | gauge | origin, partition | requests with a body waiting for their HTTP/2 connection's upload permit (one body at a time per connection, learnt from a server that ended a connection when uploads overlapped) |
//! | `pool_permits_available` | gauge | origin | permits nobody holds (bounded origins only) |
//! | `pool_redundant_handshakes_total` | counter | | TLS handshakes that lost the HTTP/2 convergence |
//!
//! The counters from events cost one facade call (building the labels) per event, a reuse
//! included; gauges cost nothing until `record_metrics` reads them. When a partition drops the
//! cell of an origin that had nothing in it (see the pool's partition map), that cell's gauges
//! are set to zero once, so a series does not keep the value of its last reading; when a
//! bounded origin is forgotten with its last cell, its `pool_permits_available` is set to its
//! bound once, for the same reason.

use std::time::Duration;

use metrics::{Label, counter, gauge, histogram};
use pool_core::{
    CloseReason, ConnectionEventListener, ConnectionInfo, EventError, OriginKey, PartitionId,
    PartitionStats, Peaks, Protocol, ResendReason,
};

use crate::pool::ConnectionPool;

/// The label value of a protocol.
fn protocol(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Http1 => "http1",
        Protocol::Http2 => "http2",
    }
}

/// `origin` and `partition` labels.
fn where_(origin: &OriginKey, partition: PartitionId) -> Vec<Label> {
    vec![
        Label::new("origin", origin.to_string()),
        Label::new("partition", partition.to_string()),
    ]
}

/// `origin`, `partition` and `protocol` labels of a connection (its owner partition).
fn of(info: &ConnectionInfo, partition: PartitionId) -> Vec<Label> {
    let mut labels = where_(info.origin(), partition);
    labels.push(Label::from_static_parts(
        "protocol",
        protocol(info.protocol()),
    ));
    labels
}

/// The listener that turns lifecycle events into counters.
#[derive(Debug, Default)]
pub(crate) struct MetricsListener;

impl ConnectionEventListener for MetricsListener {
    fn connection_created(&self, info: &ConnectionInfo) {
        counter!("pool_connections_opened_total", of(info, info.partition())).increment(1);
    }

    fn connection_reused(&self, info: &ConnectionInfo) {
        counter!("pool_requests_reused_total", of(info, info.partition())).increment(1);
    }

    fn connection_borrowed(&self, info: &ConnectionInfo, borrower: PartitionId) {
        counter!("pool_requests_borrowed_total", of(info, borrower)).increment(1);
    }

    fn connection_closed(
        &self,
        info: &ConnectionInfo,
        reason: CloseReason,
        _error: Option<&EventError>,
    ) {
        let mut labels = of(info, info.partition());
        labels.push(Label::from_static_parts("reason", reason.as_str()));
        counter!("pool_connections_closed_total", labels).increment(1);
    }

    fn request_resent(&self, info: &ConnectionInfo, reason: ResendReason, _attempt: u32) {
        let mut labels = of(info, info.partition());
        labels.push(Label::from_static_parts("reason", reason.as_str()));
        counter!("pool_requests_resent_total", labels).increment(1);
    }

    fn connection_failed(&self, origin: &OriginKey, partition: PartitionId, _error: &EventError) {
        counter!("pool_connections_failed_total", where_(origin, partition)).increment(1);
    }
}

/// A request waited `waited` for a connection of `origin` in `partition`.
pub(crate) fn waited(origin: &OriginKey, partition: PartitionId, waited: Duration) {
    let labels = where_(origin, partition);
    counter!("pool_requests_waited_total", labels.clone()).increment(1);
    histogram!("pool_request_wait_seconds", labels).record(waited.as_secs_f64());
}

/// Publishes the gauges of one (origin, partition) cell.
fn publish(origin: &OriginKey, partition: PartitionId, row: &PartitionStats, peaks: Peaks) {
    let labels = where_(origin, partition);
    let set = |name: &'static str, value: usize| {
        gauge!(name, labels.clone()).set(value as f64);
    };
    set("pool_connections_establishing", row.establishing);
    set("pool_connections_idle", row.h1_idle);
    set("pool_connections_admitted", row.admitted());
    set("pool_connections_admitted_peak", peaks.admitted);
    set("pool_requests_waiting", row.waiting_requests);
    set("pool_requests_waiting_peak", peaks.waiting);
    set("pool_http2_streams_active", row.h2_active_streams);
    set("pool_http2_streams_abandoned", row.h2_abandoned_streams);
    set("pool_http2_uploads_waiting", row.h2_uploads_waiting);
    for (proto, active, draining) in [
        (Protocol::Http1, row.h1_active, row.h1_draining),
        (Protocol::Http2, row.h2_accepting, row.h2_draining),
    ] {
        let mut labels = labels.clone();
        labels.push(Label::from_static_parts("protocol", protocol(proto)));
        gauge!("pool_connections_active", labels.clone()).set(active as f64);
        gauge!("pool_connections_draining", labels).set(draining as f64);
    }
}

/// A partition dropped its cell of `origin`, which had nothing in it: its gauges read zero from
/// now on, not whatever the last [`ConnectionPool::record_metrics`] published, since that
/// no longer reads them.
pub(crate) fn cell_dropped(origin: &OriginKey, partition: PartitionId) {
    publish(
        origin,
        partition,
        &PartitionStats::default(),
        Peaks::default(),
    );
}

/// The pool forgot `origin`'s admission (its cells were dropped in every partition): every
/// one of its `limit` permits is free, whatever the last
/// [`ConnectionPool::record_metrics`] published, since that no longer reads them.
pub(crate) fn admission_forgotten(origin: &OriginKey, limit: usize) {
    gauge!("pool_permits_available", "origin" => origin.to_string()).set(limit as f64);
}

impl ConnectionPool {
    /// Publishes the pool's gauges (every origin in every partition) and its pool-wide
    /// counters through the `metrics` facade, under the names in the
    /// [`metrics` module docs](crate::metrics). Call it before each scrape or on an interval;
    /// it reads relaxed atomics and takes each partition's map lock briefly.
    pub fn record_metrics(&self) {
        for reading in self.readings() {
            publish(
                &reading.origin,
                reading.partition,
                &reading.row,
                reading.peaks,
            );
        }
        for origin in self.origins() {
            if let Some(available) = self.stats(&origin).available_permits() {
                gauge!("pool_permits_available", "origin" => origin.to_string())
                    .set(available as f64);
            }
        }
        counter!("pool_redundant_handshakes_total").absolute(self.counters().redundant_handshakes);
    }
}
