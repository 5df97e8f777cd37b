//! Where a connection waits, after its exchange, for hyper to be ready for another request.
//!
//! hyper's dispatcher marks itself ready for the next request in the same poll that ends a
//! response body, so most connections go home straight from the body. When the reader saw the
//! end first (it ran on another thread while the dispatcher was still finishing), the
//! connection is parked here and its driver, which is the task that makes the sender ready,
//! sends it home at the end of that very poll. No task is spawned and nothing waits on a timer.
//!
//! The protocol lives in [`Spot`], generic over what waits in it, so that a loom model
//! (`loom_models`) can check it with a stand-in for the connection. Its flag, whether a
//! connection is parked, lives in the connection's record (`ConnectionRecord::h1_parked`):
//! the driver reads it after every poll, and there it shares a cache line with what every
//! exchange touches anyway.

use std::fmt;
use std::task::{Context, Poll, Waker};

use pool_core::CloseReason;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::atomic::{AtomicBool, Ordering};
use pool_core::sync::{Arc, Mutex};

use crate::connection::H1Connection;
use crate::gate::BodyGate;

/// The parking spot of one HTTP/1 connection, shared by its exchanges and its driver.
pub struct ParkingSpot<B> {
    spot: Spot<Returning<B>>,
}

/// A connection on its way home, with the gate of a request body it was still sending when
/// its response ended: whoever waits for that upload learns the exchange is over once the
/// connection is home (hyper is ready only after the body's last byte was written) or retired.
pub(crate) struct Returning<B> {
    pub(crate) conn: H1Connection<B>,
    pub(crate) upload: Option<Arc<BodyGate>>,
}

impl<B> Returning<B> {
    fn over(upload: Option<Arc<BodyGate>>) {
        if let Some(gate) = upload {
            gate.exchange_over();
        }
    }
}

impl<B> Default for ParkingSpot<B> {
    fn default() -> Self {
        ParkingSpot { spot: Spot::new() }
    }
}

impl<B: Send + 'static> ParkingSpot<B> {
    /// Parks `conn` and wakes the driver; a driver that already ended retires it instead.
    pub(crate) fn park(&self, conn: Returning<B>) {
        // The record outlives the park: the spot may hand the connection on before it returns.
        let record = conn.conn.record().clone();
        self.spot.park(record.h1_parked(), conn);
    }

    /// Called by the connection's driver after each poll of hyper's connection future: sends a
    /// parked connection home once hyper is ready for another request. `registered` is the
    /// driver's own copy of the waker it last stored here; `record` is the connection's.
    ///
    /// # Concurrency
    ///
    /// The driver stores its waker (under the spot's lock for it) before it reads whether a
    /// connection is parked, and a park marks the connection parked before it takes that lock
    /// to read the waker. Through the lock's order, either the park finds the driver's current
    /// waker, or the driver's read (in this poll or a later one) finds the connection.
    pub fn poll_parked(
        &self,
        record: &ConnectionRecord,
        cx: &mut Context<'_>,
        registered: &mut Option<Waker>,
    ) {
        self.spot.poll_parked(record.h1_parked(), cx, registered);
    }

    /// The driver of the connection of `record` ended: a parked connection can never become
    /// ready.
    pub fn clear(&self, record: &ConnectionRecord) {
        self.spot.clear(record.h1_parked());
    }
}

impl<B> fmt::Debug for ParkingSpot<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParkingSpot")
            .field("parked", &self.spot.parked.lock().is_some())
            .finish()
    }
}

/// What waits in a [`Spot`].
pub(crate) trait Parked: Send + 'static {
    /// Whether the sender is ready for another request.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>>;
    /// Goes home to its cell.
    fn go_home(self);
    /// Retires, for `reason`.
    fn retire(self, reason: CloseReason, error: Option<hyper::Error>);
}

impl<B: Send + 'static> Parked for Returning<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        self.conn.sender_mut().poll_ready(cx)
    }

    fn go_home(self) {
        H1Connection::go_home(self.conn);
        Returning::<B>::over(self.upload);
    }

    fn retire(self, reason: CloseReason, error: Option<hyper::Error>) {
        self.conn
            .record()
            .close(reason, error.map(|e| Box::new(e) as _));
        Returning::<B>::over(self.upload);
    }
}

/// The driver, as the spot knows it.
enum Driver {
    /// Running; its waker once it polled.
    Running(Option<Waker>),
    /// Ended: nothing parked here can become ready any more.
    Ended,
}

/// The spot's protocol, over whatever waits in it. Its `occupied` flag (whether `parked` holds
/// a connection, checked without the lock on every driver poll) is the caller's to keep and
/// is passed to each call: the record's for a connection, the model's own in the loom models.
pub(crate) struct Spot<P> {
    /// The driver task's waker, stored when the driver's waker changes and woken by reference,
    /// so one registration serves every park (the driver polls once per request; an
    /// `AtomicWaker` would have it register again on each of those polls).
    driver: Mutex<Driver>,
    /// The connection waiting for readiness.
    parked: Mutex<Option<P>>,
}

impl<P> Spot<P> {
    pub(crate) fn new() -> Spot<P> {
        Spot {
            driver: Mutex::new(Driver::Running(None)),
            parked: Mutex::new(None),
        }
    }
}

impl<P: Parked> Spot<P> {
    /// Parks `conn` and wakes the driver.
    ///
    /// A driver that ended in the meantime (after the caller found the sender open) will never
    /// take it: the connection is then retired here. `clear` marks the end under the `driver`
    /// lock before it empties the spot, and this parks before it takes that lock, so either
    /// `clear` finds the connection or this finds the end.
    pub(crate) fn park(&self, occupied: &AtomicBool, conn: P) {
        *self.parked.lock() = Some(conn);
        occupied.store(true, Ordering::Release);
        let running = match &*self.driver.lock() {
            Driver::Running(waker) => Some(waker.clone()),
            Driver::Ended => None,
        };
        match running {
            Some(Some(waker)) => waker.wake(),
            // The driver has not polled yet: its first poll finds the connection.
            Some(None) => {}
            None => {
                let parked = self.parked.lock().take();
                if let Some(conn) = parked {
                    conn.retire(CloseReason::ProtocolClosed, None);
                }
            }
        }
    }

    /// See [`ParkingSpot::poll_parked`]. In this type's terms: the driver stores its waker
    /// under the `driver` lock before it reads `occupied`, and `park` sets `occupied` before it
    /// takes that lock. A driver whose waker changed (another executor or task) stores the new
    /// one first. `loom_models` checks both races.
    pub(crate) fn poll_parked(
        &self,
        occupied: &AtomicBool,
        cx: &mut Context<'_>,
        registered: &mut Option<Waker>,
    ) {
        if !registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            let waker = cx.waker().clone();
            *self.driver.lock() = Driver::Running(Some(waker.clone()));
            *registered = Some(waker);
        }
        if !occupied.load(Ordering::Acquire) || !occupied.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(mut conn) = self.parked.lock().take() else {
            return;
        };
        match conn.poll_ready(cx) {
            Poll::Ready(Ok(())) => conn.go_home(),
            Poll::Ready(Err(error)) => conn.retire(CloseReason::ProtocolClosed, Some(error)),
            Poll::Pending => {
                *self.parked.lock() = Some(conn);
                occupied.store(true, Ordering::Release);
            }
        }
    }

    /// See [`ParkingSpot::clear`].
    pub(crate) fn clear(&self, occupied: &AtomicBool) {
        occupied.store(false, Ordering::Release);
        // Marked before the spot is emptied (see `park`). The waker it drops refers to the
        // driver's task, which holds this spot: the task can go.
        *self.driver.lock() = Driver::Ended;
        let parked = self.parked.lock().take();
        if let Some(conn) = parked {
            conn.retire(CloseReason::ProtocolClosed, None);
        }
    }
}
