//! One HTTP/2 exchange: send the request on a stream lease of a generation, retire the
//! generation when its connection failed (GOAWAY, closed dispatcher, I/O error), and wrap the
//! response body so the stream ends with it.

use std::time::Duration;

use http::Request;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;
use pool_core::{CloseReason, ResendReason};
use pool_h2::{H2SendOutcome, StreamLease};

use super::Exchange;
use super::deadline::ReadDeadline;
use super::resend::Again;
use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::error::Error;

/// Sends `request` on `lease`, one stream of an accepting generation.
pub(super) async fn exchange(
    client: &Client,
    entry: &Arc<CellEntry>,
    lease: StreamLease<RequestBody>,
    request: Request<RequestBody>,
    waited: Option<Duration>,
    deadline: &mut ReadDeadline,
) -> Result<Exchange, Error> {
    let served = client.dispatching(lease.record(), waited);
    let sent = lease.send(request);
    match deadline.bound(&*client.pool.shared.sleep, sent).await? {
        H2SendOutcome::Response(response, guard) => {
            Ok(client.respond(response, served, |incoming, handle| {
                Body::h2(incoming, guard, handle)
            }))
        }
        H2SendOutcome::Unsent {
            request: unsent,
            error,
            reused,
        } => {
            // hyper's dispatcher for this generation is gone.
            retire(entry, &served.record);
            Ok(Exchange::Again(Again {
                reason: ResendReason::Unsent,
                error,
                record: served.record,
                reused,
                request: Some(unsent),
            }))
        }
        H2SendOutcome::Failed {
            error,
            connection_level,
            not_processed,
        } => {
            if connection_level {
                // Its re-sends must not come back here: after GOAWAY the generation still
                // looks open to hyper until its dispatcher ends.
                retire(entry, &served.record);
            }
            match not_processed {
                Some(reason) => Ok(Exchange::Again(Again {
                    reason,
                    error,
                    record: served.record,
                    reused: served.reused,
                    request: None,
                })),
                None => Err(Error::request(error)),
            }
        }
    }
}

/// Takes a generation whose connection failed out of its cell, so the next request gets a
/// replacement while the streams it accepted drain.
fn retire(entry: &CellEntry, record: &Arc<ConnectionRecord>) {
    record.close(CloseReason::ProtocolClosed, None);
    entry.cell.retire_h2(record);
}
