//! A frame-level HTTP/2 peer whose responses are still arriving when the client cancels them.
//!
//! Every request is answered with a `200` head and a first DATA frame, and no stream is ever
//! ended. The first `RST_STREAM` from the client on a stream is answered with one more DATA frame
//! on that stream: the frame a server had already on its way when the reset arrived (RFC 9113 §5.4.2
//! asks the client to ignore such frames). A real server sends as many of them as the stream's
//! window allowed before it read the reset; one per reset is enough to count them.
//!
//! It records the connections it accepted, the resets it read and the error code of any
//! `GOAWAY` the client sent. What it does not do: HPACK-decode requests, flow control (its
//! frames are a byte each), or end a response.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::gate::Signal;
use crate::h2wire::{ACK, DATA, END_HEADERS, GOAWAY, HEADERS, SETTINGS, STATUS_200};
use crate::h2wire::{frame, read_frame, read_preface};

/// `RST_STREAM`.
const RST_STREAM: u8 = 0x3;

/// What the peer saw.
#[derive(Debug, Default)]
struct Seen {
    connections: usize,
    resets: usize,
    goaway_codes: Vec<u32>,
}

/// A listening peer; see the module docs.
#[derive(Debug)]
pub struct StrayDataPeer {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    resets: Signal,
    goaways: Signal,
    task: tokio::task::JoinHandle<()>,
}

impl StrayDataPeer {
    /// Starts the peer on loopback.
    pub async fn start() -> StrayDataPeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (resets, goaways) = (Signal::new(), Signal::new());
        let task = tokio::spawn({
            let (seen, signals) = (seen.clone(), (resets.clone(), goaways.clone()));
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    let _ = io.set_nodelay(true);
                    seen.lock().unwrap().connections += 1;
                    tokio::spawn(serve(io, seen.clone(), signals.clone()));
                }
            }
        });
        StrayDataPeer {
            addr,
            seen,
            resets,
            goaways,
            task,
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.seen.lock().unwrap().connections
    }

    /// Streams the client reset so far, on all connections (a stream's later resets are not
    /// counted).
    pub fn resets(&self) -> usize {
        self.seen.lock().unwrap().resets
    }

    /// The error code of every `GOAWAY` the client sent, in the order read.
    pub fn goaway_codes(&self) -> Vec<u32> {
        self.seen.lock().unwrap().goaway_codes.clone()
    }

    /// Resolves once the client has reset `n` streams, on all connections, and the peer is writing (or has
    /// written) the late frame of the last: a request sent after this is answered after it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; bound it with a timeout.
    pub async fn wait_resets(&self, n: usize) {
        self.resets.wait_for(n).await;
    }

    /// Resolves once the client sent a `GOAWAY`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; never resolves without one: bound it with a timeout.
    pub async fn wait_goaway(&self) {
        self.goaways.wait_for(1).await;
    }
}

impl Drop for StrayDataPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves one connection until the client closes it.
async fn serve(mut io: TcpStream, seen: Arc<Mutex<Seen>>, (resets, goaways): (Signal, Signal)) {
    if !read_preface(&mut io).await {
        return;
    }
    if io.write_all(&frame(SETTINGS, 0, 0, &[])).await.is_err() {
        return;
    }
    // Streams whose reset was answered: a reset the client sends for the late frame itself is
    // read and not answered again, as a server sends nothing more once it read the first.
    let mut answered = std::collections::HashSet::new();
    while let Some(f) = read_frame(&mut io).await {
        let out = match f.kind {
            SETTINGS if f.flags & ACK == 0 => frame(SETTINGS, ACK, 0, &[]),
            HEADERS => {
                let mut out = frame(HEADERS, END_HEADERS, f.stream, STATUS_200);
                out.extend(frame(DATA, 0, f.stream, b"x"));
                out
            }
            RST_STREAM if answered.insert(f.stream) => {
                seen.lock().unwrap().resets += 1;
                resets.raise();
                frame(DATA, 0, f.stream, b"y")
            }
            GOAWAY => {
                let code = f.payload.get(4..8).map_or(0, |code| {
                    u32::from_be_bytes(code.try_into().expect("four bytes"))
                });
                seen.lock().unwrap().goaway_codes.push(code);
                goaways.raise();
                continue;
            }
            _ => continue,
        };
        if io.write_all(&out).await.is_err() {
            return;
        }
    }
}
