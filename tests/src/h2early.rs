//! A frame-level HTTP/2 peer that answers a request before its body has arrived and then asks
//! the client to stop sending it: response HEADERS, DATA with `END_STREAM`, then
//! `RST_STREAM(NO_ERROR)` (RFC 9113 §8.1; Google Cloud Storage answers uploads this way).
//!
//! The h2 crate's server cannot be made to do this: its `send_reset` drops the frames of the
//! stream still queued, so the client would get the reset without the response. This peer
//! writes the three frames itself, in one write. It answers so the first request of each
//! connection (stream 1); later ones get an ordinary `200` with the body `next`.
//!
//! What it does not do: flow control beyond the client's defaults, HPACK decoding (requests are
//! told apart by stream id alone), CONTINUATION frames.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::h2wire::{
    ACK, DATA, END_HEADERS, END_STREAM, HEADERS, PREFACE, SETTINGS, STATUS_200, frame, read_frame,
};

/// `RST_STREAM`.
const RST_STREAM: u8 = 0x3;

/// HPACK: `:status 413`, a literal without indexing whose name is static entry 8.
const STATUS_413: &[u8] = &[0x08, 0x03, b'4', b'1', b'3'];

/// The listening peer; see the module docs.
#[derive(Debug)]
pub struct EarlyAnswerPeer {
    addr: SocketAddr,
    streams: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl EarlyAnswerPeer {
    /// Starts the peer on loopback.
    pub async fn start() -> EarlyAnswerPeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let streams = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let streams = streams.clone();
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    tokio::spawn(serve(io, streams.clone()));
                }
            }
        });
        EarlyAnswerPeer {
            addr,
            streams,
            task,
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Request HEADERS read so far, on every connection.
    pub fn streams(&self) -> usize {
        self.streams.load(Ordering::SeqCst)
    }
}

impl Drop for EarlyAnswerPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut io: TcpStream, streams: Arc<AtomicUsize>) {
    let mut preface = [0u8; 24];
    if io.read_exact(&mut preface).await.is_err() || preface != PREFACE {
        return;
    }
    if io.write_all(&frame(SETTINGS, 0, 0, &[])).await.is_err() {
        return;
    }
    while let Some(f) = read_frame(&mut io).await {
        let answer = match f.kind {
            SETTINGS if f.flags & ACK == 0 => frame(SETTINGS, ACK, 0, &[]),
            HEADERS => {
                streams.fetch_add(1, Ordering::SeqCst);
                if f.stream == 1 {
                    let mut out = frame(HEADERS, END_HEADERS, f.stream, STATUS_413);
                    out.extend(frame(DATA, END_STREAM, f.stream, b"too large\n"));
                    out.extend(frame(RST_STREAM, 0, f.stream, &0u32.to_be_bytes()));
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
