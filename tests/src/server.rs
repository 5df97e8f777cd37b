//! The listener, accept loop and shutdown shared by the H1 and H2 scripted servers.
//!
//! Each accepted socket becomes one task in a `JoinSet` owned by the accept task. Shutdown stops
//! the accept loop, drops the listener and aborts every connection task (whatever step it is
//! parked at), then waits until all of them are gone, so their sockets are closed when
//! [`ServerCore::shutdown`] returns. Dropping the server aborts the same tasks without waiting.

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::counters::{ConnInfo, OpenGuard, Shared, lock};
use crate::gate::Gate;

/// The default bind address: an ephemeral port on IPv4 loopback.
pub(crate) const DEFAULT_BIND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// A server-side socket, plain or TLS.
#[derive(Debug)]
pub(crate) enum ServerIo {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl ServerIo {
    /// The TCP socket under the (optional) TLS layer.
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            ServerIo::Plain(s) => s,
            ServerIo::Tls(s) => s.get_ref().0,
        }
    }

    /// Aborts the connection with a TCP RST: zero linger, then close.
    pub(crate) fn reset(self) {
        // If setting the option fails the socket still closes, with a FIN instead of a RST.
        let _ = self.tcp().set_zero_linger();
        drop(self);
    }
}

impl AsyncRead for ServerIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ServerIo::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServerIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerIo::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ServerIo::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerIo::Plain(s) => Pin::new(s).poll_flush(cx),
            ServerIo::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ServerIo::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What a protocol server does with one connection after accept (and TLS).
pub(crate) type ServeFn = Arc<
    dyn Fn(u64, ServerIo, Arc<Shared>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync,
>;

/// Settings common to both servers.
#[derive(Debug, Clone)]
pub(crate) struct CoreConfig {
    pub(crate) bind: SocketAddr,
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    pub(crate) accept_gate: Option<Gate>,
    /// Keep every request for `requests()` (on by default; long runs turn it off).
    pub(crate) record_requests: bool,
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self {
            bind: DEFAULT_BIND,
            tls: None,
            accept_gate: None,
            record_requests: true,
        }
    }
}

/// The running listener of a scripted server.
#[derive(Debug)]
pub(crate) struct ServerCore {
    addr: SocketAddr,
    tls: bool,
    pub(crate) shared: Arc<Shared>,
    /// Set to `true` to stop the accept loop; read by the accept task.
    stop: watch::Sender<bool>,
    /// Becomes `true` once the accept task has ended and every connection task is gone.
    done: watch::Receiver<bool>,
    /// The accept task; aborted on drop.
    task: Mutex<Option<JoinHandle<()>>>,
}

/// Sets `done` when the accept task ends, even if it is aborted.
struct DoneGuard(watch::Sender<bool>);

impl Drop for DoneGuard {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// Binds with a deep accept queue: tokio's `TcpListener::bind` listens with a backlog of 128,
/// and a test burst of a few hundred connects would overflow it, turning dropped SYNs into
/// one-second retransmission stalls.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

impl ServerCore {
    /// Binds and starts accepting.
    pub(crate) async fn start(config: CoreConfig, serve: ServeFn) -> io::Result<Self> {
        let listener = listen(config.bind)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(config.record_requests));
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = watch::channel(false);
        let tls = config.tls.is_some();
        let task = tokio::spawn(accept_loop(
            listener,
            config,
            shared.clone(),
            serve,
            stop_rx,
            DoneGuard(done_tx),
        ));
        Ok(Self {
            addr,
            tls,
            shared,
            stop,
            done,
            task: Mutex::new(Some(task)),
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn url_with_host(&self, host: &str, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let slash = if path.starts_with('/') { "" } else { "/" };
        format!("{scheme}://{host}:{}{slash}{path}", self.addr.port())
    }

    /// The host part used by `url`: `localhost` for TLS on 127.0.0.1 (so the certificate name and
    /// SNI match), otherwise the IP literal.
    pub(crate) fn default_host(&self) -> String {
        match self.addr.ip() {
            std::net::IpAddr::V4(ip) if self.tls && ip == Ipv4Addr::LOCALHOST => {
                "localhost".to_owned()
            }
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        }
    }

    pub(crate) async fn shutdown(&self) {
        self.stop.send_replace(true);
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
        lock(&self.task).take();
    }
}

impl Drop for ServerCore {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(task) = lock(&self.task).take() {
            // Aborting the accept task drops its JoinSet, which aborts every connection task.
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    config: CoreConfig,
    shared: Arc<Shared>,
    serve: ServeFn,
    mut stop: watch::Receiver<bool>,
    done: DoneGuard,
) {
    let acceptor = config.tls.clone().map(TlsAcceptor::from);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            Some(res) = conns.join_next() => {
                if let Err(e) = res {
                    if e.is_panic() {
                        shared.error(format!("connection task panicked: {e}"));
                    }
                }
            }
            res = listener.accept() => {
                let (tcp, peer) = match res {
                    Ok(pair) => pair,
                    Err(e) => {
                        shared.error(format!("accept failed: {e}"));
                        break;
                    }
                };
                let id = register(&shared, &tcp, peer);
                let guard = OpenGuard { shared: shared.clone(), id };
                conns.spawn(run_conn(
                    id,
                    tcp,
                    acceptor.clone(),
                    config.accept_gate.clone(),
                    serve.clone(),
                    guard,
                ));
            }
        }
    }
    drop(listener);
    conns.shutdown().await;
    drop(done);
}

/// Counts a newly accepted connection and returns its id.
fn register(shared: &Shared, tcp: &TcpStream, peer: SocketAddr) -> u64 {
    // Small writes (a head, then half a body at a gate) must not wait for Nagle.
    let _ = tcp.set_nodelay(true);
    let local = tcp.local_addr().unwrap_or(peer);
    let id = {
        let mut conns = lock(&shared.conns);
        // Ids are the accept order (only this accept loop registers connections).
        let id = shared.counters().accepted as u64;
        if shared.keep_records {
            conns.push(ConnInfo {
                id,
                peer,
                local,
                tls: false,
                server_name: None,
                alpn: None,
                closed: false,
            });
        }
        id
    };
    let open_now = {
        let mut probes = lock(&shared.probes);
        let still_open = probes
            .values()
            .filter(|probe| !client_closed(probe))
            .count();
        if let Ok(probe) = socket2::SockRef::from(tcp).try_clone() {
            probes.insert(id, probe.into());
        }
        still_open + 1
    };
    shared.counters.send_modify(|c| {
        c.accepted += 1;
        c.open += 1;
        c.max_open = c.max_open.max(open_now);
    });
    id
}

/// Whether the client closed its side of `probe`'s connection: a peek (which consumes nothing)
/// reads end of stream. The socket is non-blocking, so a live idle connection reports
/// `WouldBlock`; unread bytes before the end count as open.
fn client_closed(probe: &std::net::TcpStream) -> bool {
    matches!(probe.peek(&mut [0u8; 1]), Ok(0))
}

async fn run_conn(
    id: u64,
    tcp: TcpStream,
    acceptor: Option<TlsAcceptor>,
    accept_gate: Option<Gate>,
    serve: ServeFn,
    guard: OpenGuard,
) {
    if let Some(gate) = accept_gate {
        gate.wait().await;
    }
    let io = match acceptor {
        None => ServerIo::Plain(tcp),
        Some(acceptor) => match acceptor.accept(tcp).await {
            Ok(tls) => {
                let (_, conn) = tls.get_ref();
                let server_name = conn.server_name().map(str::to_owned);
                let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
                guard.shared.update_conn(id, |c| {
                    c.tls = true;
                    c.server_name = server_name;
                    c.alpn = alpn;
                });
                guard.shared.counters.send_modify(|c| c.tls_handshakes += 1);
                ServerIo::Tls(Box::new(tls))
            }
            Err(_) => {
                // Expected in negative tests (untrusted CA, wrong name): counted, not an error.
                guard.shared.counters.send_modify(|c| c.tls_failures += 1);
                return;
            }
        },
    };
    serve(id, io, guard.shared.clone()).await;
    drop(guard);
}

/// Defines the accessors common to both servers, delegating to `self.core`.
macro_rules! common_server_methods {
    () => {
        /// The bound address (with the ephemeral port resolved).
        pub fn addr(&self) -> std::net::SocketAddr {
            self.core.addr()
        }

        /// `scheme://host:port/path`, where host is `localhost` for a TLS server on 127.0.0.1 (so
        /// the certificate name and SNI match) and the IP literal otherwise (`[::1]` for IPv6).
        /// A missing leading `/` in `path` is added.
        pub fn url(&self, path: &str) -> String {
            self.core.url_with_host(&self.core.default_host(), path)
        }

        /// `scheme://{host}:port/path` with a caller-chosen host (for example `127.0.0.1` on a
        /// TLS server, to test IP-address certificates or a missing SNI).
        pub fn url_with_host(&self, host: &str, path: &str) -> String {
            self.core.url_with_host(host, path)
        }

        /// `host:port` as [`url`](Self::url) spells it (the expected `Host` / `:authority`).
        pub fn authority(&self) -> String {
            format!("{}:{}", self.core.default_host(), self.core.addr().port())
        }

        /// Script violations and unexpected input seen so far (plan exhaustion, malformed
        /// requests, panics). Client-side closes and resets are not errors.
        pub fn errors(&self) -> Vec<String> {
            self.core.shared.errors.snapshot()
        }

        /// Waits until at least `n` errors were recorded and returns them all.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe; never resolves if fewer errors happen (bound it with a timeout).
        pub async fn wait_for_errors(&self, n: usize) -> Vec<String> {
            self.core.shared.errors.wait_len(n).await
        }

        /// A snapshot of the connection counters.
        pub fn counters(&self) -> $crate::counters::ConnCounters {
            self.core.shared.counters()
        }

        /// Connections accepted so far.
        pub fn accepted(&self) -> usize {
            self.counters().accepted
        }

        /// Connections currently open (accepted, task still running).
        pub fn open(&self) -> usize {
            self.counters().open
        }

        /// The largest number of connections that were open at the same time.
        pub fn max_open(&self) -> usize {
            self.counters().max_open
        }

        /// Connections that ended (for any reason).
        pub fn closed(&self) -> usize {
            self.counters().closed
        }

        /// Completed TLS handshakes.
        pub fn tls_handshakes(&self) -> usize {
            self.counters().tls_handshakes
        }

        /// Failed TLS handshakes.
        pub fn tls_failures(&self) -> usize {
            self.counters().tls_failures
        }

        /// One record per accepted connection, indexed by connection id.
        pub fn connections(&self) -> Vec<$crate::counters::ConnInfo> {
            $crate::counters::lock(&self.core.shared.conns).clone()
        }

        /// Waits until `cond` holds for the counters and returns the snapshot that satisfied it.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe; never resolves if the condition never holds (bound it with a timeout).
        pub async fn wait_counters(
            &self,
            cond: impl FnMut(&$crate::counters::ConnCounters) -> bool,
        ) -> $crate::counters::ConnCounters {
            self.core.shared.wait_counters(cond).await
        }

        /// Waits until at least `n` connections were accepted.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe; bound it with a timeout.
        pub async fn wait_for_accepted(&self, n: usize) {
            self.wait_counters(|c| c.accepted >= n).await;
        }

        /// Waits until at least `n` connections have ended.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe; bound it with a timeout.
        pub async fn wait_for_closed(&self, n: usize) {
            self.wait_counters(|c| c.closed >= n).await;
        }

        /// Stops accepting, aborts every connection task (including ones parked at gates or
        /// delays) and returns once all of their sockets are closed. Clients see EOF (or a reset,
        /// if they had sent bytes the server never read). Records stay readable afterwards.
        /// Calling it again returns at once.
        ///
        /// # Drop behavior
        ///
        /// Dropping the server does the same without waiting.
        pub async fn shutdown(&self) {
            self.core.shutdown().await;
        }
    };
}

pub(crate) use common_server_methods;

/// Defines the builder settings common to both servers, writing `self.core`.
macro_rules! common_builder_methods {
    () => {
        /// Whether to keep every request for the server's `requests()` and every connection
        /// for `connections()` (default: yes). A long run turns it off so the server's memory
        /// stays flat; requests and connections are still counted.
        pub fn record_requests(mut self, record: bool) -> Self {
            self.core.record_requests = record;
            self
        }

        /// Serves TLS with this configuration (see [`TestPki`](crate::tls::TestPki)); URLs
        /// become `https://`. An HTTP/2 server needs ALPN `h2` in it
        /// (`pki.server_config(&[b"h2"])`).
        pub fn tls(mut self, config: std::sync::Arc<rustls::ServerConfig>) -> Self {
            self.core.tls = Some(config);
            self
        }

        /// Binds here instead of `127.0.0.1:0` (for example `[::1]:0` or `127.0.0.2:0`).
        pub fn bind_addr(mut self, addr: std::net::SocketAddr) -> Self {
            self.core.bind = addr;
            self
        }

        /// Every accepted connection waits for this gate before its TLS handshake and its
        /// first step.
        pub fn accept_gate(mut self, gate: crate::gate::Gate) -> Self {
            self.core.accept_gate = Some(gate);
            self
        }
    };
}

pub(crate) use common_builder_methods;
