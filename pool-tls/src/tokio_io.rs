//! [`TokioIo`]: the bridge between tokio's IO traits and hyper's.
//!
//! hyper 1.x defines its own [`hyper::rt::Read`] and [`hyper::rt::Write`] so it does not depend
//! on a runtime; something has to adapt tokio streams to them. hyper-util's `TokioIo` is the
//! usual answer, but product crates here do not depend on hyper-util, so this is our own,
//! working in both directions:
//!
//! * `TokioIo<T: tokio AsyncRead/AsyncWrite>` implements hyper's `Read`/`Write` (how a
//!   connection is handed to hyper's handshake);
//! * `TokioIo<T: hyper Read/Write>` implements tokio's `AsyncRead`/`AsyncWrite` (how an
//!   upgraded hyper connection is used with tokio utilities).
//!
//! # Why this module contains `unsafe`
//!
//! hyper hands a reader a [`ReadBufCursor`] over memory that may be uninitialized, and the only
//! way to report bytes written into it without first copying or zeroing them is the `unsafe`
//! [`ReadBufCursor::advance`]. One function below, `Read for TokioIo<T>`, is allowed
//! `unsafe`: two calls, each with its safety argument; the crate otherwise denies
//! `unsafe_code`. The opposite direction is done
//! safely, because tokio's [`ReadBuf::advance`] checks its own invariant.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::ReadBufCursor;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pin_project! {
    /// Adapts tokio's IO traits to hyper's [`Read`](hyper::rt::Read) and
    /// [`Write`](hyper::rt::Write), and hyper's back to tokio's.
    ///
    /// ```
    /// use pool_tls::{Io, TokioIo};
    ///
    /// let (client, _server) = tokio::io::duplex(1024);
    /// let io = TokioIo::new(Io::custom(client));
    /// // `io` can now be passed to `hyper::client::conn::http1::handshake`.
    /// # let _ = io;
    /// ```
    #[derive(Debug)]
    pub struct TokioIo<T> {
        #[pin]
        inner: T,
    }
}

impl<T> TokioIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> TokioIo<T> {
        TokioIo { inner }
    }

    /// The wrapped IO object.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped IO object, mutably.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the IO object.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

// tokio -> hyper

impl<T: AsyncRead> hyper::rt::Read for TokioIo<T> {
    #[allow(unsafe_code)]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let n = {
            // SAFETY: `as_mut` requires that we never de-initialize bytes of the cursor. We
            // only lend them to a tokio `ReadBuf`, whose API cannot de-initialize memory: a
            // reader can only write bytes and mark them initialized and filled.
            let unfilled = unsafe { buf.as_mut() };
            let start = unfilled.as_ptr().cast::<u8>();
            let mut tokio_buf = ReadBuf::uninit(unfilled);
            match self.project().inner.poll_read(cx, &mut tokio_buf) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            let filled = tokio_buf.filled();
            // A reader may replace the `ReadBuf` it was lent (it holds `&mut ReadBuf`); then
            // its filled bytes live elsewhere and say nothing about the cursor's memory.
            if filled.as_ptr() != start {
                return Poll::Ready(Err(io::Error::other("reader replaced its read buffer")));
            }
            filled.len()
        };
        // SAFETY: `advance(n)` requires that `n` more bytes of the cursor are initialized.
        // tokio's `ReadBuf` guarantees its filled region is initialized, and the check above
        // established that this region starts at the cursor's first unfilled byte, so the
        // `n` bytes after it are initialized.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite> hyper::rt::Write for TokioIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }
}

// hyper -> tokio

impl<T: hyper::rt::Read> AsyncRead for TokioIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Zero-initializing the unfilled part keeps this direction free of `unsafe`; tokio
        // remembers what it initialized, so a reused buffer is zeroed only once.
        let unfilled = buf.initialize_unfilled();
        let mut hyper_buf = hyper::rt::ReadBuf::new(unfilled);
        match self.project().inner.poll_read(cx, hyper_buf.unfilled()) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let n = hyper_buf.filled().len();
        // Safe `advance`: tokio checks that the bytes are initialized, which they all are.
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<T: hyper::rt::Write> AsyncWrite for TokioIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::future::poll_fn;
    use std::mem::MaybeUninit;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads through hyper's trait into uninitialized memory.
    async fn hyper_read<T: hyper::rt::Read + Unpin>(io: &mut T, len: usize) -> Vec<u8> {
        let mut storage = vec![MaybeUninit::<u8>::uninit(); len];
        let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
        poll_fn(|cx| Pin::new(&mut *io).poll_read(cx, buf.unfilled()))
            .await
            .unwrap();
        buf.filled().to_vec()
    }

    async fn hyper_write<T: hyper::rt::Write + Unpin>(io: &mut T, data: &[u8]) -> usize {
        poll_fn(|cx| Pin::new(&mut *io).poll_write(cx, data))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn tokio_stream_speaks_hyper_traits() {
        let (client, mut peer) = tokio::io::duplex(64);
        let mut io = TokioIo::new(client);

        assert_eq!(hyper_write(&mut io, b"request").await, 7);
        let mut got = [0; 7];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"request");

        peer.write_all(b"response").await.unwrap();
        assert_eq!(hyper_read(&mut io, 64).await, b"response");

        // A buffer smaller than what is available gets exactly its capacity.
        peer.write_all(b"abcdef").await.unwrap();
        assert_eq!(hyper_read(&mut io, 4).await, b"abcd");
        assert_eq!(hyper_read(&mut io, 4).await, b"ef");

        // End of stream: ready with nothing filled.
        drop(peer);
        assert_eq!(hyper_read(&mut io, 4).await, b"");
    }

    #[tokio::test]
    async fn hyper_traits_round_trip_back_to_tokio() {
        let (client, mut peer) = tokio::io::duplex(64);
        // tokio -> hyper -> tokio again: both adapters on one stream.
        let mut io = TokioIo::new(TokioIo::new(client));

        io.write_all(b"hello").await.unwrap();
        io.flush().await.unwrap();
        let mut got = [0; 5];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");

        peer.write_all(b"world").await.unwrap();
        drop(peer);
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"world");

        io.shutdown().await.unwrap();
        let inner: tokio::io::DuplexStream = io.into_inner().into_inner();
        drop(inner);
    }

    #[tokio::test]
    async fn accessors_reach_the_wrapped_value() {
        let mut io = TokioIo::new(crate::Io::custom(tokio::io::duplex(8).0));
        assert_eq!(format!("{:?}", io.inner()), "Io::Custom(..)");
        let _: &mut crate::Io = io.inner_mut();
    }

    /// A reader that swaps its buffer for another one, which the adapter must not trust.
    struct SwappingReader;

    impl AsyncRead for SwappingReader {
        fn poll_read(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let elsewhere: &'static mut [u8] = Box::leak(vec![1u8; 4].into_boxed_slice());
            let mut other = ReadBuf::new(elsewhere);
            other.advance(4);
            // `ReadBuf` is only borrowed for the call; swapping requires matching lifetimes,
            // which a `'static` buffer provides.
            *buf = other;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn reader_that_replaces_its_buffer_is_an_error_not_undefined_behavior() {
        let mut io = TokioIo::new(SwappingReader);
        let mut storage = [MaybeUninit::<u8>::uninit(); 8];
        let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
        let result =
            poll_fn(|cx| hyper::rt::Read::poll_read(Pin::new(&mut io), cx, buf.unfilled())).await;
        assert!(result.is_err());
        assert!(buf.filled().is_empty());
    }
}
