//! A frame-level HTTP/2 peer that answers a request before its body has arrived: response
//! HEADERS (`413`) and DATA with `END_STREAM`, then, unless started
//! [`without_reset`](EarlyAnswerPeer::without_reset), `RST_STREAM(NO_ERROR)` to ask the client
//! to stop sending the body (RFC 9113 §8.1; Google Cloud Storage answers uploads this way).
//! Without the reset, the client decides alone what becomes of the rest of its body; the peer
//! counts the body bytes that arrive on that stream, records the client's own `RST_STREAM`, if
//! one comes, and counts the connections the client closes.
//!
//! The h2 crate's server cannot be made to do this: its `send_reset` drops the frames of the
//! stream still queued, so the client would get the reset without the response. This peer
//! writes the frames itself, in one write. It answers so the first request of each
//! connection (stream 1); later ones get an ordinary `200` with the body `next`.
//!
//! What it does not do: flow control beyond the client's defaults, HPACK decoding (requests are
//! told apart by stream id alone), CONTINUATION frames.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::h2wire::{
    ACK, DATA, END_HEADERS, END_STREAM, HEADERS, SETTINGS, STATUS_200, frame, read_frame,
    read_preface,
};

/// `RST_STREAM`.
const RST_STREAM: u8 = 0x3;

/// HPACK: `:status 413`, a literal without indexing whose name is static entry 8.
const STATUS_413: &[u8] = &[0x08, 0x03, b'4', b'1', b'3'];

/// The listening peer; see the module docs.
#[derive(Debug)]
pub struct EarlyAnswerPeer {
    addr: SocketAddr,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

/// What the peer saw, on every connection.
#[derive(Debug, Default)]
struct Seen {
    /// Whether the early answer ends with `RST_STREAM(NO_ERROR)`.
    resets: bool,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` sent, if any.
    max_streams: Option<u32>,
    /// Request HEADERS read.
    streams: AtomicUsize,
    /// Request body bytes read on the early-answered streams.
    early_body: AtomicUsize,
    /// The error code of each `RST_STREAM` the client sent, in order.
    client_resets: Mutex<Vec<u32>>,
    /// Connections the client closed (the peer read their end).
    closed: AtomicUsize,
    changed: Notify,
}

impl EarlyAnswerPeer {
    /// Starts the peer on loopback; it resets each early-answered stream with `NO_ERROR`.
    pub async fn start() -> EarlyAnswerPeer {
        Self::started(true).await
    }

    /// Starts the peer on loopback; it answers early but sends no reset.
    pub async fn without_reset() -> EarlyAnswerPeer {
        Self::started(false).await
    }

    /// [`without_reset`](Self::without_reset), allowing the client `streams` concurrent
    /// streams.
    pub async fn without_reset_allowing(streams: u32) -> EarlyAnswerPeer {
        Self::with(false, Some(streams)).await
    }

    async fn started(resets: bool) -> EarlyAnswerPeer {
        Self::with(resets, None).await
    }

    async fn with(resets: bool, max_streams: Option<u32>) -> EarlyAnswerPeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Seen {
            resets,
            max_streams,
            ..Seen::default()
        });
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    tokio::spawn(serve(io, seen.clone()));
                }
            }
        });
        EarlyAnswerPeer { addr, seen, task }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Request HEADERS read so far, on every connection.
    pub fn streams(&self) -> usize {
        self.seen.streams.load(Ordering::SeqCst)
    }

    /// Request body bytes read so far on the streams answered early.
    pub fn early_body_bytes(&self) -> usize {
        self.seen.early_body.load(Ordering::SeqCst)
    }

    /// The error code of the first `RST_STREAM` the client sends, waiting up to `limit` for it
    /// (`None` if none came).
    pub async fn client_reset(&self, limit: Duration) -> Option<u32> {
        let first = || self.seen.client_resets.lock().unwrap().first().copied();
        tokio::time::timeout(limit, async {
            loop {
                let changed = self.seen.changed.notified();
                if let Some(code) = first() {
                    return code;
                }
                changed.await;
            }
        })
        .await
        .ok()
    }
}

impl EarlyAnswerPeer {
    /// Connections the client has closed so far.
    pub fn closed_connections(&self) -> usize {
        self.seen.closed.load(Ordering::SeqCst)
    }

    /// Waits up to `limit` until the client has closed `n` connections; whether it did.
    pub async fn wait_closed(&self, n: usize, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            loop {
                let changed = self.seen.changed.notified();
                if self.closed_connections() >= n {
                    return;
                }
                changed.await;
            }
        })
        .await
        .is_ok()
    }
}

impl Drop for EarlyAnswerPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(io: TcpStream, seen: Arc<Seen>) {
    converse(io, &seen).await;
    seen.closed.fetch_add(1, Ordering::SeqCst);
    seen.changed.notify_waiters();
}

/// Reads and answers frames until the client closes the connection (or breaks it).
async fn converse(mut io: TcpStream, seen: &Seen) {
    if !read_preface(&mut io).await {
        return;
    }
    // SETTINGS_MAX_CONCURRENT_STREAMS is setting 0x3.
    let settings: Vec<u8> = match seen.max_streams {
        Some(n) => [&[0u8, 3][..], &n.to_be_bytes()].concat(),
        None => Vec::new(),
    };
    if io
        .write_all(&frame(SETTINGS, 0, 0, &settings))
        .await
        .is_err()
    {
        return;
    }
    while let Some(f) = read_frame(&mut io).await {
        let answer = match f.kind {
            SETTINGS if f.flags & ACK == 0 => frame(SETTINGS, ACK, 0, &[]),
            DATA if f.stream == 1 => {
                seen.early_body.fetch_add(f.payload.len(), Ordering::SeqCst);
                seen.changed.notify_waiters();
                continue;
            }
            RST_STREAM => {
                let code = f
                    .payload
                    .get(..4)
                    .map_or(u32::MAX, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                seen.client_resets.lock().unwrap().push(code);
                seen.changed.notify_waiters();
                continue;
            }
            HEADERS => {
                seen.streams.fetch_add(1, Ordering::SeqCst);
                if f.stream == 1 {
                    let mut out = frame(HEADERS, END_HEADERS, f.stream, STATUS_413);
                    out.extend(frame(DATA, END_STREAM, f.stream, b"too large\n"));
                    if seen.resets {
                        out.extend(frame(RST_STREAM, 0, f.stream, &0u32.to_be_bytes()));
                    }
                    out
                } else {
                    let mut out = frame(HEADERS, END_HEADERS, f.stream, STATUS_200);
                    out.extend(frame(DATA, END_STREAM, f.stream, b"next"));
                    out
                }
            }
            _ => continue,
        };
        if io.write_all(&answer).await.is_err() {
            return;
        }
    }
}
