//! A loopback address where connections are refused, for tests of connect failures.

use std::net::SocketAddr;

use socket2::{Domain, Protocol, Socket, Type};

/// A loopback address that refuses connections for as long as this value lives.
///
/// Its port is bound but not listening: the kernel answers every connection attempt with a
/// reset, and no other socket can be given the port meanwhile. The shortcut of binding a
/// listener, reading its port and dropping it frees the port at once, and a test running in
/// parallel may then be given it for its own server: the "refused" connection reaches that
/// server instead (seen in the curl parity suite, where curl was answered 404 by another
/// case's server).
#[derive(Debug)]
pub struct RefusedAddr {
    _socket: Socket,
    addr: SocketAddr,
}

impl RefusedAddr {
    /// Binds a fresh port on 127.0.0.1 without listening on it.
    ///
    /// # Panics
    ///
    /// If no socket can be created or bound.
    pub fn new() -> RefusedAddr {
        let socket =
            Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).expect("a TCP socket");
        let any_port: SocketAddr = "127.0.0.1:0".parse().expect("loopback");
        socket.bind(&any_port.into()).expect("bind to loopback");
        let addr = socket
            .local_addr()
            .expect("the bound address")
            .as_socket()
            .expect("an IP address");
        RefusedAddr {
            _socket: socket,
            addr,
        }
    }

    /// The address (`127.0.0.1` and the reserved port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The reserved port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Default for RefusedAddr {
    fn default() -> Self {
        RefusedAddr::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connecting_is_refused_and_the_port_stays_taken() {
        let refused = RefusedAddr::new();
        let err = std::net::TcpStream::connect(refused.addr()).expect_err("nothing listens");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
        assert!(
            std::net::TcpListener::bind(refused.addr()).is_err(),
            "no listener can take the port while it is reserved"
        );
    }
}
