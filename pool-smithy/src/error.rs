//! `pool::Error` to the SDK's `ConnectorError`: the kind its retry classifier reads, and
//! whether a connection was involved.
//!
//! The SDK's transient-error classifier retries `timeout` and `io` errors and `other` errors
//! that carry a retry kind; `user` errors and `other` without a kind are final. The mapping,
//! first match wins:
//!
//! | pool error | `ConnectorError` |
//! |---|---|
//! | invalid URI, `HTTP/2.0` required of an HTTP/1 origin | `user` |
//! | any timeout (connect, pool, hyper's, the kernel's `ETIMEDOUT`) | `timeout` |
//! | connect failure: resolve, TCP, TLS, certificate, proxy, HTTP handshake | `io` |
//! | incomplete message (the peer closed mid-message) | `other(TransientError)` |
//! | reset, `GOAWAY`, `REFUSED_STREAM`, not processed by the server, canceled establishment, an I/O error or a closed connection in the chain | `io` |
//! | the origin's pending cap reached (`max_pending_per_host`) | `other(ThrottlingError)`: local load shedding, so the SDK backs off |
//! | anything else | `other` without a kind |
//!
//! A failure that happened on a connection carries its metadata (`with_connection`); one that
//! happened before any connection served the request (connect failures, pool timeout,
//! saturation, invalid URI) is marked `never_connected`.

use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::retry::ErrorKind;

use crate::metadata::connection_metadata;

/// The SDK's error for a failed pool request.
pub(crate) fn connector_error(error: pool::Error) -> ConnectorError {
    let connection = error.connection().map(connection_metadata);
    let mapped = classify(error);
    match connection {
        Some(metadata) => mapped.with_connection(metadata),
        None => mapped.never_connected(),
    }
}

fn classify(error: pool::Error) -> ConnectorError {
    if error.is_invalid_uri() || error.is_unsupported_version() {
        ConnectorError::user(error.into())
    } else if error.is_timeout() {
        ConnectorError::timeout(error.into())
    } else if error.is_connect() {
        ConnectorError::io(error.into())
    } else if error.is_incomplete_message() {
        ConnectorError::other(error.into(), Some(ErrorKind::TransientError))
    } else if error.is_reset()
        || error.is_go_away()
        || error.is_refused_stream()
        || error.is_retryable()
        || error.is_canceled()
        || has_io_source(&error)
    {
        ConnectorError::io(error.into())
    } else if error.is_saturated() {
        ConnectorError::other(error.into(), Some(ErrorKind::ThrottlingError))
    } else {
        ConnectorError::other(error.into(), None)
    }
}

/// Whether the source chain holds a transport failure: an `std::io::Error`, or hyper saying
/// the connection closed or the request was canceled with it.
fn has_io_source(error: &pool::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = next {
        if current.is::<std::io::Error>() {
            return true;
        }
        if let Some(hyper) = current.downcast_ref::<hyper::Error>()
            && (hyper.is_closed() || hyper.is_canceled())
        {
            return true;
        }
        next = current.source();
    }
    false
}
