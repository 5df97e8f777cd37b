//! What the local origin's listeners accepted, and a way to read it once the accept loops have
//! caught up.
//!
//! A client's `connect` returns when the kernel has completed the handshake and queued the
//! connection for `accept`, not when the server's accept loop has taken it. So a count read
//! right after a run can miss connections the pool already counts as opened (CI once saw 150
//! accepted beside 151 opened, on a run whose last connections close unused).
//! [`Accepts::settle`] closes that gap without waiting for time to pass: it connects a marker
//! of its own and waits until the accept loop takes it. The kernel queues completed handshakes
//! in order and the accept loop takes them in order, so once the marker is taken every
//! connection that completed its handshake before the marker's has been counted. The marker
//! itself is not counted and is closed at once.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpSocket;
use tokio::sync::oneshot;

use super::Flavor;

/// How long [`Accepts::settle`] waits for its marker: a bound for an accept loop that is gone
/// (a runtime shutting down), far above a loopback connect.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// Per listener ([`Flavor`]): connections accepted, and the marker being waited for.
#[derive(Debug, Default)]
pub(super) struct Accepts {
    listeners: [Listener; 3],
}

#[derive(Debug, Default)]
struct Listener {
    accepted: AtomicU64,
    /// The local address of the marker connection [`Accepts::settle`] made, and whom to tell
    /// when the accept loop takes it.
    marker: Mutex<Option<(SocketAddr, oneshot::Sender<()>)>>,
}

impl Accepts {
    /// Counts a connection the `flavor` listener accepted from `peer`; false when it is a
    /// marker (not counted: the caller closes it).
    pub(super) fn accepted_from(&self, flavor: Flavor, peer: SocketAddr) -> bool {
        let listener = &self.listeners[flavor.index()];
        let mut marker = listener
            .marker
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if marker.as_ref().is_some_and(|(addr, _)| *addr == peer) {
            if let Some((_, taken)) = marker.take() {
                let _ = taken.send(());
            }
            return false;
        }
        drop(marker);
        listener.accepted.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Connections the `flavor` listener has accepted so far.
    pub(super) fn get(&self, flavor: Flavor) -> u64 {
        self.listeners[flavor.index()]
            .accepted
            .load(Ordering::Relaxed)
    }

    /// Connects a marker to the `flavor` listener at `addr` and waits (at most
    /// [`SETTLE_LIMIT`]) until its accept loop takes it, so every connection completed before
    /// now has been counted.
    ///
    /// # Errors
    ///
    /// When the marker cannot connect or is not accepted in time.
    pub(super) async fn settle(&self, flavor: Flavor, addr: SocketAddr) -> io::Result<()> {
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        // Bound before connecting, so the accept loop knows the marker's address before its
        // handshake can complete: registering after `connect` could miss an accept that won.
        socket.bind(SocketAddr::new(addr.ip(), 0))?;
        let (taken, was_taken) = oneshot::channel();
        let local = socket.local_addr()?;
        *self.listeners[flavor.index()]
            .marker
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((local, taken));
        let _marker = socket.connect(addr).await?;
        match tokio::time::timeout(SETTLE_LIMIT, was_taken).await {
            Ok(Ok(())) => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the local origin's accept loop did not take its marker",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Three connections complete their handshakes before the accept loop starts; settling
    /// counts all three (they are queued ahead of the marker) and not the marker.
    #[tokio::test(flavor = "current_thread")]
    async fn settling_counts_every_connection_queued_before_it_and_not_itself() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(TcpStream::connect(addr).await.unwrap());
        }
        let accepts = Arc::new(Accepts::default());
        let counting = accepts.clone();
        // On this one-thread runtime the loop first runs when the test awaits below.
        let accept_loop = tokio::spawn(async move {
            while let Ok((_stream, peer)) = listener.accept().await {
                counting.accepted_from(Flavor::Http1, peer);
            }
        });
        assert_eq!(accepts.get(Flavor::Http1), 0, "queued, not yet accepted");
        accepts.settle(Flavor::Http1, addr).await.unwrap();
        assert_eq!(accepts.get(Flavor::Http1), 3);
        assert_eq!(accepts.get(Flavor::H2c), 0);
        accept_loop.abort();
    }
}
