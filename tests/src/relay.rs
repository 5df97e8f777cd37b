//! An h2c server built on hyper whose every response body ends with an empty chunk, as a
//! relay's does when it forwards a chunked upstream response piece by piece (hyper's HTTP/1
//! client yields the chunked terminator as an empty chunk). hyper's HTTP/2 server sends that
//! chunk as a DATA frame with no data that does not end the stream, then ends the stream with
//! another empty frame: one frame per response of the kind h2's client allows only 100 of per
//! connection.
//!
//! What it does not do: read request bodies, speak HTTP/1.1 or TLS.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::net::TcpListener;

use crate::client::Chunks;
use crate::io::{TokioExecutor, TokioIo};

/// A listening relay-like server; see the module docs.
#[derive(Debug)]
pub struct EmptyChunkServer {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl EmptyChunkServer {
    /// Starts the server on loopback; every response is `200` with the body `relayed`.
    pub async fn start() -> EmptyChunkServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let accepted = accepted.clone();
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(|_request| async {
                            // Each chunk its own frame, the empty one included.
                            let body = Chunks::new([Bytes::from_static(b"relayed"), Bytes::new()]);
                            Ok::<_, Infallible>(hyper::Response::new(body))
                        });
                        // A client that goes away is not the server's problem.
                        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor)
                            .serve_connection(TokioIo::new(io), service)
                            .await;
                    });
                }
            }
        });
        EmptyChunkServer {
            addr,
            accepted,
            task,
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for EmptyChunkServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
