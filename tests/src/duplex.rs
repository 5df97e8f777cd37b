//! In-memory transports: a connector whose connections are `tokio::io::duplex` pairs, with the
//! server ends handed to the test.
//!
//! A test decides exactly when a server end reads, writes or disappears, so races that a real
//! socket leaves to the kernel (did the peer's FIN arrive before the next dispatch?) become
//! deterministic on a current-thread runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pool::{ConnectError, ConnectFuture, ConnectTarget, Connected, Io};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use crate::gate::Gate;

/// A connector producing in-memory connections; the server end of each arrives on the receiver
/// returned by [`DuplexConnector::new`].
#[derive(Clone, Debug)]
pub struct DuplexConnector {
    ends: mpsc::UnboundedSender<DuplexStream>,
    /// What each server end has written before the connection is handed to the pool.
    greeting: &'static [u8],
    /// Connections dialled so far, and the one (by that count, from 0) that waits at the
    /// gate before it connects.
    dialled: Arc<AtomicUsize>,
    gated: Option<(usize, Gate)>,
    /// Each server end shuts its sending side down after its greeting.
    closing: bool,
}

impl DuplexConnector {
    /// A connector and the receiver of its connections' server ends.
    pub fn new() -> (DuplexConnector, mpsc::UnboundedReceiver<DuplexStream>) {
        Self::speaking_first(b"")
    }

    /// [`new`](Self::new), but each server end has written `greeting` before the pool gets the
    /// connection: the bytes are there before hyper's handshake and the driver's first read.
    pub fn speaking_first(
        greeting: &'static [u8],
    ) -> (DuplexConnector, mpsc::UnboundedReceiver<DuplexStream>) {
        let (ends, rx) = mpsc::unbounded_channel();
        let connector = DuplexConnector {
            ends,
            greeting,
            dialled: Arc::default(),
            gated: None,
            closing: false,
        };
        (connector, rx)
    }

    /// [`speaking_first`](Self::speaking_first), but each server end shuts its sending side
    /// down after its greeting (an answer and a close before any request, as nginx answers a
    /// PROXY line it does not expect): the pool's end has the greeting and the close before
    /// the handshake. As over TCP, what the pool writes after the close still goes (into the
    /// server end the receiver gets).
    pub fn answering_and_closing(
        greeting: &'static [u8],
    ) -> (DuplexConnector, mpsc::UnboundedReceiver<DuplexStream>) {
        let (connector, ends) = Self::speaking_first(greeting);
        (
            DuplexConnector {
                closing: true,
                ..connector
            },
            ends,
        )
    }

    /// Connection `n` (counted from 0 in the order the pool dials) waits at `gate` before it
    /// connects, so a test can hold one establishment while it arranges the requests.
    pub fn gate_dial(mut self, n: usize, gate: Gate) -> DuplexConnector {
        self.gated = Some((n, gate));
        self
    }
}

impl pool::Connect for DuplexConnector {
    fn connect(&self, _target: ConnectTarget) -> ConnectFuture {
        let ends = self.ends.clone();
        let (greeting, closing) = (self.greeting, self.closing);
        let n = self.dialled.fetch_add(1, Ordering::Relaxed);
        let gate = self
            .gated
            .as_ref()
            .filter(|(at, _)| *at == n)
            .map(|(_, gate)| gate.clone());
        Box::pin(async move {
            if let Some(gate) = gate {
                gate.wait().await;
            }
            let (client, mut server) = tokio::io::duplex(64 * 1024);
            if !greeting.is_empty() {
                server
                    .write_all(greeting)
                    .await
                    .expect("the duplex has room");
            }
            if closing {
                server.shutdown().await.expect("a duplex shuts down");
            }
            ends.send(server)
                .map_err(|_| ConnectError::connect("the test stopped accepting connections"))?;
            let local: SocketAddr = "127.0.0.1:1".parse().expect("valid");
            let remote: SocketAddr = "127.0.0.1:2".parse().expect("valid");
            Ok((Io::custom(client), Connected::new(local, remote)))
        })
    }
}

/// Reads one HTTP/1.1 request (see [`read_request`]) from `io` and answers `200 OK` with `body`,
/// keeping the connection open. Returns the request head as text.
pub async fn answer_one(io: &mut DuplexStream, body: &str) -> String {
    let (head, _) = read_request(io).await;
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    io.write_all(response.as_bytes())
        .await
        .expect("write response");
    head
}

/// Reads one request from `io`: its head, and a body of `content-length` bytes (none without
/// the header). Returns both.
pub async fn read_request(io: &mut DuplexStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = io.read(&mut byte).await.expect("read request");
        assert!(n > 0, "client closed before sending a request head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII head");
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().expect("length"))
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    io.read_exact(&mut body).await.expect("read body");
    (head, body)
}
