//! What the SDK learns about the connection that served (or failed) a request.
//!
//! * `ConnectionMetadata`: remote and local address, the pool's connection id, whether a proxy
//!   carried it, the establishment's timings, and a poison function that poisons the pool's
//!   connection (it finishes its current work, then closes with `CloseReason::Poisoned`; an
//!   HTTP/2 connection stops accepting streams at once).
//! * `CaptureSmithyConnection` (the connection-poisoning interceptor's): a retriever that
//!   builds that metadata only when the interceptor asks, after a transient error.
//! * `CaptureHttpAttemptTelemetry` (the metrics interceptor's): the connection selection
//!   (how long the request waited in the pool, fresh or reused) and the connector call's
//!   duration on the operation's time source.
//!
//! `ConnectionMetadata` has no field for reuse; whether the connection was reused reaches the
//! SDK as the selection's `ConnectionUsage`.

use std::time::{Duration, SystemTime};

use aws_smithy_async::time::SharedTimeSource;
use aws_smithy_runtime_api::client::connection::{
    CaptureSmithyConnection, ConnectionEstablishmentMetadata, ConnectionId, ConnectionMetadata,
};
use aws_smithy_runtime_api::client::http::telemetry::{
    CaptureHttpAttemptTelemetry, ConnectionAcquisitionTelemetry, ConnectionUsage,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use pool::ConnectionHandle;

/// The SDK's description of a pool connection, poisoning included.
pub(crate) fn connection_metadata(handle: &ConnectionHandle) -> ConnectionMetadata {
    let info = handle.info();
    let timings = info.timings();
    let mut establishment = ConnectionEstablishmentMetadata::builder()
        .total_duration(timings.handshake)
        .transport_duration(timings.tls.unwrap_or(timings.connect))
        .protocol_handshake_duration(
            timings
                .handshake
                .saturating_sub(timings.tls.unwrap_or(timings.connect)),
        )
        .dns_duration(timings.resolve)
        .socket_connect_duration(timings.connect.saturating_sub(timings.resolve));
    if let Some(tls) = timings.tls {
        establishment = establishment.tls_duration(tls.saturating_sub(timings.connect));
    }
    let mut builder = ConnectionMetadata::builder()
        .proxied(info.proxy().is_some())
        .connection_id(ConnectionId::new(handle.id().as_u64()));
    builder.set_remote_addr(info.remote_addr());
    builder.set_local_addr(info.local_addr());
    builder = builder.establishment(establishment.build());
    let poisoned = handle.clone();
    builder.poison_fn(move || poisoned.poison()).build()
}

/// The SDK's captures a request carries, taken before the request is converted.
pub(crate) struct Captures {
    connection: Option<CaptureSmithyConnection>,
    telemetry: Option<(CaptureHttpAttemptTelemetry, SystemTime)>,
}

impl Captures {
    /// Reads the captures from `request`; the call's start is read from `time` only when the
    /// request asks for telemetry.
    pub(crate) fn of(request: &HttpRequest, time: &SharedTimeSource) -> Captures {
        Captures {
            connection: request.extension::<CaptureSmithyConnection>().cloned(),
            telemetry: request
                .extension::<CaptureHttpAttemptTelemetry>()
                .map(|capture| (capture.clone(), time.now())),
        }
    }

    /// Publishes the connection that served or failed the request, if any.
    pub(crate) fn connection(&self, handle: Option<&ConnectionHandle>) {
        let Some(handle) = handle else { return };
        if let Some(capture) = &self.connection {
            let handle = handle.clone();
            capture.set_connection_retriever(move || Some(connection_metadata(&handle)));
        }
        if let Some((telemetry, _)) = &self.telemetry {
            let usage = if handle.is_reused() {
                ConnectionUsage::Reused
            } else {
                ConnectionUsage::Fresh
            };
            let waited = handle.wait_time().unwrap_or(Duration::ZERO);
            telemetry.record_connection_selection(
                ConnectionAcquisitionTelemetry::new(waited, usage),
                connection_metadata(handle),
            );
        }
    }

    /// Records how long the connector call took, on the operation's time source.
    pub(crate) fn finish(&self, time: &SharedTimeSource) {
        if let Some((telemetry, started)) = &self.telemetry
            && let Ok(elapsed) = time.now().duration_since(*started)
        {
            telemetry.record_connector_call_duration(elapsed);
        }
    }
}
