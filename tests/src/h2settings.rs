//! A frame-level HTTP/2 peer whose `SETTINGS_MAX_CONCURRENT_STREAMS` the test changes in the
//! middle of a connection, which no server library does on demand.
//!
//! The peer announces a limit in its first SETTINGS frame, then holds every request it reads
//! (it answers none) until the test tells it to: [`SettingsPeer::announce`] sends a new
//! SETTINGS frame with another limit, [`SettingsPeer::answer_all`] answers every request that
//! has ended with `200` (and every later one at once, until [`SettingsPeer::hold`]). It counts the streams open at once, so
//! a test can see the client follow the new limit without any stream ending. It also keeps the
//! parameters of the client's first SETTINGS frame ([`SettingsPeer::client_settings`]), counts
//! the client's SETTINGS acknowledgements (h2 applies a peer's SETTINGS as it writes the ACK, so
//! an ACK read here proves the client's h2 follows the new limit), and closes its connections on
//! demand ([`SettingsPeer::close`]).
//!
//! What it does not do: enforce the limit (a client that exceeds it is caught by the count,
//! not refused), HPACK-decode requests, flow control (responses are empty).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;

use crate::h2wire::{
    ACK, DATA, END_HEADERS, END_STREAM, HEADERS, SETTINGS, STATUS_200, frame, read_frame,
    read_preface,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};

const MAX_CONCURRENT_STREAMS: u16 = 0x3;

/// What the test asks of the peer's connections.
#[derive(Clone, Copy, Debug)]
enum Command {
    Announce(u32),
    AnswerAll,
    AnswerOne,
    Hold,
    Close,
}

#[derive(Debug, Default)]
struct Counts {
    /// Streams whose HEADERS arrived and that are not answered yet, on all connections.
    open: usize,
    /// The most streams open at once on one connection.
    max_open: usize,
    /// Connections accepted.
    connections: usize,
    /// Connections this peer closed.
    closed: usize,
    /// SETTINGS acknowledgements read from clients.
    acks: usize,
    /// The parameters (identifier, value) of the first SETTINGS frame a client sent.
    client_settings: Option<Vec<(u16, u32)>>,
}

/// A listening peer; see the module docs.
#[derive(Debug)]
pub struct SettingsPeer {
    addr: SocketAddr,
    /// Whether requests are answered; a connection accepted later starts in this mode.
    answering: Arc<std::sync::atomic::AtomicBool>,
    counts: Arc<Mutex<Counts>>,
    changed: Arc<Notify>,
    commands: Arc<Mutex<Vec<mpsc::UnboundedSender<Command>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SettingsPeer {
    /// Starts the peer on loopback, announcing `limit` concurrent streams.
    pub async fn start(limit: u32) -> SettingsPeer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let counts = Arc::new(Mutex::new(Counts::default()));
        let changed = Arc::new(Notify::new());
        let commands: Arc<Mutex<Vec<mpsc::UnboundedSender<Command>>>> = Arc::default();
        let answering = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task = tokio::spawn({
            let (counts, changed, commands) = (counts.clone(), changed.clone(), commands.clone());
            let answering = answering.clone();
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    let (tx, rx) = mpsc::unbounded_channel();
                    commands.lock().unwrap().push(tx);
                    counts.lock().unwrap().connections += 1;
                    let conn = Conn {
                        counts: counts.clone(),
                        changed: changed.clone(),
                        answering: answering.clone(),
                    };
                    tokio::spawn(conn.serve(io, limit, rx));
                }
            }
        });
        SettingsPeer {
            addr,
            answering,
            counts,
            changed,
            commands,
            task,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The parameters (identifier, value) of the first SETTINGS frame a client sent, in its
    /// order; empty before one arrived.
    pub fn client_settings(&self) -> Vec<(u16, u32)> {
        self.counts
            .lock()
            .unwrap()
            .client_settings
            .clone()
            .unwrap_or_default()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.counts.lock().unwrap().connections
    }

    /// Waits until clients acknowledged `n` SETTINGS frames (the first is the one every
    /// connection starts with).
    pub async fn wait_acks(&self, n: usize) {
        self.wait_until(|counts| counts.acks >= n).await;
    }

    /// Waits until `n` connections were closed by [`close`](Self::close).
    pub async fn wait_closed(&self, n: usize) {
        self.wait_until(|counts| counts.closed >= n).await;
    }

    async fn wait_until(&self, done: impl Fn(&Counts) -> bool) {
        loop {
            let notified = self.changed.notified();
            if done(&self.counts.lock().unwrap()) {
                return;
            }
            notified.await;
        }
    }

    /// Streams open (read and not answered) right now.
    pub fn open_streams(&self) -> usize {
        self.counts.lock().unwrap().open
    }

    /// The most streams ever open at once on one connection.
    pub fn max_open_streams(&self) -> usize {
        self.counts.lock().unwrap().max_open
    }

    /// Waits until `n` streams are open at once.
    pub async fn wait_open(&self, n: usize) {
        self.wait_until(|counts| counts.open >= n).await;
    }

    /// Sends a SETTINGS frame announcing `limit` concurrent streams on every connection.
    pub fn announce(&self, limit: u32) {
        self.command(Command::Announce(limit));
    }

    /// Answers every request that ended, now and from now on.
    pub fn answer_all(&self) {
        self.answering
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.command(Command::AnswerAll);
    }

    /// Answers the oldest request that ended, and holds the rest.
    pub fn answer_one(&self) {
        self.command(Command::AnswerOne);
    }

    /// Stops answering (requests read from now on are held again).
    pub fn hold(&self) {
        self.answering
            .store(false, std::sync::atomic::Ordering::SeqCst);
        self.command(Command::Hold);
    }

    /// Closes every connection (the transport, without GOAWAY), leaving its streams
    /// unanswered.
    pub fn close(&self) {
        self.command(Command::Close);
    }

    fn command(&self, command: Command) {
        for tx in self.commands.lock().unwrap().iter() {
            let _ = tx.send(command);
        }
    }
}

impl Drop for SettingsPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Conn {
    counts: Arc<Mutex<Counts>>,
    changed: Arc<Notify>,
    /// Read whenever the connection could answer, so `hold` and `answer_all` take effect
    /// before they return (a command only wakes the connection).
    answering: Arc<std::sync::atomic::AtomicBool>,
}

impl Conn {
    async fn serve(
        self,
        io: TcpStream,
        limit: u32,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let (mut reader, mut writer) = io.into_split();
        if !read_preface(&mut reader).await {
            return;
        }
        if writer.write_all(&settings(limit)).await.is_err() {
            return;
        }
        // Frames are read on a task of their own: `read_exact` cannot be raced in a select.
        let (frames_tx, mut frames) = mpsc::unbounded_channel();
        let (counts, changed) = (self.counts.clone(), self.changed.clone());
        tokio::spawn(async move {
            while let Some(f) = read_frame(&mut reader).await {
                if f.kind == SETTINGS && f.flags & ACK != 0 {
                    counts.lock().unwrap().acks += 1;
                    changed.notify_waiters();
                }
                if f.kind == SETTINGS && f.flags & ACK == 0 {
                    let parameters = crate::h2wire::parameters(&f.payload);
                    counts
                        .lock()
                        .unwrap()
                        .client_settings
                        .get_or_insert(parameters);
                }
                if frames_tx.send((f.kind, f.flags, f.stream)).is_err() {
                    return;
                }
            }
        });
        // Streams read and not answered, with whether the request ended.
        let mut pending: Vec<(u32, bool)> = Vec::new();
        loop {
            let mut out = Vec::new();
            tokio::select! {
                received = frames.recv() => {
                    let Some((kind, flags, stream)) = received else { return };
                    match kind {
                        SETTINGS if flags & ACK == 0 => out.extend(frame(SETTINGS, ACK, 0, &[])),
                        HEADERS => {
                            pending.push((stream, flags & END_STREAM != 0));
                            self.opened(pending.len());
                        }
                        DATA if flags & END_STREAM != 0 => {
                            if let Some(entry) = pending.iter_mut().find(|(id, _)| *id == stream) {
                                entry.1 = true;
                            }
                        }
                        _ => {}
                    }
                }
                command = commands.recv() => match command {
                    Some(Command::Announce(limit)) => out.extend(settings(limit)),
                    Some(Command::AnswerAll | Command::Hold) => {}
                    Some(Command::Close) => {
                        // Dropping the write half sends FIN; the open streams stay unanswered.
                        drop(writer);
                        let open = pending.len();
                        let mut counts = self.counts.lock().unwrap();
                        counts.open -= open;
                        counts.closed += 1;
                        drop(counts);
                        self.changed.notify_waiters();
                        return;
                    }
                    Some(Command::AnswerOne) => {
                        if let Some(at) = pending.iter().position(|(_, done)| *done) {
                            let (id, _) = pending.remove(at);
                            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, id, STATUS_200));
                            self.answered(1);
                        }
                    }
                    None => return,
                },
            }
            if self.answering.load(std::sync::atomic::Ordering::SeqCst) {
                let before = pending.len();
                for (id, _) in pending.iter().filter(|(_, done)| *done) {
                    out.extend(frame(HEADERS, END_HEADERS | END_STREAM, *id, STATUS_200));
                }
                pending.retain(|(_, done)| !*done);
                self.answered(before - pending.len());
            }
            if !out.is_empty() && writer.write_all(&out).await.is_err() {
                return;
            }
        }
    }

    fn opened(&self, open_here: usize) {
        let mut counts = self.counts.lock().unwrap();
        counts.open += 1;
        counts.max_open = counts.max_open.max(open_here);
        drop(counts);
        self.changed.notify_waiters();
    }

    fn answered(&self, n: usize) {
        self.counts.lock().unwrap().open -= n;
        self.changed.notify_waiters();
    }
}

fn settings(max_concurrent_streams: u32) -> Vec<u8> {
    let mut payload = MAX_CONCURRENT_STREAMS.to_be_bytes().to_vec();
    payload.extend_from_slice(&max_concurrent_streams.to_be_bytes());
    frame(SETTINGS, 0, 0, &payload)
}
