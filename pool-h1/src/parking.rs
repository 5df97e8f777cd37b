//! Where a connection waits, after its exchange, for hyper to be ready for another request.
//!
//! hyper's dispatcher marks itself ready for the next request in the same poll that ends a
//! response body, so most connections go home straight from the body. When the reader saw the
//! end first (it ran on another thread while the dispatcher was still finishing), the
//! connection is parked here and its driver, which is the task that makes the sender ready,
//! sends it home at the end of that very poll. No task is spawned and nothing waits on a timer.

use std::fmt;
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;
use pool_core::CloseReason;
use pool_core::sync::Mutex;
use pool_core::sync::atomic::{AtomicBool, Ordering};

use crate::connection::H1Connection;

/// The parking spot of one HTTP/1 connection, shared by its exchanges and its driver.
pub struct ParkingSpot<B> {
    /// The driver task, registered on every poll.
    driver: AtomicWaker,
    /// Whether `parked` holds a connection (checked without the lock on every driver poll).
    occupied: AtomicBool,
    /// The connection waiting for readiness.
    parked: Mutex<Option<H1Connection<B>>>,
}

impl<B> Default for ParkingSpot<B> {
    fn default() -> Self {
        ParkingSpot {
            driver: AtomicWaker::new(),
            occupied: AtomicBool::new(false),
            parked: Mutex::new(None),
        }
    }
}

impl<B: Send + 'static> ParkingSpot<B> {
    /// Parks `conn` and wakes the driver.
    pub(crate) fn park(&self, conn: H1Connection<B>) {
        *self.parked.lock() = Some(conn);
        self.occupied.store(true, Ordering::Release);
        self.driver.wake();
    }

    /// Called by the connection's driver after each poll of hyper's connection future: sends a
    /// parked connection home once hyper is ready for another request.
    ///
    /// # Concurrency
    ///
    /// The waker is registered before `occupied` is read, so a `park` that lands after the read
    /// wakes this driver again: a parked connection is never left unnoticed.
    pub fn poll_parked(&self, cx: &mut Context<'_>) {
        self.driver.register(cx.waker());
        if !self.occupied.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(mut conn) = self.parked.lock().take() else {
            return;
        };
        match conn.sender_mut().poll_ready(cx) {
            Poll::Ready(Ok(())) => conn.go_home(),
            Poll::Ready(Err(error)) => {
                conn.record()
                    .close(CloseReason::ProtocolClosed, Some(Box::new(error)));
            }
            Poll::Pending => {
                *self.parked.lock() = Some(conn);
                self.occupied.store(true, Ordering::Release);
            }
        }
    }

    /// The driver ended: a parked connection can never become ready.
    pub fn clear(&self) {
        self.occupied.store(false, Ordering::Release);
        let parked = self.parked.lock().take();
        if let Some(conn) = parked {
            conn.record().close(CloseReason::ProtocolClosed, None);
        }
    }
}

impl<B> fmt::Debug for ParkingSpot<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParkingSpot")
            .field("occupied", &self.occupied.load(Ordering::Relaxed))
            .finish()
    }
}
