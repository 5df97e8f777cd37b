//! How far a request has got: waiting for a connection, a connection being made for it (and
//! which step of it), or its exchange.
//!
//! A caller that gives up on a request (its own deadline, an operation timeout around a
//! retry loop, a tower `Timeout` layer) drops the request's future, and a dropped future says
//! nothing. A [`Progress`] put in the request's extensions is written by the pool as the
//! request moves and can be read at any time, from any thread, so the caller can say what
//! the request waited for when it gave up: a slow name server, an address that does not
//! answer, a TLS handshake that never ends, or a server that does not respond. curl's
//! `Resolving timed out` / `Connection timed out` / `Operation timed out` are that
//! distinction. It also tells whether anything of the request can have reached a server:
//! nothing has before [`RequestStage::Exchange`].
//!
//! The stage is one atomic byte. The request's own task writes [`RequestStage::Waiting`] as
//! it starts looking for a connection and [`RequestStage::Exchange`] once it has one, and
//! stays at `Exchange` through the pool's own re-sends of it: an attempt went out, and an
//! idempotent request's may have been acted on (neither a re-send's establishment nor the
//! cell's `Joined` mark writes over it, see below). An establishment launched on its behalf
//! writes [`RequestStage::Connecting`] with each step it begins, and goes back to `Waiting`
//! when the connect ends. The establishment runs on its partition's runtime and outlives a
//! request that leaves (see `pool`'s `establish`), so its writes are conditional: a step never
//! overwrites `Exchange` (the request got a connection from elsewhere while its establishment
//! still ran), and the end of a connect only undoes `Connecting`.
//!
//! A request that waits for a connection another request's establishment is making (an
//! HTTP/2 flight while ALPN is unknown, an attempt whose own request left) reads
//! [`RequestStage::Joined`]; the cell writes it, under its lock, as it queues the waiter
//! (never over `Exchange`), and takes it back to `Waiting` when that establishment ends while
//! the request still waits: an HTTP/2 flight that landed with no stream left for it (the
//! server's limit reached, the connection cap allowing no other), or negotiated HTTP/1.1 so
//! that it needs a connection of its own. What the stage does not say: that establishment's
//! step (it is noted in the progress of the request it was launched for), and after
//! `Exchange` the bytes (sent, head received, body).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// A step of establishing a transport, as a connect timeout's error and a request's
/// [`Progress`] name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum ConnectStep {
    /// Resolving a name: the origin's, a proxy's, or the origin's for a SOCKS proxy that is
    /// sent addresses.
    Resolve,
    /// The TCP connect to the origin or the proxy (every address happy eyeballs tries), or to
    /// a Unix socket.
    Dial,
    /// A TLS handshake: with the origin, or with an `https://` proxy.
    Tls,
    /// An HTTP proxy's `CONNECT` tunnel.
    Tunnel,
    /// A SOCKS proxy's handshake.
    Socks,
}

impl ConnectStep {
    /// Every step, each at its own discriminant.
    const ALL: [ConnectStep; 5] = [
        ConnectStep::Resolve,
        ConnectStep::Dial,
        ConnectStep::Tls,
        ConnectStep::Tunnel,
        ConnectStep::Socks,
    ];

    /// The step stored as `index` (its discriminant), if any.
    pub fn from_index(index: u8) -> Option<ConnectStep> {
        ConnectStep::ALL.get(usize::from(index)).copied()
    }
}

/// Where a request stands, as its [`Progress`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestStage {
    /// Not given to a connection: not yet at the pool, or waiting for one to come free (an
    /// idle connection, a free HTTP/2 stream, a permit of a bounded origin).
    Waiting,
    /// Waiting for a connection that another request's establishment is making: the HTTP/2
    /// flight of an origin whose protocol is not known yet, which every request to it joins
    /// (the cold burst's one handshake), or an HTTP/1 attempt whose own request left (a
    /// caller's timeout ended it) and which this request took over. That establishment's step
    /// is noted in the other request's progress, not here. Once the flight has landed, a
    /// request it brought no stream for reads `Waiting` again.
    Joined,
    /// A connection is being made on this request's behalf; the step it began last, once it
    /// began one (a connector of the caller's own reports no steps).
    Connecting(Option<ConnectStep>),
    /// The request has a connection: it is being written, or its response awaited or read.
    /// Nothing of it reached a server before this stage.
    Exchange,
}

const WAITING: u8 = 0;
const EXCHANGE: u8 = 1;
const JOINED: u8 = 2;
/// `Connecting` before its first step.
const CONNECTING: u8 = 3;
/// `Connecting(Some(step))` is `STEPS + step as u8`.
const STEPS: u8 = 4;

fn is_connecting(stage: u8) -> bool {
    stage >= CONNECTING
}

/// A request's stage, shared between the caller and the pool (see the module docs).
///
/// Put a clone in the request's extensions (`request.extensions_mut().insert(progress.clone())`)
/// and read [`stage`](Self::stage) whenever needed. Use one per request: an establishment
/// launched for a request outlives it, and would go on noting its steps in a `Progress` that
/// has moved on to the caller's next request (a redirect, a retry of its own).
/// The writing methods are the pool's and a connector's (one of the caller's own may note its
/// steps with [`connecting`](Self::connecting)); a caller only reads.
///
/// `std`'s atomics rather than the loom facade: nothing in the pool's coordination reads it.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<AtomicU8>);

impl Progress {
    /// A new progress, [`RequestStage::Waiting`].
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Where the request stands now.
    pub fn stage(&self) -> RequestStage {
        match self.0.load(Ordering::Relaxed) {
            WAITING => RequestStage::Waiting,
            EXCHANGE => RequestStage::Exchange,
            JOINED => RequestStage::Joined,
            CONNECTING => RequestStage::Connecting(None),
            step => RequestStage::Connecting(ConnectStep::from_index(step - STEPS)),
        }
    }

    /// The request starts looking for a connection.
    pub fn waiting(&self) {
        self.0.store(WAITING, Ordering::Relaxed);
    }

    /// The request was given a connection.
    pub fn exchange(&self) {
        self.0.store(EXCHANGE, Ordering::Relaxed);
    }

    /// The request waits for a connection another request's establishment is making. Leaves
    /// `Exchange` alone: a re-send of the pool's own stays there.
    pub fn joined(&self) {
        self.replace_if(JOINED, |now| now != EXCHANGE);
    }

    /// The establishment the request joined ended, and the request still waits: for a stream
    /// of the connection it brought (its limit reached), for a permit, or for another
    /// connection. A request no longer `Joined` (it took over the establishment, or was served)
    /// is left alone.
    pub fn join_ended(&self) {
        self.replace_if(WAITING, |now| now == JOINED);
    }

    /// An establishment on the request's behalf began `step` (`None`: it began, no step yet).
    /// Leaves `Exchange` alone: the request was served meanwhile, by another connection.
    pub fn connecting(&self, step: Option<ConnectStep>) {
        let stage = step.map_or(CONNECTING, |step| STEPS + step as u8);
        self.replace_if(stage, |now| now != EXCHANGE);
    }

    /// The establishment's connect ended (made or failed): a request still `Connecting` waits
    /// again, for the connection's hand-over or another try.
    pub fn connect_ended(&self) {
        self.replace_if(WAITING, is_connecting);
    }

    /// Stores `stage` unless the stage now is one `from` refuses (the writes of the cell and
    /// of an establishment, which may come after the request moved on).
    fn replace_if(&self, stage: u8, from: impl Fn(u8) -> bool) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                from(now).then_some(stage)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_stands_at_its_own_index() {
        for (index, step) in ConnectStep::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(step as u8), index, "{step:?}");
            assert_eq!(ConnectStep::from_index(step as u8), Some(step));
        }
        assert_eq!(ConnectStep::from_index(5), None);
    }

    #[test]
    fn a_request_moves_through_its_stages() {
        let progress = Progress::new();
        assert_eq!(progress.stage(), RequestStage::Waiting);
        progress.connecting(None);
        assert_eq!(progress.stage(), RequestStage::Connecting(None));
        for step in ConnectStep::ALL {
            progress.connecting(Some(step));
            assert_eq!(progress.stage(), RequestStage::Connecting(Some(step)));
        }
        progress.connect_ended();
        assert_eq!(progress.stage(), RequestStage::Waiting);
        progress.joined();
        assert_eq!(progress.stage(), RequestStage::Joined);
        // A connect of its own after all (the joined one failed).
        progress.connecting(None);
        assert_eq!(progress.stage(), RequestStage::Connecting(None));
        progress.exchange();
        assert_eq!(progress.stage(), RequestStage::Exchange);
        progress.waiting();
        assert_eq!(progress.stage(), RequestStage::Waiting);
    }

    #[test]
    fn later_marks_of_a_flight_or_an_establishment_leave_the_exchange_alone() {
        let progress = Progress::new();
        progress.connecting(Some(ConnectStep::Dial));
        // Another connection served the request while its establishment went on.
        progress.exchange();
        progress.connecting(Some(ConnectStep::Tls));
        assert_eq!(progress.stage(), RequestStage::Exchange);
        // A re-send of the pool's own that joins a flight stays at its exchange too.
        progress.joined();
        assert_eq!(progress.stage(), RequestStage::Exchange);
        progress.connect_ended();
        assert_eq!(progress.stage(), RequestStage::Exchange);
        // The end of a connect leaves a waiting request waiting.
        progress.waiting();
        progress.connect_ended();
        assert_eq!(progress.stage(), RequestStage::Waiting);
    }
}
