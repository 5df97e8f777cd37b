//! [`HttpConnector`] as a `tower_service::Service<Uri>`: the connector contract code written
//! against hyper's own `client::conn` API (and most hyper clients) plugs into.
//!
//! Calling it with a URI resolves, dials and (for `https`) handshakes exactly as the pool's
//! connections do, offering both `h2` and `http/1.1` by ALPN, and returns a [`Connection`]:
//! hyper's `rt::Read` + `rt::Write` over the transport, plus the [`Connected`] facts (which
//! protocol ALPN chose, addresses, TLS parameters, timings). What to speak over it is the
//! caller's choice: [`Connection::is_h2`] says what the server agreed to.
//!
//! It does not pool, time out (set a deadline around the call, or use [`Connect`] with
//! [`ConnectTarget::connect_timeout`]) or apply backpressure (`poll_ready` is always ready).

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Uri;
use pool_core::OriginKey;

use crate::{
    Connect, ConnectError, ConnectTarget, Connected, HttpConnector, Io, Negotiated, TokioIo,
};

/// A transport established by [`HttpConnector`]'s `Service<Uri>`: hyper's IO traits over it,
/// and what was negotiated.
pub struct Connection {
    io: TokioIo<Io>,
    connected: Connected,
}

impl Connection {
    /// What establishing the transport negotiated and measured.
    pub fn connected(&self) -> &Connected {
        &self.connected
    }

    /// Whether the server chose HTTP/2 by ALPN (always `false` for cleartext, where only the
    /// caller's prior knowledge can choose it).
    pub fn is_h2(&self) -> bool {
        self.connected.alpn == Some(Negotiated::Http2)
    }

    /// The transport (tokio's IO traits) and the facts, apart.
    pub fn into_parts(self) -> (Io, Connected) {
        (self.io.into_inner(), self.connected)
    }
}

impl hyper::rt::Read for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("connected", &self.connected)
            .finish_non_exhaustive()
    }
}

/// The future of [`HttpConnector`]'s `Service<Uri>::call`.
pub struct Connecting {
    inner: Pin<Box<dyn Future<Output = Result<Connection, ConnectError>> + Send>>,
}

impl Future for Connecting {
    type Output = Result<Connection, ConnectError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl fmt::Debug for Connecting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connecting").finish_non_exhaustive()
    }
}

impl tower_service::Service<Uri> for HttpConnector {
    type Response = Connection;
    type Error = ConnectError;
    type Future = Connecting;

    /// Always ready: the connector has no capacity of its own.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    /// Connects to `uri`'s origin (its path is ignored). A URI that names no `http` or `https`
    /// origin fails as a connect error whose source says why.
    fn call(&mut self, uri: Uri) -> Connecting {
        let connecting = match OriginKey::from_uri(&uri) {
            Ok(origin) => self.connect(ConnectTarget::new(origin)),
            Err(invalid) => {
                let error = io::Error::new(io::ErrorKind::InvalidInput, invalid);
                let failed = ConnectError::connect(error).with_target(uri);
                return Connecting {
                    inner: Box::pin(std::future::ready(Err(failed))),
                };
            }
        };
        Connecting {
            inner: Box::pin(async move {
                let (io, connected) = connecting.await?;
                Ok(Connection {
                    io: TokioIo::new(io),
                    connected,
                })
            }),
        }
    }
}
