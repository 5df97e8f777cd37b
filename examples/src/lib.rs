//! The local origin the examples run against: a small HTTP/1.1 server on a loopback port,
//! started on the caller's tokio runtime and stopped when dropped.
//!
//! It answers every request with `200 OK` and a short text body (`/` and any other path), or
//! with the status of `/status/CODE`; it counts the requests it served. It is a fixture for
//! the examples, not part of the pool: the examples show the pool, this only gives them
//! something to talk to without the network.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use pool::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running local origin (see the crate docs). Dropping it stops accepting connections.
#[derive(Debug)]
pub struct LocalOrigin {
    addr: SocketAddr,
    served: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl LocalOrigin {
    /// Binds `127.0.0.1` on an ephemeral port and serves on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    pub async fn start() -> std::io::Result<LocalOrigin> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let served = Arc::new(AtomicU64::new(0));
        let counter = served.clone();
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        counter.fetch_add(1, Ordering::Relaxed);
                        answer(request)
                    });
                    // A client that goes away mid-exchange is not the origin's problem.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(LocalOrigin {
            addr,
            served,
            accept,
        })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

impl Drop for LocalOrigin {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let status = request
        .uri()
        .path()
        .strip_prefix("/status/")
        .and_then(|code| code.parse::<u16>().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::OK);
    let mut response = Response::new(Full::new(Bytes::from_static(
        b"hello from the local origin\n",
    )));
    *response.status_mut() = status;
    Ok(response)
}
