//! A frame-level HTTP/2 peer for the cases a real server library will not produce on demand:
//! a `GOAWAY` whose last stream id is below streams the client has already opened, optionally
//! followed by a reset of the connection (nginx closing a connection on reload while the
//! client is still sending), or such a reset with no `GOAWAY` at all (a connection lost under
//! streams the peer had read), with or without the peer's SETTINGS before it; a `GOAWAY` with
//! an error code at a steady count; a second `GOAWAY` that raises the last stream id; a
//! `GOAWAY(ENHANCE_YOUR_CALM)` as soon as two request bodies overlap on a connection.
//!
//! The h2 crate's server stamps every GOAWAY with the highest stream whose HEADERS it read, so
//! it can never leave a received stream above the line. This peer reads frames itself and
//! answers with hand-built ones (the response HEADERS block is the one-byte HPACK static-table
//! entry for `:status 200`). It speaks just enough HTTP/2 for a client that sends requests
//! and reads responses: SETTINGS and their ACKs, HEADERS, DATA, GOAWAY; every other frame is
//! read and ignored. No flow control is needed for empty responses.
//!
//! What it does not do: HPACK-decode requests, CONTINUATION frames, padding, priorities.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;

use crate::gate::Signal;
use crate::h2wire::{
    ACK, DATA, END_STREAM, GOAWAY, HEADERS, SETTINGS, frame, ok_response, read_frame, read_preface,
};
use tokio::net::{TcpListener, TcpStream};

/// The GOAWAY error code of a graceful end.
const NO_ERROR: u32 = 0;

/// The error code of a peer that finds the client's frames too costly.
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// How the scripted connections' GOAWAY goes, beyond the script itself.
#[derive(Clone, Copy, Debug)]
struct Goaways {
    /// Act on every connection, once it has read the script's count of requests, with the
    /// last of them as the last stream id (a per-connection request quota), rather than once.
    quota: bool,
    /// The GOAWAY's error code.
    code: u32,
    /// Follow the GOAWAY at once with a second one (`NO_ERROR`) naming the highest stream id
    /// there is, before answering anything: a raise RFC 9113 §6.8 forbids, which Apache
    /// Traffic Server 9.2 sends after an `ENHANCE_YOUR_CALM` one.
    raise: bool,
    /// On every connection: when a request with a body opens while another request's body
    /// has not ended, send `GOAWAY(ENHANCE_YOUR_CALM)` naming the new stream and close, as
    /// Tomcat's overhead protection ends a connection on which uploads overlap.
    overlap: bool,
}

impl Goaways {
    /// A GOAWAY carrying `code`, once, with nothing beyond the script.
    fn with_code(code: u32) -> Goaways {
        Goaways {
            quota: false,
            code,
            raise: false,
            overlap: false,
        }
    }
}

/// What a scripted connection (the first, or the first few: [`FramePeer::start_scripted`])
/// does once it has read the HEADERS of `streams` requests.
#[derive(Clone, Copy, Debug)]
pub struct GoAwayScript {
    /// How many requests to read on a scripted connection before acting.
    pub streams: usize,
    /// The last stream id the peer processes (and the GOAWAY names); streams above it are left
    /// unanswered.
    pub last_stream_id: u32,
    /// Whether the peer sends `GOAWAY` when it acts; without one, the streams above the last
    /// id learn nothing but what the reset (if any) tells them.
    pub goaway: bool,
    /// Right after the GOAWAY and the answers, reset the connection (close with a zero
    /// linger): the client's next write fails, while what the peer sent waits unread in the
    /// client's receive buffer. [`FramePeer::wait_reset`] resolves once it is done.
    pub reset: bool,
    /// Send nothing at all on a scripted connection, not even SETTINGS: a server that accepted
    /// the connection and never began HTTP/2 on it.
    pub silent: bool,
}

/// What the peer saw, for assertions.
#[derive(Debug, Default)]
struct Seen {
    /// Per accepted connection (in order): stream id → request body bytes received.
    connections: Vec<BTreeMap<u32, usize>>,
    /// Per accepted connection: when it was accepted, on tokio's clock (paused in a test
    /// with `start_paused`, so that gaps are exact).
    accepted: Vec<tokio::time::Instant>,
    /// Per accepted connection: the parameters (identifier, value) of the client's first
    /// SETTINGS frame, empty until it arrived.
    settings: Vec<Vec<(u16, u32)>>,
}

/// A listening frame-level peer. Every connection after the scripted ones answers each request
/// with `200` as soon as its HEADERS (and, for a request with a body, its last DATA) arrive.
#[derive(Debug)]
pub struct FramePeer {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    reset: Signal,
    headers: Signal,
    task: tokio::task::JoinHandle<()>,
}

impl FramePeer {
    /// Starts the peer on loopback; its first connection follows `script`.
    pub async fn start(script: GoAwayScript) -> FramePeer {
        FramePeer::start_scripted(script, 1).await
    }

    /// Starts the peer on loopback; its first `scripted` connections each follow `script` (a
    /// server whose connections keep failing, one after another).
    pub async fn start_scripted(script: GoAwayScript, scripted: usize) -> FramePeer {
        FramePeer::listen(script, scripted, Goaways::with_code(NO_ERROR)).await
    }

    /// Starts a peer whose first connection follows `script` with a GOAWAY carrying the error
    /// `code` (`ENHANCE_YOUR_CALM` = 0xb: a server that ends the connection for something the
    /// client sent on it), and keeps serving the streams at or below its last id.
    pub async fn start_scripted_with(script: GoAwayScript, code: u32) -> FramePeer {
        FramePeer::listen(script, 1, Goaways::with_code(code)).await
    }

    /// Starts a peer whose first connection follows `script` with a GOAWAY carrying `code`,
    /// and then, before it answers anything, a second GOAWAY raising the last stream id to the
    /// highest there is (as Traffic Server 9.2 does): the client's h2 takes the raise as a
    /// protocol error and ends the connection under the streams at or below the first GOAWAY's
    /// last id.
    pub async fn start_raising(script: GoAwayScript, code: u32) -> FramePeer {
        let goaways = Goaways {
            raise: true,
            ..Goaways::with_code(code)
        };
        FramePeer::listen(script, 1, goaways).await
    }

    /// Starts a peer that serves `quota` requests on each connection, as nginx does with
    /// `keepalive_requests`: when the `quota`-th request's HEADERS arrive it sends `GOAWAY`
    /// naming that request's stream as the last, answers the requests up to it, leaves those
    /// above it unanswered, and closes the connection once the answers are written.
    pub async fn start_with_quota(quota: usize) -> FramePeer {
        FramePeer::start_cutting_with(quota, NO_ERROR).await
    }

    /// As [`FramePeer::start_with_quota`], but each GOAWAY carries the error `code` instead of
    /// `NO_ERROR`: a server that ends connections for something the client did, at a steady
    /// count (Tomcat's overhead protection, `ENHANCE_YOUR_CALM` = 0xb), not for a quota.
    pub async fn start_cutting_with(quota: usize, code: u32) -> FramePeer {
        let script = GoAwayScript {
            streams: quota,
            last_stream_id: 0,
            goaway: true,
            reset: false,
            silent: false,
        };
        let goaways = Goaways {
            quota: true,
            ..Goaways::with_code(code)
        };
        FramePeer::listen(script, usize::MAX, goaways).await
    }

    /// Starts a peer that answers every request once its body ended, but ends a connection
    /// with `GOAWAY(ENHANCE_YOUR_CALM)` (naming the newest stream) and closes it as soon as a
    /// request with a body opens while another request's body is unfinished: what Tomcat's
    /// overhead protection does to overlapping uploads, whatever the frames' sizes.
    pub async fn start_refusing_overlapping_bodies() -> FramePeer {
        let script = GoAwayScript {
            streams: usize::MAX,
            last_stream_id: 0,
            goaway: false,
            reset: false,
            silent: false,
        };
        let goaways = Goaways {
            overlap: true,
            ..Goaways::with_code(ENHANCE_YOUR_CALM)
        };
        FramePeer::listen(script, 0, goaways).await
    }

    async fn listen(script: GoAwayScript, scripted: usize, goaways: Goaways) -> FramePeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (reset, headers) = (Signal::new(), Signal::new());
        let task = tokio::spawn({
            let (seen, reset, headers) = (seen.clone(), reset.clone(), headers.clone());
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    // As HTTP/2 servers do. Without it a reset script's last frames could
                    // wait (Nagle) for an acknowledgement that the reset then never allows.
                    let _ = io.set_nodelay(true);
                    let index = {
                        let mut seen = seen.lock().unwrap();
                        seen.connections.push(BTreeMap::new());
                        seen.accepted.push(tokio::time::Instant::now());
                        seen.settings.push(Vec::new());
                        seen.connections.len() - 1
                    };
                    let script = (index < scripted).then_some(script);
                    let signals = (reset.clone(), headers.clone());
                    tokio::spawn(serve(io, script, goaways, seen.clone(), index, signals));
                }
            }
        });
        FramePeer {
            addr,
            seen,
            reset,
            headers,
            task,
        }
    }

    /// Resolves once the first connection was reset (a script with `reset`); with several
    /// scripted connections, once one was.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; never resolves without a reset: bound it with a timeout.
    pub async fn wait_reset(&self) {
        self.reset.wait_for(1).await;
    }

    /// Resolves once the peer has read the HEADERS of `n` requests, on all connections.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; bound it with a timeout.
    pub async fn wait_headers(&self, n: usize) {
        self.headers.wait_for(n).await;
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.seen.lock().unwrap().connections.len()
    }

    /// When each connection was accepted, in order, on tokio's clock.
    pub fn accepted(&self) -> Vec<tokio::time::Instant> {
        self.seen.lock().unwrap().accepted.clone()
    }

    /// Per connection, in order: the parameters (identifier, value) of the client's first
    /// SETTINGS frame on it (read before the peer reads any request there).
    pub fn client_settings(&self) -> Vec<Vec<(u16, u32)>> {
        self.seen.lock().unwrap().settings.clone()
    }

    /// Per connection: stream id → request body bytes the peer received on it.
    pub fn streams(&self) -> Vec<BTreeMap<u32, usize>> {
        self.seen.lock().unwrap().connections.clone()
    }
}

impl Drop for FramePeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A GOAWAY frame naming `last_stream_id`, with the error `code`.
fn goaway(last_stream_id: u32, code: u32) -> Vec<u8> {
    let mut payload = last_stream_id.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    frame(GOAWAY, 0, 0, &payload)
}

/// Serves one connection; with a `quota`, the script's last stream id is that of its
/// `streams`-th request, and the connection closes once the requests up to it are answered.
async fn serve(
    mut io: TcpStream,
    mut script: Option<GoAwayScript>,
    Goaways {
        quota,
        code,
        raise,
        overlap,
    }: Goaways,
    seen: Arc<Mutex<Seen>>,
    index: usize,
    (reset, headers): (Signal, Signal),
) {
    if !read_preface(&mut io).await {
        return;
    }
    let silent = script.is_some_and(|script| script.silent);
    if !silent && io.write_all(&frame(SETTINGS, 0, 0, &[])).await.is_err() {
        return;
    }
    // Requests whose HEADERS arrived, in order, and whether each has ended.
    let mut opened: Vec<(u32, bool)> = Vec::new();
    let mut acted = false;
    // With `quota`: requests received on the connection, and the stream id of the last one
    // the quota allows.
    let (mut received, mut last_allowed) = (0, 0);
    while let Some(f) = read_frame(&mut io).await {
        let mut out = Vec::new();
        match f.kind {
            SETTINGS if f.flags & ACK == 0 => {
                let settings = &mut seen.lock().unwrap().settings[index];
                if settings.is_empty() {
                    *settings = crate::h2wire::parameters(&f.payload);
                }
                if !silent {
                    out.extend(frame(SETTINGS, ACK, 0, &[]));
                }
            }
            HEADERS => {
                seen.lock().unwrap().connections[index].insert(f.stream, 0);
                let body = f.flags & END_STREAM == 0;
                if overlap && body && opened.iter().any(|(_, done)| !done) {
                    headers.raise();
                    let _ = io.write_all(&goaway(f.stream, code)).await;
                    linger_closed(io).await;
                    return;
                }
                opened.push((f.stream, f.flags & END_STREAM != 0));
                received += 1;
                if script.is_some_and(|script| received == script.streams) {
                    last_allowed = f.stream;
                }
                headers.raise();
            }
            DATA => {
                *seen.lock().unwrap().connections[index]
                    .entry(f.stream)
                    .or_default() += f.payload.len();
                if f.flags & END_STREAM != 0 {
                    if let Some(entry) = opened.iter_mut().find(|(id, _)| *id == f.stream) {
                        entry.1 = true;
                    }
                }
            }
            _ => {}
        }
        // The highest stream this peer processes now: none before a script acts (every one,
        // under a quota).
        let mut reset_now = false;
        let processed = match script {
            None => Some(u32::MAX),
            Some(script) if quota && !acted && received < script.streams => Some(u32::MAX),
            Some(script) if !quota && !acted && opened.len() < script.streams => None,
            Some(ref mut script) => {
                if !acted {
                    acted = true;
                    if quota {
                        script.last_stream_id = last_allowed;
                    }
                    reset_now = script.reset;
                    if script.goaway {
                        out.extend(goaway(script.last_stream_id, code));
                        if raise {
                            out.extend(goaway(i32::MAX as u32, NO_ERROR));
                        }
                    }
                }
                Some(script.last_stream_id)
            }
        };
        if let Some(last) = processed {
            // Answer the processed streams whose request ended.
            for (id, _) in opened.iter().filter(|(id, done)| *done && *id <= last) {
                out.extend(ok_response(*id));
            }
            opened.retain(|(id, done)| !(*done && *id <= last));
        }
        if !out.is_empty() && io.write_all(&out).await.is_err() {
            return;
        }
        if quota && acted && processed.is_some_and(|last| opened.iter().all(|(id, _)| *id > last)) {
            // Every request up to the last was answered: close, as nginx does.
            linger_closed(io).await;
            return;
        }
        if reset_now {
            // A zero linger makes the close a reset (and does not block).
            let _ = socket2::SockRef::from(&io).set_linger(Some(std::time::Duration::ZERO));
            drop(io);
            reset.raise();
            return;
        }
    }
}

/// Closes `io`'s sending side and reads on until the client closes too (lingering), so that a
/// frame the client sends meanwhile meets no reset that could discard what was sent before it
/// reads it.
async fn linger_closed(mut io: TcpStream) {
    let _ = io.shutdown().await;
    while read_frame(&mut io).await.is_some() {}
}
