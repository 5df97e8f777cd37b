//! [`Io`]: the one transport type the pool speaks HTTP over.
//!
//! A closed enum rather than a generic parameter, so the pool's connection types stay
//! non-generic: plain TCP, TLS over TCP, or anything else (boxed): a custom connector's
//! transport, or the default connector's Unix socket. The TCP and TLS variants are dispatched
//! with a `match`, not a virtual call; a Unix socket takes the boxed variant's virtual call
//! rather than give every TCP read and write another arm to pass (3 instructions a call, by
//! callgrind).
//!
//! What this type does not do: adapt to hyper's IO traits (wrap it in
//! [`TokioIo`](crate::TokioIo)), buffer, or shut down on drop beyond closing the socket.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The transport the pool speaks HTTP over.
///
/// `Unpin + Send`; implements tokio's [`AsyncRead`] and [`AsyncWrite`], including vectored
/// writes when the underlying stream supports them.
pub struct Io {
    kind: Kind,
}

enum Kind {
    Tcp(TcpStream),
    // Boxed: a TLS stream carries rustls's connection state, far larger than a socket.
    Tls(Box<TlsStream<TcpStream>>),
    Custom(Pin<Box<dyn AsyncIo>>),
}

/// The object-safe combination of traits a custom transport must provide.
trait AsyncIo: AsyncRead + AsyncWrite + Send {}

impl<T: AsyncRead + AsyncWrite + Send> AsyncIo for T {}

impl Io {
    /// Wraps a custom transport, for connectors other than
    /// [`HttpConnector`](crate::HttpConnector) (in-memory pipes in tests, Unix sockets,
    /// tunnels).
    pub fn custom<T: AsyncRead + AsyncWrite + Send + Unpin + 'static>(io: T) -> Io {
        Io {
            kind: Kind::Custom(Box::pin(io)),
        }
    }

    pub(crate) fn tcp(stream: TcpStream) -> Io {
        Io {
            kind: Kind::Tcp(stream),
        }
    }

    pub(crate) fn tls(stream: TlsStream<TcpStream>) -> Io {
        Io {
            kind: Kind::Tls(Box::new(stream)),
        }
    }
}

/// Forwards a method call to whichever stream `self` holds, pinned.
macro_rules! dispatch {
    ($self:ident.$method:ident($($arg:expr),*)) => {
        match &mut $self.get_mut().kind {
            Kind::Tcp(s) => Pin::new(s).$method($($arg),*),
            Kind::Tls(s) => Pin::new(&mut **s).$method($($arg),*),
            Kind::Custom(s) => s.as_mut().$method($($arg),*),
        }
    };
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        dispatch!(self.poll_read(cx, buf))
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        dispatch!(self.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        dispatch!(self.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.kind {
            Kind::Tcp(s) => s.is_write_vectored(),
            Kind::Tls(s) => s.is_write_vectored(),
            Kind::Custom(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        dispatch!(self.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        dispatch!(self.poll_shutdown(cx))
    }
}

impl fmt::Debug for Io {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Tcp(s) => f.debug_tuple("Io::Tcp").field(s).finish(),
            Kind::Tls(s) => f.debug_tuple("Io::Tls").field(s.get_ref().0).finish(),
            Kind::Custom(_) => f.write_str("Io::Custom(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn assert_unpin_send<T: Unpin + Send + 'static>() {}

    #[test]
    fn io_is_unpin_and_send() {
        assert_unpin_send::<Io>();
    }

    #[tokio::test]
    async fn custom_io_forwards_reads_and_writes() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut io = Io::custom(client);
        assert_eq!(format!("{io:?}"), "Io::Custom(..)");

        io.write_all(b"ping").await.unwrap();
        let mut buf = [0; 4];
        server.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");

        server.write_all(b"pong").await.unwrap();
        io.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");

        io.shutdown().await.unwrap();
        assert_eq!(server.read(&mut buf).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn tcp_io_forwards_vectored_writes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut io = Io::tcp(stream);
        assert!(io.is_write_vectored());

        let bufs = [io::IoSlice::new(b"he"), io::IoSlice::new(b"llo")];
        let written = io.write_vectored(&bufs).await.unwrap();
        let mut got = vec![0; written];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&b"hello"[..written], &got[..]);
    }
}
