//! Glue for driving hyper's low-level client (`hyper::client::conn`) in tests without
//! hyper-util: [`TokioIo`] adapts tokio IO to hyper's IO traits and [`TokioExecutor`] spawns
//! hyper's background futures (needed by the HTTP/2 handshake).
//!
//! What this module does not do: pooling, connecting or TLS. The product's own adapter lives in
//! `pool-tls`; this one exists so the harness can test itself independently of it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Wraps a tokio `AsyncRead + AsyncWrite` so hyper can use it.
///
/// Reads go through a small stack buffer and `ReadBufCursor::put_slice`, which keeps this
/// adapter free of `unsafe` at the cost of one copy (irrelevant for tests).
#[derive(Debug)]
pub struct TokioIo<T> {
    inner: T,
}

impl<T> TokioIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self { inner }
    }

    /// The wrapped IO.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Unwraps the IO.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead + Unpin> hyper::rt::Read for TokioIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let mut tmp = [0u8; 16 * 1024];
        let n = buf.remaining().min(tmp.len());
        let mut read = ReadBuf::new(&mut tmp[..n]);
        ready!(Pin::new(&mut self.get_mut().inner).poll_read(cx, &mut read))?;
        buf.put_slice(read.filled());
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> hyper::rt::Write for TokioIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
}

/// A hyper executor that `tokio::spawn`s onto the current runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioExecutor;

impl<F> hyper::rt::Executor<F> for TokioExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        tokio::spawn(fut);
    }
}
