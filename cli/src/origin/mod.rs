//! The built-in local origin: HTTP/1.1 cleartext, h2c, and TLS with ALPN `h2, http/1.1`, on
//! ephemeral loopback ports, serving the routes in [`handlers`].
//!
//! ```text
//! LocalOrigin::start ── certificates (tls.rs) ── its own multi-thread runtime (N worker threads)
//!   listener http1 127.0.0.1:0 ─ accept ─ hyper http1 ─┐
//!   listener h2c   127.0.0.1:0 ─ accept ─ hyper http2 ─┼─ handlers::handle
//!   listener tls   127.0.0.1:0 ─ accept ─ TLS ─ ALPN h2 ? http2 : http1 ─┘
//! ```
//!
//! `poolcurl load --local` starts one in-process; `poolcurl serve` ([`serve`]) runs one in the
//! foreground. The runtime is the origin's own, on its own threads, so serving never competes
//! with the load generator's partition runtimes for a scheduler (only for CPUs).
//!
//! Each listener is bound with a deep accept queue (4096): tokio's `TcpListener::bind` asks for
//! 128, and a burst of connects beyond it overflows into one-second SYN retransmissions, which
//! would show up as latency that is the origin's fault, not the pool's.
//!
//! `poolcurl serve --port/--h2c-port/--tls-port/--bind` choose the addresses; otherwise every
//! listener takes an ephemeral port on 127.0.0.1.
//!
//! What this origin does not do: TLS client authentication, HTTP/1.0 keep-alive, request
//! logging, or limits on connections.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use hyper::service::service_fn;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::TlsAcceptor;

mod accepts;
mod handlers;
pub(crate) mod serve;
mod server_io;
mod tls;

use self::accepts::Accepts;
use self::server_io::SpawnExecutor;
use self::tls::OriginPki;

pub(crate) use serve::ServeArgs;

/// The accept queue each listener asks for.
const BACKLOG: u32 = 4096;

/// The three listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// HTTP/1.1 over cleartext TCP.
    Http1,
    /// HTTP/2 with prior knowledge over cleartext TCP (h2c).
    H2c,
    /// TLS; ALPN picks HTTP/2 or HTTP/1.1 per connection.
    Tls,
}

impl Flavor {
    /// Every flavor, in the order `serve` prints them.
    pub(crate) const ALL: [Flavor; 3] = [Flavor::Http1, Flavor::H2c, Flavor::Tls];

    /// The label `serve` prints.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Flavor::Http1 => "http1",
            Flavor::H2c => "h2c",
            Flavor::Tls => "https",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A running local origin. Dropping it stops it (its runtime shuts down in the background).
#[derive(Debug)]
pub(crate) struct LocalOrigin {
    /// The origin's runtime; `None` only while dropping.
    runtime: Option<Runtime>,
    /// Each listener's address, by [`Flavor`].
    addrs: [SocketAddr; 3],
    /// Connections each listener accepted.
    accepts: Arc<Accepts>,
    /// The CA that signed the TLS listener's certificate, PEM.
    ca_pem: String,
}

impl LocalOrigin {
    /// Starts the origin on a runtime with `threads` worker threads.
    ///
    /// # Errors
    ///
    /// When the certificates, the runtime or a listener cannot be created.
    pub(crate) fn start(threads: usize) -> anyhow::Result<LocalOrigin> {
        LocalOrigin::start_on(threads, IpAddr::V4(Ipv4Addr::LOCALHOST), [0; 3])
    }

    /// Starts the origin on a runtime with `threads` worker threads, its listeners bound to
    /// `ip` on `ports` (by [`Flavor`]; 0 picks an ephemeral port).
    ///
    /// # Errors
    ///
    /// When the certificates, the runtime or a listener cannot be created (a port in use).
    pub(crate) fn start_on(
        threads: usize,
        ip: IpAddr,
        ports: [u16; 3],
    ) -> anyhow::Result<LocalOrigin> {
        let pki = OriginPki::generate().context("creating the local origin's certificates")?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("poolcurl-origin")
            .enable_all()
            .build()
            .context("starting the local origin's runtime")?;
        let listeners = runtime
            .block_on(async {
                let mut listeners = Vec::with_capacity(3);
                for flavor in Flavor::ALL {
                    let addr = SocketAddr::new(ip, ports[flavor.index()]);
                    let listener = listen(addr).map_err(|e| {
                        io::Error::new(e.kind(), format!("{} on {addr}: {e}", flavor.label()))
                    })?;
                    listeners.push(listener);
                }
                Ok::<_, io::Error>(listeners)
            })
            .context("binding the local origin's listeners")?;
        let accepts = Arc::new(Accepts::default());
        let acceptor = TlsAcceptor::from(pki.server_config.clone());
        let mut addrs = [SocketAddr::from((Ipv4Addr::LOCALHOST, 0)); 3];
        for (flavor, listener) in Flavor::ALL.into_iter().zip(listeners) {
            addrs[flavor.index()] = listener
                .local_addr()
                .context("reading a listener's address")?;
            let tls = (flavor == Flavor::Tls).then(|| acceptor.clone());
            runtime.spawn(accept_loop(listener, flavor, tls, accepts.clone()));
        }
        Ok(LocalOrigin {
            runtime: Some(runtime),
            addrs,
            accepts,
            ca_pem: pki.ca_pem,
        })
    }

    /// The URL of `path` on the `flavor` listener (`https://127.0.0.1:PORT/path` for TLS; the
    /// certificate names localhost, 127.0.0.1 and ::1). A listener on the unspecified address
    /// is named by the loopback address of its family.
    pub(crate) fn url(&self, flavor: Flavor, path: &str) -> String {
        let scheme = match flavor {
            Flavor::Tls => "https",
            Flavor::Http1 | Flavor::H2c => "http",
        };
        format!("{scheme}://{}{path}", self.connect_addr(flavor))
    }

    /// The address a client connects to for the `flavor` listener: its own, or the loopback
    /// address of its family for a listener on the unspecified address.
    fn connect_addr(&self, flavor: Flavor) -> SocketAddr {
        let mut addr = self.addrs[flavor.index()];
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            });
        }
        addr
    }

    /// The CA certificate to trust for the TLS listener, PEM.
    pub(crate) fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Connections the `flavor` listener has accepted, read once its accept loop has taken
    /// every connection whose handshake completed before this call (see [`accepts`]): the
    /// count a client's own tally of opened connections can be compared with. If the loop
    /// cannot be caught up (it never takes the marker), the count so far.
    ///
    /// Call it outside any runtime: it blocks on the origin's.
    pub(crate) fn accepted(&self, flavor: Flavor) -> u64 {
        let runtime = self.runtime.as_ref().expect("running");
        let _ = runtime.block_on(self.accepts.settle(flavor, self.connect_addr(flavor)));
        self.accepts.get(flavor)
    }

    /// Also serves HTTP/1.1 on a Unix domain socket at `path`, for `--unix-socket` clients.
    /// The caller removes the socket file when done.
    ///
    /// # Errors
    ///
    /// When the socket cannot be bound (a file already there, a missing directory).
    #[cfg(unix)]
    pub(crate) fn serve_unix(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let runtime = self.runtime.as_ref().expect("running");
        let _entered = runtime.enter();
        let listener = tokio::net::UnixListener::bind(path)
            .with_context(|| format!("binding the Unix socket {}", path.display()))?;
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_http1(stream));
            }
        });
        Ok(())
    }
}

impl Drop for LocalOrigin {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A listener on `addr` (port 0: an ephemeral one) with a deep accept queue.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Accepts connections forever, one task each.
async fn accept_loop(
    listener: TcpListener,
    flavor: Flavor,
    tls: Option<TlsAcceptor>,
    accepts: Arc<Accepts>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, peer)) if accepts.accepted_from(flavor, peer) => stream,
            Ok(_marker) => continue,
            Err(_) => {
                // Out of file descriptors and the like: give the process a moment instead of
                // spinning (the server's own pacing, not a test's).
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(stream, flavor, tls.clone()));
    }
}

/// Serves one connection until it ends; errors end the connection and nothing else.
async fn serve_connection(stream: TcpStream, flavor: Flavor, tls: Option<TlsAcceptor>) {
    match (flavor, tls) {
        (Flavor::Http1, _) => serve_http1(stream).await,
        (Flavor::H2c, _) => serve_http2(stream).await,
        (Flavor::Tls, Some(acceptor)) => {
            let Ok(stream) = acceptor.accept(stream).await else {
                return;
            };
            if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                serve_http2(stream).await;
            } else {
                serve_http1(stream).await;
            }
        }
        (Flavor::Tls, None) => {}
    }
}

async fn serve_http1<T>(stream: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(pool::TokioIo::new(stream), service_fn(handlers::handle))
        .await;
}

async fn serve_http2<T>(stream: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let _ = hyper::server::conn::http2::Builder::new(SpawnExecutor)
        .serve_connection(pool::TokioIo::new(stream), service_fn(handlers::handle))
        .await;
}
