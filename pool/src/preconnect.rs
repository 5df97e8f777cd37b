//! Warm-up: opening connections to an origin before requests need them.
//!
//! [`Client::preconnect`] runs `n` acquisitions at once through the client's partition, exactly
//! as `n` concurrent requests would (so bound, fairness, single flight and protocol memory all
//! apply), holds every connection it gets until all of them are in, then returns the HTTP/1
//! connections to the idle set. Holding them is what makes the count exact: a connection given
//! back early would serve one of the other acquisitions instead of a new connection being
//! opened. Connections established for a warm-up say [`OpenReason::Preconnect`] in their
//! [`ConnectionInfo`](pool_core::ConnectionInfo), and so in every event about them.
//!
//! What counts: idle connections already there are taken first (a warm-up *ensures* up to `n`
//! connections, it does not add `n` more), and an HTTP/2 origin is warm with one generation,
//! since its streams share the connection. On a bounded origin a warm-up asks for no more than
//! its partition's equal share of the bound: holding while waiting is safe only when every
//! partition's warm-up can be whole at once (a warm-up of one acquisition holds nothing while it
//! waits, hence the share's floor of one).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pool_core::OpenReason;
use pool_core::sync::Arc;
use pool_core::waiter::Requirement;
use pool_h1::{H1Connection, H1Home};

use crate::body::RequestBody;
use crate::cell::{CellEntry, Selected, Wanted};
use crate::client::Client;
use crate::dispatch::deadline::RequestDeadline;
use crate::error::Error;

/// What a warm-up achieved.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Preconnected {
    /// HTTP/1 connections that were ready (and are now idle) when the warm-up ended: new ones
    /// and idle ones it found.
    pub http1: usize,
    /// Whether an HTTP/2 connection serves the origin (a warm origin needs only one).
    pub http2: bool,
    /// The establishments that failed, one error each.
    pub errors: Vec<Error>,
}

impl Preconnected {
    /// Connections ready to serve the origin: the HTTP/1 ones plus the HTTP/2 one, if any.
    pub fn connections(&self) -> usize {
        self.http1 + usize::from(self.http2)
    }
}

impl Client {
    /// Opens up to `n` connections to the origin of `uri` in this client's partition, and
    /// returns once each is ready (and idle) or has failed.
    ///
    /// The warm-up competes like `n` requests, and waits for permits within this client's pool
    /// timeout. A bounded origin lends it at most this partition's equal share of
    /// `max_connections_per_host` (the bound divided by the pool's partitions, rounded down,
    /// and at least one; the whole bound in a pool of one partition), so that warm-ups run in
    /// every partition at once always fit in the bound. Idle connections already there count
    /// towards `n`.
    /// Once the origin is known to speak HTTP/2, one connection serves it, whatever `n` says.
    /// Connections it opens report [`OpenReason::Preconnect`].
    ///
    /// # Errors
    ///
    /// An invalid URI fails at once; failed establishments are listed in
    /// [`Preconnected::errors`] instead.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future withdraws the acquisitions still waiting and returns the
    /// connections already held to the idle set; establishments already started continue and
    /// serve the next request.
    pub async fn preconnect(&self, uri: &http::Uri, n: usize) -> Result<Preconnected, Error> {
        let entry = self.cell_for(uri)?;
        // A warm-up holds what it gets until all of it is in. Two warm-ups that each asked
        // for more than half of a bound could each hold part of it and wait for the rest,
        // which only the other gives back: a share each keeps every warm-up within reach.
        let n = match entry.cell.admission() {
            Some(admission) => n.min((admission.limit() / admission.partitions().max(1)).max(1)),
            None => n,
        };
        let warms = (0..n).map(|_| warm(self, uri, &entry)).collect();
        let mut report = Preconnected::default();
        let mut held = Vec::new();
        for outcome in JoinAll::new(warms).await {
            match outcome {
                Ok(Warm::Http1(conn)) => held.push(conn),
                Ok(Warm::Http2) => report.http2 = true,
                Err(error) => report.errors.push(error),
            }
        }
        report.http1 = held.len();
        // Every acquisition is in: the connections go to the idle set now.
        drop(held);
        Ok(report)
    }
}

/// One acquisition of a warm-up, holding what it got.
enum Warm {
    /// An HTTP/1 connection, returned to its cell when dropped.
    Http1(Held),
    /// A stream lease of the generation, released at once: the generation is what was wanted.
    Http2,
}

async fn warm(client: &Client, uri: &http::Uri, entry: &Arc<CellEntry>) -> Result<Warm, Error> {
    let mut queue = RequestDeadline::pool(client.pool_timeout);
    let mut waited = None;
    let mut entry = entry.clone();
    let selected = CellEntry::acquire(
        &mut entry,
        uri,
        Wanted {
            reason: OpenReason::Preconnect,
            requirement: Requirement::Any,
            arrival: None,
            progress: None,
        },
        client,
        &mut queue,
        &mut waited,
    )
    .await?;
    Ok(match selected {
        Selected::H1(conn) => Warm::Http1(Held {
            entry,
            conn: Some(conn),
        }),
        Selected::H2(_lease) => Warm::Http2,
    })
}

/// An HTTP/1 connection a warm-up holds; it goes home (to the idle set, or a waiting request)
/// when dropped.
struct Held {
    entry: Arc<CellEntry>,
    conn: Option<H1Connection<RequestBody>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.entry.release(conn);
        }
    }
}

/// Polls every future to completion, keeping the outputs in order (a warm-up needs all of them
/// before it lets any connection go).
struct JoinAll<F: Future> {
    futures: Vec<Option<Pin<Box<F>>>>,
    outputs: Vec<Option<F::Output>>,
}

impl<F: Future> JoinAll<F> {
    fn new(futures: Vec<F>) -> JoinAll<F> {
        let outputs = futures.iter().map(|_| None).collect();
        JoinAll {
            futures: futures.into_iter().map(|f| Some(Box::pin(f))).collect(),
            outputs,
        }
    }
}

impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut pending = false;
        for (slot, output) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(
            this.outputs
                .iter_mut()
                .map(|o| o.take().expect("every future completed"))
                .collect(),
        )
    }
}
