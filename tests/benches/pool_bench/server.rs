//! The benchmark's own origin: hyper servers on loopback answering every request with a
//! minimal response, on a separate thread and runtime so the server never shares the client's.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioExecutor;
use pool_tls::TokioIo;
use tokio::net::{TcpListener, TcpStream};

/// What the TLS listener counted.
#[derive(Debug, Default)]
pub(crate) struct TlsCounters {
    pub(crate) accepted: AtomicU64,
    pub(crate) handshakes: AtomicU64,
    pub(crate) failures: AtomicU64,
}

/// The listeners: HTTP/1.1, HTTP/1.1 answering after [`UPSTREAM_LATENCY`], h2c, and TLS with
/// ALPN `h2, http/1.1`.
pub(crate) struct Servers {
    pub(crate) h1: SocketAddr,
    /// HTTP/1.1 whose every response waits [`UPSTREAM_LATENCY`] first, like a gateway's
    /// upstream: what a request waits for is then the connections, not the two cores.
    pub(crate) slow_h1: SocketAddr,
    pub(crate) h2c: SocketAddr,
    pub(crate) tls: SocketAddr,
    pub(crate) tls_counters: Arc<TlsCounters>,
    pub(crate) ca_pem: String,
    pub(crate) client_tls: Arc<rustls::ClientConfig>,
}

async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"hello"))))
}

/// How long the `slow_h1` listener takes to answer.
pub(crate) const UPSTREAM_LATENCY: std::time::Duration = std::time::Duration::from_millis(2);

async fn slow_hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    tokio::time::sleep(UPSTREAM_LATENCY).await;
    Ok(Response::new(Full::new(Bytes::from_static(b"hello"))))
}

/// A loopback listener with a deep backlog, bound on `thread`'s runtime.
pub(crate) fn listen(thread: &tokio::runtime::Runtime) -> TcpListener {
    thread.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        socket.listen(4096).expect("listen")
    })
}

pub(crate) fn serve_h1(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    tokio::spawn(
        hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service_fn(hello)),
    );
}

fn serve_h2(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    tokio::spawn(
        hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .max_concurrent_streams(1024)
            .serve_connection(TokioIo::new(stream), service_fn(hello)),
    );
}

/// Serves one HTTP/1.1 connection over any transport (the in-memory scenario).
pub(crate) fn serve_h1_io<T>(io: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    tokio::spawn(
        hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(io), service_fn(hello)),
    );
}

/// Starts the servers on their own thread and runtime (one worker thread).
pub(crate) fn start() -> Servers {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-server")
        .enable_all()
        .build()
        .expect("server runtime");
    let (h1, h2c, tls) = (listen(&runtime), listen(&runtime), listen(&runtime));
    let slow_h1 = listen(&runtime);
    let slow_addr = slow_h1.local_addr().unwrap();
    let addrs = (
        h1.local_addr().unwrap(),
        h2c.local_addr().unwrap(),
        tls.local_addr().unwrap(),
    );
    let pki = pool_tests::tls::TestPki::new();
    let acceptor = tokio_rustls::TlsAcceptor::from(pki.server_config(&[b"h2", b"http/1.1"]));
    let tls_counters = Arc::new(TlsCounters::default());
    let counters = tls_counters.clone();
    runtime.spawn(async move {
        loop {
            if let Ok((stream, _)) = h1.accept().await {
                serve_h1(stream);
            }
        }
    });
    runtime.spawn(async move {
        loop {
            if let Ok((stream, _)) = slow_h1.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service_fn(slow_hello)),
                );
            }
        }
    });
    runtime.spawn(async move {
        loop {
            if let Ok((stream, _)) = h2c.accept().await {
                serve_h2(stream);
            }
        }
    });
    runtime.spawn(async move {
        loop {
            let Ok((stream, _)) = tls.accept().await else {
                continue;
            };
            counters.accepted.fetch_add(1, Ordering::Relaxed);
            let (acceptor, counters) = (acceptor.clone(), counters.clone());
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let Ok(stream) = acceptor.accept(stream).await else {
                    counters.failures.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                counters.handshakes.fetch_add(1, Ordering::Relaxed);
                let io = TokioIo::new(stream);
                if io.inner().get_ref().1.alpn_protocol() == Some(b"h2") {
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .max_concurrent_streams(1024)
                        .serve_connection(io, service_fn(hello))
                        .await;
                } else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service_fn(hello))
                        .await;
                }
            });
        }
    });
    std::thread::Builder::new()
        .name("bench-server".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .expect("server thread");
    Servers {
        h1: addrs.0,
        slow_h1: slow_addr,
        h2c: addrs.1,
        tls: addrs.2,
        tls_counters,
        ca_pem: pki.ca_pem(),
        client_tls: pki.client_config(&[b"h2", b"http/1.1"]),
    }
}
