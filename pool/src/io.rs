//! The transport as the pool wraps it: counted while its I/O lives.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use pool_core::connection::PhysicalLink;
use pool_core::sync::Arc;
use pool_tls::Io;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A transport that reports its own drop: that is the connection's physical close, which may
/// come long after its logical close (an HTTP/2 connection draining, an upgraded connection the
/// caller still holds). It also counts the bytes read and notes the first read or write error,
/// and the end of stream, with the link, for the close event.
pub(crate) struct TrackedIo {
    io: Io,
    link: Arc<PhysicalLink>,
}

impl TrackedIo {
    pub(crate) fn new(io: Io, link: Arc<PhysicalLink>) -> TrackedIo {
        TrackedIo { io, link }
    }

    /// Notes a failed write or flush with the link (the close event's cause, see
    /// `pool_core::connection::TransportEnd`), passing `polled` on. A failed shutdown is not
    /// noted: it comes after the connection's end, not before it.
    fn wrote<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(error)) = &polled {
            self.link.failed(false, error);
        }
        polled
    }
}

impl Drop for TrackedIo {
    fn drop(&mut self) {
        self.link.gone();
    }
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() != 0;
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) => {
                let read = buf.filled().len() - before;
                if read == 0 && room {
                    // The end of stream: the peer closed (the close event's quiet word).
                    self.link.ended();
                }
                self.link.count_read(read);
            }
            Poll::Ready(Err(error)) => self.link.failed(true, error),
            Poll::Pending => {}
        }
        polled
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.wrote(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
