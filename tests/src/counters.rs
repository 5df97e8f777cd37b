//! Connection counters shared by both scripted servers, and the append-only logs they record into.
//!
//! Counters are updated by the accept loop and by a drop guard owned by each connection task, so
//! a connection aborted by [`shutdown`](crate::h1::ScriptedH1Server::shutdown) is still counted as
//! closed. Updates go through a `tokio::sync::watch` channel so tests can await a condition
//! ("two connections accepted", "no connection open") instead of sleeping.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

/// A snapshot of a server's connection counters.
///
/// `accepted` and `open` change when the accept loop takes a socket from the kernel, not when the
/// client's `connect()` returns: a test that just connected must
/// [`wait_for_accepted`](crate::h1::ScriptedH1Server::wait_for_accepted) before reading them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnCounters {
    /// Connections accepted since the server started (also the next connection id).
    pub accepted: usize,
    /// Connections whose task is still running (accepted and not yet closed).
    pub open: usize,
    /// The most connections open at once, counted at each accept: the new one plus every
    /// earlier one whose task still runs and whose client has not closed its side. (A client
    /// closes a socket before it dials the next one, but the server may accept the new one
    /// before its task reads the old one's end of stream; the peer's close is what the client
    /// controls, so that is what is counted.)
    pub max_open: usize,
    /// Connections whose task ended (closed by the script, the client, an error or shutdown).
    pub closed: usize,
    /// TLS handshakes that completed.
    pub tls_handshakes: usize,
    /// TLS handshakes that failed (for example, the client rejected the certificate).
    pub tls_failures: usize,
}

/// What the server knows about one accepted connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// Connection id: the 0-based accept order (connection `i` runs plan `i`).
    pub id: u64,
    /// The client's address.
    pub peer: SocketAddr,
    /// The server's address on this connection.
    pub local: SocketAddr,
    /// Whether the TLS handshake completed on this connection.
    pub tls: bool,
    /// The SNI name the client sent, if any (TLS only).
    pub server_name: Option<String>,
    /// The negotiated ALPN protocol, if any (TLS only).
    pub alpn: Option<Vec<u8>>,
    /// Whether the connection's task has ended.
    pub closed: bool,
}

/// Locks a std mutex, ignoring poisoning (a panicking connection task must not hide the records
/// of the others).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An append-only list whose length can be awaited.
#[derive(Debug)]
pub(crate) struct Log<T> {
    /// The entries, in the order they were pushed. Never held across an await.
    items: Mutex<Vec<T>>,
    /// Mirrors the number of pushes; changed only by `push`, after the entry is in `items`.
    len: watch::Sender<usize>,
    /// Whether entries are kept, or only counted (long runs that must not grow memory).
    keep: bool,
}

impl<T: Clone> Log<T> {
    pub(crate) fn new() -> Self {
        Self {
            items: Mutex::new(Vec::new()),
            len: watch::Sender::new(0),
            keep: true,
        }
    }

    /// A log that counts pushes without keeping the entries.
    pub(crate) fn counting() -> Self {
        Self {
            keep: false,
            ..Self::new()
        }
    }

    pub(crate) fn push(&self, item: T) {
        if !self.keep {
            self.len.send_modify(|len| *len += 1);
            return;
        }
        let len = {
            let mut items = lock(&self.items);
            items.push(item);
            items.len()
        };
        self.len.send_replace(len);
    }

    pub(crate) fn snapshot(&self) -> Vec<T> {
        lock(&self.items).clone()
    }

    pub(crate) async fn wait_len(&self, n: usize) -> Vec<T> {
        let mut rx = self.len.subscribe();
        let _ = rx.wait_for(|len| *len >= n).await;
        self.snapshot()
    }
}

/// Counters and records common to both servers. Owned by the server handle and by every task.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Connection counters; changed by the accept loop (`accepted`, `open`, `max_open`), the
    /// connection task (`tls_*`) and its [`OpenGuard`] (`open`, `closed`).
    pub(crate) counters: watch::Sender<ConnCounters>,
    /// Script violations and unexpected input, in human-readable form.
    pub(crate) errors: Log<String>,
    /// One entry per accepted connection, indexed by connection id (only while records are
    /// kept: a long run keeps none, so the server's memory stays flat).
    pub(crate) conns: Mutex<Vec<ConnInfo>>,
    /// Whether `conns` (and the servers' request logs) are kept.
    pub(crate) keep_records: bool,
    /// A duplicate handle of each open connection's socket, to peek whether its client closed
    /// it (see [`ConnCounters::max_open`]).
    pub(crate) probes: Mutex<std::collections::HashMap<u64, std::net::TcpStream>>,
}

impl Shared {
    pub(crate) fn new(keep_records: bool) -> Self {
        Self {
            keep_records,
            counters: watch::Sender::new(ConnCounters::default()),
            errors: Log::new(),
            conns: Mutex::new(Vec::new()),
            probes: Mutex::new(std::collections::HashMap::new()),
        }
    }

    pub(crate) fn counters(&self) -> ConnCounters {
        *self.counters.borrow()
    }

    pub(crate) fn error(&self, msg: String) {
        self.errors.push(msg);
    }

    pub(crate) async fn wait_counters(
        &self,
        mut cond: impl FnMut(&ConnCounters) -> bool,
    ) -> ConnCounters {
        let mut rx = self.counters.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we borrow it.
        let _ = rx.wait_for(|c| cond(c)).await;
        self.counters()
    }

    pub(crate) fn update_conn(&self, id: u64, f: impl FnOnce(&mut ConnInfo)) {
        if let Some(info) = lock(&self.conns).get_mut(id as usize) {
            f(info);
        }
    }
}

/// Owned by a connection task: on drop (normal end, error, abort by shutdown) the connection is
/// counted as closed.
#[derive(Debug)]
pub(crate) struct OpenGuard {
    pub(crate) shared: std::sync::Arc<Shared>,
    pub(crate) id: u64,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        lock(&self.shared.probes).remove(&self.id);
        self.shared.update_conn(self.id, |c| c.closed = true);
        self.shared.counters.send_modify(|c| {
            c.open -= 1;
            c.closed += 1;
        });
    }
}
