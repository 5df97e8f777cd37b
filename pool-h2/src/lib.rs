//! HTTP/2 for the pool: the hyper handshake and driver, generations, request leases,
//! connection-level failure detection, and the hyper runtime adapters.
//!
//! An HTTP/2 connection is a *generation*: a cloneable hyper sender plus the connection's
//! lifecycle record. A cell keeps at most one accepting generation (the single-flight
//! establishment and the activation order are coordinated by the cell in `pool-core`, in
//! `cell/flight.rs` and `cell/gate.rs`); this crate owns the protocol:
//!
//! * [`handshake`] runs hyper's HTTP/2 handshake with the partition's executor, the pool's
//!   timer and [`H2Settings`], and builds the [`H2Driver`], which reports the connection's end
//!   to its record and retires the generation through [`H2Home`] (GOAWAY, I/O error, or a
//!   graceful shutdown all end the driver).
//! * [`H2Generation::lease`] takes a [`StreamLease`]: one stream, counted in
//!   `h2_active_streams` from the lease until the response body ends or is dropped. A lease is
//!   refused once the generation stopped accepting.
//! * [`StreamLease::send`] dispatches with `try_send_request`; a request hyper hands back
//!   unsent is returned to the caller, who may retry it only if the generation had served a
//!   request before.
//! * [`is_connection_error`] tells a stream-level failure (`RST_STREAM`: only that request
//!   fails) from a connection-level one (GOAWAY, I/O error, closed dispatcher: the generation
//!   drains and the next request gets a replacement); [`not_processed`] tells when the peer
//!   proved it did not process a stream (its GOAWAY covered it, or it refused it), so the pool
//!   may send the request again.
//! * [`PartitionExecutor`] and [`PoolTimer`] are hyper's `Executor` and `Timer` without
//!   hyper-util: the executor spawns onto the connection's partition, the timer follows the
//!   pool's time source (and overrides `now()`, so paused test time reaches hyper too).
//!
//! Requests beyond the peer's `SETTINGS_MAX_CONCURRENT_STREAMS` wait inside hyper and h2 for a
//! stream slot, in the order they were sent; the pool does not open a second connection for
//! them. Until the peer's first SETTINGS frame arrives the client does not know the limit and
//! opens up to `initial_max_send_streams` streams (100, h2's default). A server with a lower
//! limit refuses the excess with `REFUSED_STREAM`, which [`not_processed`] reports, and the
//! pool sends those requests again on the same generation, which by then knows the limit. The
//! default is kept on purpose: lowering it would hold back every cold burst to a server that
//! allows more (nginx allows 128) for one round trip, to save a few refused streams on servers
//! that allow fewer.
//!
//! What it does not do: decide which request uses which generation (the cell), establish
//! transports (`pool-tls`), or know anything about HTTP/1 (`pool-h1`).

mod generation;
mod handshake;
mod request;
mod runtime;
mod settings;

pub use generation::{
    H2Generation, H2SendOutcome, StreamGuard, StreamLease, is_connection_error, not_processed,
};
pub use handshake::{H2Driver, H2Home, Handshaken, handshake};
pub use request::prepare_request;
pub use runtime::{PartitionExecutor, PoolTimer};
pub use settings::H2Settings;
