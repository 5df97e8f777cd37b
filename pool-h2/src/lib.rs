//! HTTP/2 for the pool: the hyper handshake and driver, generations, request leases,
//! connection-level failure detection, and the hyper runtime adapters.
//!
//! An HTTP/2 connection is a *generation*: a cloneable hyper sender, the connection's
//! lifecycle record, and its stream accounting. A cell may hold several generations of one
//! origin when the server's stream limit requires it (which generation serves, and when
//! another is opened, is the cell's business in `pool-core`, `cell/gate.rs` and
//! `cell/flight.rs`); this crate owns the protocol:
//!
//! * [`handshake`] runs hyper's HTTP/2 handshake with the partition's executor, the pool's
//!   timer and [`H2Settings`], and builds the [`H2Driver`], which reports the connection's end
//!   to its record and retires the generation through [`H2Home`] (GOAWAY, I/O error, or a
//!   graceful shutdown all end the driver). A connection the peer reset still reads what
//!   the peer sent before the reset, its GOAWAY and last responses (`reset.rs`), and each
//!   connection notes whether the peer has sent anything on it (`heard.rs`).
//! * Each generation counts the streams taken against the peer's
//!   `SETTINGS_MAX_CONCURRENT_STREAMS` (`streams.rs`): the driver copies h2's current limit
//!   after every poll (so a SETTINGS change mid-connection is followed), the cell reserves a
//!   stream under its lock ([`PooledH2::try_reserve`](pool_core::cell::PooledH2::try_reserve))
//!   and never past the limit, and a stream that ends on a generation at its limit tells the
//!   cell through [`H2Home::stream_freed`], so a request waiting in the pool takes it.
//! * [`H2Generation::lease`] turns the reserved stream into a [`StreamLease`]: one stream,
//!   counted in `h2_active_streams` until the response body ends or is dropped. A lease is
//!   refused (and the reservation given back) once the generation stopped accepting.
//! * [`StreamLease::send`] dispatches with `try_send_request`; a request hyper hands back
//!   unsent is returned to the caller, who may retry it only if the generation had served a
//!   request before. A request hyper held back in its dispatch task (its stream waiting for
//!   h2 to open it) when the connection failed is dropped by hyper without being handed back;
//!   the outcome reports it as not processed ([`ResendReason::Unsent`](pool_core::ResendReason)),
//!   for the caller to rebuild from its own copy.
//! * [`is_connection_error`] tells a stream-level failure (`RST_STREAM`: only that request
//!   fails) from a connection-level one (GOAWAY, I/O error, closed dispatcher: the generation
//!   drains and the next request gets a replacement); [`not_processed`] tells when the peer
//!   proved it did not process a stream (its GOAWAY covered it, or it refused it), so the pool
//!   may send the request again; [`is_connection_lost`] tells when the connection was reset or
//!   closed under a stream with no such proof (or h2 ended it on the peer's protocol error,
//!   such as a second GOAWAY raising the last stream id), which the pool repeats only for
//!   idempotent requests, and only if the peer had sent something on the connection (the
//!   failure's `heard`).
//! * A stream the pool gave up on while hyper still holds it open ([`StreamGuard::abandon`]:
//!   a refused upload the server grants no window for) stays counted against the limit but
//!   does not keep the generation in use; once no stream can be taken on the generation and
//!   only abandoned ones are left, the connection's transport is failed so that h2 ends it
//!   (`kill.rs`): nothing else would.
//! * [`PartitionExecutor`] and [`PoolTimer`] are hyper's `Executor` and `Timer` without
//!   hyper-util: the executor spawns onto the connection's partition, the timer follows the
//!   pool's time source (and overrides `now()`, so paused test time reaches hyper too).
//!
//! Until the peer's first SETTINGS frame is known the client does not know the limit and
//! opens up to `initial_max_send_streams` streams (100, h2's default); the limit counts as known
//! once h2 applies a different value (the peer announced it) or once a response arrived (it
//! follows the peer's SETTINGS). A server with a lower limit refuses the excess of a cold burst
//! with `REFUSED_STREAM`, which [`not_processed`] reports, and the pool sends those requests
//! again; by then they wait in the pool for a stream or a further connection. The default is
//! kept on purpose: lowering it would hold back every cold burst to a server that allows more
//! (nginx allows 128) for one round trip, to save a few refused streams on servers that allow
//! fewer.
//!
//! A peer that resets a stream with `ENHANCE_YOUR_CALM` before answering it is shedding load it
//! never announced as a limit (Node.js does so while its session's memory is over its cap):
//! the generation then caps its streams below the peer's limit: each refusal lowers the cap to
//! one less than the streams taken, so a burst leaves it at what the peer took, and each cap's
//! worth of responses raises it by one (`calm.rs`); a new connection of the same cell starts
//! from the cap its sibling last had. A capped generation counts as full like one at the
//! peer's limit, so waiting requests take the next stream it frees or a further connection.
//! The refused request repeats only if idempotent: the code is no proof that the peer did not
//! process it. The outcome says whether the refusal lowered the cap (the pool had opened more
//! streams than the peer took), which the pool does not count against the request's budget.
//!
//! A server that ends a connection with `GOAWAY(ENHANCE_YOUR_CALM)` after request bodies
//! overlapped on it (Tomcat's overhead protection, met by the small DATA frames hyper's body
//! pipe sends when several uploads share a scarce window) teaches the cell to send one body at
//! a time on each connection: a request with a body then takes its connection's upload permit
//! before it goes to hyper, and holds it until its response head; while an upload waits for
//! the permit its connection counts as full, so the next requests go to other connections or
//! to a further one (`uploads.rs`). A connection that ends so with no request bodies
//! overlapping on it (Jetty's limit on the rate of `WINDOW_UPDATE`s, which h2 sends near the
//! end of every response of half a stream window or more) teaches the cell to open further
//! connections with a 32 MiB stream window instead of hyper's 2 MiB, unless the caller chose
//! one (`window.rs`).
//!
//! A peer that allows no stream at all (`SETTINGS_MAX_CONCURRENT_STREAMS` 0) gets no request to
//! wait on it: RFC 9113 §6.5.2 says a zero is not special, but a request h2 or hyper holds for
//! a stream the peer never allows would wait for ever, and nothing would wake it. When a
//! refusal or the driver (woken by the transport's first writes after the peer's SETTINGS, see
//! `heard.rs`) finds the limit at 0, the connection closes as `NoStreamsAllowed` and retires
//! (`no_streams_allowed`), its requests that never became streams come back as refused, and the
//! pool re-sends them, on new connections, within their budget: against such a server they
//! fail, safe to send again, as curl's and Go's do; against one that said 0 on one connection
//! only, they are served on the next. A generation opened next to one at 0 assumes nothing. On
//! a connection that never served, the transport ends too, so a request h2 had queued for a
//! stream comes back, as lost (repeated if idempotent); on one that had served, the streams in
//! flight finish first, as after GOAWAY, and a request h2 had queued there in the moment the
//! peer lowered its limit to 0 waits until the peer raises it or ends the connection (the read
//! timeout bounds it).
//!
//! A server that serves a fixed number of requests per connection (nginx's
//! `keepalive_requests`) cuts each connection off with GOAWAY at that count. Each generation
//! counts what it dispatched and what its server did not process (`quota.rs`) and, when
//! nothing refers to it any more, tells its cell through [`H2Home::connection_ended`]; the
//! cell learns the quota from two such cuts that agree (pool-core's `cell/quota.rs`, one
//! learner shared by the origin's cells in every partition) and gives
//! it to the generations it publishes afterwards, which take at most that many reservations
//! and retire as `RequestQuota` when they hand hyper the last; one window before that
//! ([`H2Home::successor_wanted`]) the cell opens their successor.
//!
//! A server that sends empty DATA frames without `END_STREAM` (one per response from a relay
//! on hyper) would have h2 end each connection past 100 of them, under its responses. The
//! transport under hyper's adapter counts them ([`watch_frames`], `frames.rs`); once a server
//! sends them its connections take at most 45 streams, and each retires as
//! `EmptyDataFrames` before h2's limit.
//!
//! What it does not do: decide which request uses which generation (the cell), establish
//! transports (`pool-tls`), or know anything about HTTP/1 (`pool-h1`).

//! # Standalone use
//!
//! None: this crate is an internal building block of the `pool` crate. Its generations are
//! tied to `pool-core`'s connection records and cells (a cell reserves every stream) and change
//! with them; depend on `pool` (or, for a transport under hyper's own `client::conn`, on
//! `pool-tls`).

mod calm;
mod classify;
mod frames;
mod generation;
mod guard;
mod handshake;
mod heard;
mod kill;
mod last_words;
mod quota;
mod request;
mod reset;
mod runtime;
mod sending;
mod settings;
mod streams;
mod uploads;
#[cfg(test)]
mod wakes;
mod window;

pub use calm::CalmHint;
pub use classify::{is_connection_error, is_connection_lost, not_processed};
pub use frames::{FrameWatch, WatchedIo, watch_frames};
pub use generation::{H2Generation, H2SendOutcome, StreamLease};
pub use guard::StreamGuard;
pub use handshake::{H2Driver, H2Home, Handshaken, PeerStreamLimit, handshake};
pub use last_words::PeerEnded;
pub use request::prepare_request;
pub use runtime::{PartitionExecutor, PoolTimer, Turn};
pub use settings::H2Settings;
pub use window::LEARNT_STREAM_WINDOW;
