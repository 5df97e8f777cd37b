//! HTTP/1 for the pool: the hyper handshake and driver, sender reservation, exchange, and
//! return at the message boundary.
//!
//! An HTTP/1 connection is one exclusive `hyper::client::conn::http1::SendRequest` (the
//! *sender*) plus a driver future that owns the socket. This crate runs hyper's handshake on an
//! established transport and builds the driver ([`handshake`], [`H1Driver`]), holds the sender
//! together with the connection's lifecycle record ([`H1Connection`]), shapes a request for the wire
//! ([`prepare_request`]), dispatches it with `try_send_request` ([`H1Connection::send`]) and
//! follows the response body with an [`ExchangeGuard`] that gives the sender back only after
//! hyper proves both the end of the message and readiness for another request.
//!
//! Reservation has two halves. The *exclusive* half is here: a checked-out connection is moved
//! into the request's future, and it comes back only through [`H1Home`] once hyper is ready
//! again. The *commit* half (idle → active) is the record's compare-and-swap in `pool-core`,
//! because the record's one state word is what makes a checkout racing a close account
//! exactly once; splitting that word across crates would lose the guarantee.
//!
//! What it does not do: choose which connection a request gets (the cell in `pool-core`
//! does), establish transports (`pool-tls`), or spawn tasks itself (the pool spawns the
//! [`H1Driver`] on the connection's partition).
//!
//! # Return policy
//!
//! | what happened to the response                           | the connection            |
//! |---------------------------------------------------------|---------------------------|
//! | body read to its end, sender ready                      | returned to its cell      |
//! | body read to its end, sender not ready yet              | parked with its driver, which returns it in the poll that makes it ready |
//! | `Connection: close`, or HTTP/1.0 without `keep-alive`   | retired (`ProtocolClosed`) at the response's end: hyper keeps no such connection |
//! | the response spends the server's learnt request quota   | retired (`RequestQuota`) at the response's end: the server closes such connections without saying so (pool-core's `cell/quota.rs`) |
//! | body dropped before its end                             | retired (`IncompleteH1Exchange`) |
//! | error while sending or receiving                        | retired (`IncompleteH1Exchange`) |
//! | `101 Switching Protocols`                               | retired (`Upgraded`), I/O handed to `hyper::upgrade::on` |
//! | final response while the body waited for `100 Continue` | retired (`IncompleteH1Exchange`) at the response's end; the body is never sent ([`BodyGate`]) |
//! | the pool stopped the body for a final response that came first | retired (`IncompleteH1Exchange`) at the response's end; no further byte is sent ([`BodyGate`]) |
//!
//! The disposition is decided when the head arrives ([`ExchangeGuard::closes`]), so a caller
//! can learn before reading the body whether the connection will be reused.
//!
//! `Drop` never waits, and returning a connection never spawns a task: when hyper is not ready
//! yet, the connection's own driver finishes the return ([`ParkingSpot`]).
//!
//! An idle connection's server may close it on its own clock. A `Keep-Alive: timeout` in the
//! first response is recorded (the `keep_alive` module); a server that says nothing is heard
//! instead: the driver that ends while its connection is still idle, after it had served,
//! tells [`H1Home::closed_while_idle`], and the cell learns the server's idle timeout from such
//! closes (pool-core's `cell/idle_lesson.rs`). Either way the cell retires idle connections
//! before the server's close could meet a request.
//!
//! # A server that speaks first
//!
//! What a new connection's server sends before the first request is written is held for that
//! request and read as its response, as curl reads it, rather than ending the connection
//! whenever the driver happens to read it first (the `early` module). A server on the wrong
//! port (an SSH banner) or an h2c-only server's SETTINGS then always gives the request a
//! malformed-response error, never a race between that and hyper's "connection was not ready";
//! a server that answers at once and closes gives that request its answer. A new connection
//! that goes idle unused lets such a close end it instead ([`PooledH1::went_idle_unused`]).
//!
//! [`PooledH1::went_idle_unused`]: pool_core::cell::PooledH1::went_idle_unused
//!
//! # Header names as written
//!
//! hyper lower-cases response header names and keeps the original spelling to itself. With
//! [`H1Settings::record_raw_header_names`], the transport is wrapped so that each response head
//! is read a second time as it passes, and the response carries a [`RawHeaderNames`] extension
//! (`Content-Type`, in the server's order). Without it, nothing is wrapped.
//!
//! # Standalone use
//!
//! None: this crate is an internal building block of the `pool` crate. Its types are tied to
//! `pool-core`'s connection records and cells and change with them; depend on `pool` (or, for
//! a transport under hyper's own `client::conn`, on `pool-tls`).

mod connection;
mod early;
mod exchange;
mod gate;
mod handshake;
mod keep_alive;
#[cfg(all(test, pool_loom))]
mod loom_models;
mod parking;
mod raw_names;
mod request;
mod request_names;
mod sending;
mod settings;

pub use connection::{H1Connection, H1Home, SendOutcome};
pub use exchange::ExchangeGuard;
pub use gate::{BodyGate, GateState};
pub use handshake::{H1Driver, Handshaken, handshake};
pub use parking::ParkingSpot;
pub use raw_names::RawHeaderNames;
pub use request::{ForwardProxy, prepare_proxied_request, prepare_request, restore_absolute_uri};
pub use request_names::RequestHeaderNames;
pub use settings::H1Settings;
