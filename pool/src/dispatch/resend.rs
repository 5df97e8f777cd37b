//! The transparent re-send: when a request may go round the dispatch loop again.
//!
//! The only case today: hyper handed the request back *unsent* from a connection that had
//! served requests before (it closed while idle, and the request never reached the wire). The
//! pool then sends the same request again on another connection. A request hyper accepted is
//! never cloned or replayed, and a fresh connection that cannot take its first request fails
//! the request: that says something about the origin, not about a stale connection.

use pool_core::connection::ConnectionRecord;

use crate::client::Client;
use crate::error::Error;

/// Decides for a request hyper handed back unsent from the connection of `record`: `Ok` sends
/// it again (counted as a retry), `Err` fails it with hyper's `error`.
pub(super) fn unsent(
    client: &Client,
    record: &ConnectionRecord,
    error: hyper::Error,
    reused: bool,
) -> Result<(), Error> {
    if !reused {
        return Err(Error::request(error));
    }
    tracing::debug!(connection = %record.info().id(), "stale connection; re-sending");
    client.pool.shared.count_retry();
    Ok(())
}
