//! Test support for the pool: scripted HTTP/1.1 and HTTP/2 peers on loopback, test
//! certificates, and the gates tests use to control timing.
//!
//! Modelled on h2's `tests/h2-support`: the peers are deliberately dumb and fully scripted, so a
//! test states exactly what the server does and when, and then asserts on what the server saw.
//!
//! * [`h1`]: [`ScriptedH1Server`](h1::ScriptedH1Server), raw bytes parsed with `httparse`; one
//!   [`ConnPlan`](h1::ConnPlan) per accepted connection (replies, delays, gates, half-close,
//!   reset, close, split and broken bodies).
//! * [`h2`]: [`ScriptedH2Server`](h2::ScriptedH2Server) over `h2::server`; SETTINGS, per-stream
//!   [`StreamPlan`](h2::StreamPlan)s (respond, delay, gate, RST_STREAM) and connection actions
//!   (graceful or abrupt GOAWAY).
//! * [`tls`]: [`TestPki`](tls::TestPki), a private CA and rustls configs (ring provider).
//! * [`gate`]: [`Gate`](gate::Gate) and [`Signal`](gate::Signal), the only timing tools: no test
//!   sleeps to win a race. Scripted delays use `tokio::time::sleep`, so paused time applies.
//! * [`counters`]: connection counters both servers expose (accepted, open, max open, TLS
//!   handshakes) and per-connection records.
//! * [`io`]: a `TokioIo` adapter and executor to drive `hyper::client::conn` directly.
//! * [`chaos`]: cancellation after N polls and a seeded generator, for stress tests.
//! * [`contract`]: behaviour contracts run for our pool and hyper-util's legacy client.
//! * [`client`]: request helpers (`get`, `fetch`, `settle` on gauges, a streaming body).
//! * [`events`]: [`EventLog`](events::EventLog), a connection event listener that records.
//! * [`duplex`]: an in-memory connector whose server ends the test drives by hand.
//! * [`gated`]: a connector and I/O that stop at gates (before dial, mid-TLS, before writes).
//! * [`resolve`]: fixed-answer, switchable and never-answering resolvers.
//! * [`refused`]: [`RefusedAddr`](refused::RefusedAddr), a loopback port that refuses
//!   connections and that no parallel test can be given.
//! * [`unix`]: [`UnixBridge`](unix::UnixBridge), a Unix socket path piped to a loopback server.
//! * [`h2frames`] and [`h2settings`]: frame-level HTTP/2 peers for what no server library does
//!   on demand (a GOAWAY below opened streams; a stream limit changed mid-connection);
//!   [`h2stray`], one that sends a late DATA frame on every stream the client resets.
//! * [`relay`]: an h2c server on hyper whose responses end with an empty chunk, as a relay's.
//!
//! What this crate does not do: implement HTTP correctly for arbitrary clients, pick ports other
//! than ephemeral loopback ones, or retry anything. A script that does not match what the client
//! does shows up in `errors()` (plan exhaustion, malformed input) rather than being papered over.
//! Every `wait_*` method can wait forever if the awaited event never happens; wrap it in
//! `tokio::time::timeout`.

pub mod chaos;
pub mod client;
pub mod contract;
pub mod counters;
pub mod duplex;
pub mod events;
pub mod gate;
pub mod gated;
pub mod h1;
pub mod h2;
pub mod h2early;
pub mod h2frames;
pub mod h2settings;
pub mod h2stray;
mod h2wire;
pub mod io;
pub mod ntlm;
pub mod ocsp;
pub mod proxy;
pub mod refused;
pub mod relay;
pub mod resolve;
pub mod silent;
pub mod socks;
pub mod tls;
pub mod unix;
pub mod vanish;

mod server;
