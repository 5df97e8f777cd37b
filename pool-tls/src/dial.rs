//! TCP dialing: one configured socket per address, raced with happy eyeballs.
//!
//! Each attempt builds its socket with socket2 so options that must be set *before* `connect`
//! (interface binding, local address and port) can be, then hands it to tokio for the
//! non-blocking connect. Addresses are ordered and raced by [`happy_eyeballs`].
//!
//! **A peer that vanishes.** A pooled connection spends most of its life idle, and a peer that
//! goes away without a FIN or a reset (a host powered off, a NAT or load balancer that forgot
//! the flow) leaves it open on this side for ever: nothing is sent, so nothing fails, and the
//! next request written into it waits for TCP's retransmissions to give up (about 15 minutes
//! with Linux's defaults). So every socket is dialed, unless told otherwise, with TCP keepalive
//! after 15 s of silence, a probe every 15 s and at most 3 unanswered (a dead idle connection
//! ends within a minute, and the probes keep a NAT's mapping of a quiet connection alive), and
//! on Linux with `TCP_USER_TIMEOUT` of 30 s (data written and unacknowledged for that long ends
//! the connection: a request sent into a dead one fails in 30 s; Linux then also ends an idle
//! one once 30 s passed without an answer to its probes, so about 30 s after it went quiet
//! rather than 60). These are reqwest's defaults since 0.12.23; Go's dialer probes after 15 s
//! too; curl after 60 s. The kernel then ends the connection with `ETIMEDOUT`, which reaches
//! the pool as the transport's error like any other. hyper-util's connector sets none of them.
//! The user timeout has a cost: Linux also counts a receive window the peer keeps closed
//! against it, so an upload to a live server that stops reading it for 30 s ends too
//! (measured here: 2.5 s with a 2 s timeout against a peer that never reads); keepalive cannot
//! stand in for it, since the kernel sends no probe while data waits to be acknowledged.
//!
//! What this layer does not do: resolve names, apply the connect timeout (the connector wraps
//! resolution, TCP and TLS in one deadline), or speak TLS.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, TcpKeepalive, Type};
use tokio::net::{TcpSocket, TcpStream};

use crate::ConnectError;
use crate::happy_eyeballs;

/// How TCP connections are dialed.
///
/// ```
/// use std::time::Duration;
/// use pool_tls::DialOptions;
///
/// let options = DialOptions { keepalive: Some(Duration::from_secs(60)), ..DialOptions::default() };
/// assert!(options.nodelay);
/// ```
#[derive(Clone, Debug)]
pub struct DialOptions {
    /// Set `TCP_NODELAY`, disabling Nagle's algorithm. Default `true`: HTTP writes whole
    /// messages and waits for answers, the pattern Nagle delays most.
    pub nodelay: bool,
    /// Enable `SO_KEEPALIVE` and start probing after this much idle time. Default 15 s (see
    /// the module docs); `None` leaves keepalive off (the OS default), and then the next two
    /// fields do nothing. Linux takes whole seconds from 1 to 32767 here and in the interval,
    /// and 1 to 127 probes; a value it refuses fails every dial (`pool`'s builder refuses
    /// such values at build).
    pub keepalive: Option<Duration>,
    /// With `keepalive`, the time between two unanswered probes (`TCP_KEEPINTVL`). Default
    /// 15 s; `None` keeps the OS default (75 s on Linux).
    pub keepalive_interval: Option<Duration>,
    /// With `keepalive`, how many unanswered probes end the connection (`TCP_KEEPCNT`).
    /// Default 3; `None` keeps the OS default (9 on Linux). Where `user_timeout` is set, Linux
    /// ends the connection once that much time passed without an answer instead.
    pub keepalive_retries: Option<u32>,
    /// `TCP_USER_TIMEOUT`: how long written data may stay unacknowledged before the kernel
    /// ends the connection (`ETIMEDOUT`). Default 30 s; `None` keeps the OS default (TCP's
    /// retransmissions give up after about 15 minutes). Applied on Linux, Android and Fuchsia
    /// only; elsewhere it does nothing.
    pub user_timeout: Option<Duration>,
    /// Bind the socket to this local address (port chosen by the OS) before connecting. Only
    /// applied to destination addresses of the same family; others are dialed unbound.
    pub local_address: Option<IpAddr>,
    /// Bind the socket to the first free local port of this range (curl's `--local-port`),
    /// with `local_address` or the unspecified address of the destination's family. When none
    /// is free the attempt fails with [`ConnectError::is_local_port`]. Default `None`: the OS
    /// picks a port.
    pub local_ports: Option<RangeInclusive<u16>>,
    /// Happy-eyeballs "connection attempt delay": how long an attempt may run before the next
    /// address is tried in parallel. Default 250 ms (RFC 8305 recommends 250 ms). `None` or
    /// zero tries addresses one at a time, in order.
    pub happy_eyeballs_delay: Option<Duration>,
    /// Write HAProxy's PROXY protocol (version 1) line first on every new connection (curl's
    /// `--haproxy-protocol`), naming the socket's own two ends; for servers that expect it
    /// (nginx's `listen ... proxy_protocol`), which refuse a connection without it. It goes
    /// before TLS with the origin, inside a `CONNECT` or SOCKS tunnel when there is one, and
    /// to a forward proxy, where curl writes it. Default `false`.
    pub proxy_protocol: bool,
}

impl Default for DialOptions {
    fn default() -> DialOptions {
        DialOptions {
            nodelay: true,
            keepalive: Some(KEEPALIVE),
            keepalive_interval: Some(KEEPALIVE),
            keepalive_retries: Some(KEEPALIVE_RETRIES),
            user_timeout: Some(USER_TIMEOUT),
            local_address: None,
            local_ports: None,
            happy_eyeballs_delay: Some(Duration::from_millis(250)),
            proxy_protocol: false,
        }
    }
}

/// The default idle time before the first keepalive probe, and between probes.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// The default number of unanswered keepalive probes that end a connection.
const KEEPALIVE_RETRIES: u32 = 3;
/// The default `TCP_USER_TIMEOUT`.
const USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects to one of `addrs` (happy eyeballs), returning the stream and the address it is
/// connected to.
///
/// `interface` binds every socket to that network interface (`SO_BINDTODEVICE`).
///
/// # Errors
///
/// When every attempt fails, the error of the attempt that failed last, carrying its address.
/// Interface binding failures are [`is_interface`](ConnectError::is_interface).
///
/// # Cancel safety
///
/// Dropping the future closes every socket it opened.
pub(crate) async fn dial(
    addrs: Vec<SocketAddr>,
    options: &DialOptions,
    interface: Option<&str>,
) -> Result<(TcpStream, SocketAddr), ConnectError> {
    let ordered = happy_eyeballs::interleave(addrs);
    happy_eyeballs::race(ordered, options.happy_eyeballs_delay, |addr| async move {
        let stream = connect_one(addr, options, interface).await?;
        Ok((stream, addr))
    })
    .await
}

/// One attempt: build the socket, then connect it without blocking.
async fn connect_one(
    addr: SocketAddr,
    options: &DialOptions,
    interface: Option<&str>,
) -> Result<TcpStream, ConnectError> {
    let socket = build_socket(addr, options, interface)?;
    TcpSocket::from_std_stream(socket.into())
        .connect(addr)
        .await
        .map_err(|e| ConnectError::connect(e).with_addr(addr))
}

/// Creates a non-blocking TCP socket for dialing `addr`, with every option applied that must
/// be in place before `connect`.
///
/// # Errors
///
/// Socket creation or option failures are connect errors carrying `addr`; interface binding
/// failures are also [`is_interface`](ConnectError::is_interface).
pub(crate) fn build_socket(
    addr: SocketAddr,
    options: &DialOptions,
    interface: Option<&str>,
) -> Result<Socket, ConnectError> {
    let failed = |e: io::Error| ConnectError::connect(e).with_addr(addr);

    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(failed)?;
    socket.set_tcp_nodelay(options.nodelay).map_err(failed)?;
    if let Some(idle) = options.keepalive {
        socket
            .set_tcp_keepalive(&keepalive(idle, options))
            .map_err(failed)?;
    }
    set_user_timeout(&socket, options.user_timeout).map_err(failed)?;
    if let Some(name) = interface {
        bind_interface(&socket, name).map_err(|e| e.with_addr(addr))?;
    }
    let local = options
        .local_address
        .filter(|ip| ip.is_ipv4() == addr.is_ipv4());
    match (&options.local_ports, local) {
        (Some(ports), _) => {
            let ip = local.unwrap_or(match addr {
                SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            });
            bind_port_in(&socket, ip, ports).map_err(|e| e.with_addr(addr))?;
        }
        (None, Some(ip)) => socket
            .bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| ConnectError::local_address(ip, e).with_addr(addr))?,
        (None, None) => {}
    }
    // tokio requires a non-blocking socket; connect then completes through the reactor.
    socket.set_nonblocking(true).map_err(failed)?;
    Ok(socket)
}

/// The keepalive parameters for a socket that probes after `idle`, with the options' interval
/// and count where the platform takes them.
#[cfg(any(
    target_os = "android",
    target_os = "fuchsia",
    target_os = "linux",
    target_os = "macos",
    target_os = "freebsd"
))]
fn keepalive(idle: Duration, options: &DialOptions) -> TcpKeepalive {
    let mut params = TcpKeepalive::new().with_time(idle);
    if let Some(interval) = options.keepalive_interval {
        params = params.with_interval(interval);
    }
    if let Some(retries) = options.keepalive_retries {
        params = params.with_retries(retries);
    }
    params
}

/// The keepalive parameters for a socket that probes after `idle`: the OS's own interval and
/// count.
#[cfg(not(any(
    target_os = "android",
    target_os = "fuchsia",
    target_os = "linux",
    target_os = "macos",
    target_os = "freebsd"
)))]
fn keepalive(idle: Duration, _options: &DialOptions) -> TcpKeepalive {
    TcpKeepalive::new().with_time(idle)
}

/// Sets `TCP_USER_TIMEOUT` where the platform has it.
#[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
fn set_user_timeout(socket: &Socket, timeout: Option<Duration>) -> io::Result<()> {
    match timeout {
        Some(timeout) => socket.set_tcp_user_timeout(Some(timeout)),
        None => Ok(()),
    }
}

/// `TCP_USER_TIMEOUT` does not exist here: nothing to set.
#[cfg(not(any(target_os = "android", target_os = "fuchsia", target_os = "linux")))]
fn set_user_timeout(_socket: &Socket, _timeout: Option<Duration>) -> io::Result<()> {
    Ok(())
}

/// Binds `socket` to `ip` and the first port of `ports` that is free, in order, as curl's
/// `--local-port` does.
fn bind_port_in(
    socket: &Socket,
    ip: IpAddr,
    ports: &RangeInclusive<u16>,
) -> Result<(), ConnectError> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "an empty port range");
    for port in ports.clone() {
        match socket.bind(&SocketAddr::new(ip, port).into()) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(ConnectError::local_port(ports, last))
}

/// Binds `socket` to the interface called `name` (`SO_BINDTODEVICE`).
#[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
fn bind_interface(socket: &Socket, name: &str) -> Result<(), ConnectError> {
    // An empty name would silently *remove* the binding; refuse it instead.
    if name.is_empty() {
        let empty = io::Error::new(io::ErrorKind::InvalidInput, "empty interface name");
        return Err(ConnectError::interface(name, empty));
    }
    socket
        .bind_device(Some(name.as_bytes()))
        .map_err(|e| ConnectError::interface(name, e))
}

/// Binding by interface name is unsupported here; fail rather than silently use any route.
#[cfg(not(any(target_os = "android", target_os = "fuchsia", target_os = "linux")))]
fn bind_interface(_socket: &Socket, name: &str) -> Result<(), ConnectError> {
    Err(ConnectError::interface_unsupported(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    use socket2::SockRef;
    use tokio::net::TcpListener;

    fn loopback() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    /// A loopback address that refuses connections while the returned socket lives: bound but
    /// not listening, so no test running in parallel can be given its port (the port of a
    /// dropped listener is free for the next bind).
    fn refusing() -> (TcpSocket, SocketAddr) {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(loopback()).unwrap();
        let addr = socket.local_addr().unwrap();
        (socket, addr)
    }

    #[test]
    fn socket_builder_applies_nodelay_and_keepalive() {
        let options = DialOptions {
            keepalive: Some(Duration::from_secs(30)),
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        assert!(socket.tcp_nodelay().unwrap());
        assert!(socket.keepalive().unwrap());
        #[cfg(any(target_os = "android", target_os = "linux"))]
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(30)
        );

        let options = DialOptions {
            nodelay: false,
            keepalive: None,
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        assert!(!socket.tcp_nodelay().unwrap());
        assert!(!socket.keepalive().unwrap());
    }

    /// A dialed socket finds a vanished peer by default: keepalive after 15 s, every 15 s, 3
    /// probes, and 30 s for unacknowledged data.
    #[cfg(any(target_os = "android", target_os = "linux"))]
    #[test]
    fn sockets_probe_a_silent_peer_by_default() {
        let socket = build_socket(loopback(), &DialOptions::default(), None).unwrap();
        assert!(socket.keepalive().unwrap());
        assert_eq!(socket.tcp_keepalive_time().unwrap(), KEEPALIVE);
        assert_eq!(socket.tcp_keepalive_interval().unwrap(), KEEPALIVE);
        assert_eq!(socket.tcp_keepalive_retries().unwrap(), KEEPALIVE_RETRIES);
        assert_eq!(socket.tcp_user_timeout().unwrap(), Some(USER_TIMEOUT));
        assert_eq!(
            (KEEPALIVE, KEEPALIVE_RETRIES, USER_TIMEOUT),
            (Duration::from_secs(15), 3, Duration::from_secs(30))
        );
    }

    /// Each of the four can be set, and `None` leaves the OS's own value in place.
    #[cfg(any(target_os = "android", target_os = "linux"))]
    #[test]
    fn keepalive_parameters_and_user_timeout_follow_the_options() {
        let options = DialOptions {
            keepalive: Some(Duration::from_secs(40)),
            keepalive_interval: Some(Duration::from_secs(7)),
            keepalive_retries: Some(5),
            user_timeout: Some(Duration::from_millis(2500)),
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(40)
        );
        assert_eq!(
            socket.tcp_keepalive_interval().unwrap(),
            Duration::from_secs(7)
        );
        assert_eq!(socket.tcp_keepalive_retries().unwrap(), 5);
        assert_eq!(
            socket.tcp_user_timeout().unwrap(),
            Some(Duration::from_millis(2500))
        );

        let untouched = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        let options = DialOptions {
            keepalive_interval: None,
            keepalive_retries: None,
            user_timeout: None,
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        assert_eq!(socket.tcp_keepalive_time().unwrap(), KEEPALIVE);
        assert_eq!(
            socket.tcp_keepalive_interval().unwrap(),
            untouched.tcp_keepalive_interval().unwrap()
        );
        assert_eq!(
            socket.tcp_keepalive_retries().unwrap(),
            untouched.tcp_keepalive_retries().unwrap()
        );
        assert_eq!(socket.tcp_user_timeout().unwrap(), None);
    }

    #[test]
    fn socket_builder_binds_local_address_of_the_same_family_only() {
        let options = DialOptions {
            local_address: Some("127.0.0.1".parse().unwrap()),
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        let local = socket.local_addr().unwrap().as_socket().unwrap();
        assert_eq!(local.ip(), options.local_address.unwrap());

        // An IPv6 destination ignores the IPv4 local address and stays unbound.
        if let Ok(socket) = build_socket("[::1]:80".parse().unwrap(), &options, None) {
            let local = socket.local_addr().unwrap().as_socket().unwrap();
            assert!(local.ip().is_unspecified());
        }
    }

    #[test]
    fn a_local_address_this_host_does_not_have_is_a_local_address_error() {
        // TEST-NET-1 (RFC 5737): no host is given it, so the bind fails (EADDRNOTAVAIL).
        let options = DialOptions {
            local_address: Some("192.0.2.1".parse().unwrap()),
            ..Default::default()
        };
        let err = build_socket(loopback(), &options, None).unwrap_err();
        assert!(err.is_local_address() && err.is_connect(), "{err:#}");
        assert!(!err.is_local_port() && !err.is_interface());
        assert_eq!(err.to_string(), "binding to local address 192.0.2.1 failed");
    }

    #[test]
    fn socket_builder_binds_a_port_of_the_range_or_says_none_was_free() {
        let options = DialOptions {
            local_address: Some("127.0.0.1".parse().unwrap()),
            local_ports: Some(40000..=40999),
            ..Default::default()
        };
        let socket = build_socket(loopback(), &options, None).unwrap();
        let local = socket.local_addr().unwrap().as_socket().unwrap();
        assert!((40000..=40999).contains(&local.port()), "{local}");

        // A range whose one port this test holds: nothing to bind.
        let (_held, taken) = refusing();
        let options = DialOptions {
            local_ports: Some(taken.port()..=taken.port()),
            ..options
        };
        let err = build_socket(loopback(), &options, None).unwrap_err();
        assert!(err.is_local_port() && err.is_connect(), "{err:#}");
        let message = format!("binding to local port {} failed", taken.port());
        assert_eq!(err.to_string(), message);
    }

    #[tokio::test]
    async fn dial_to_loopback_listener_connects_with_nodelay() {
        let listener = TcpListener::bind(loopback()).await.unwrap();
        let target = listener.local_addr().unwrap();

        let (stream, remote) = dial(vec![target], &DialOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(remote, target);
        assert_eq!(stream.peer_addr().unwrap(), target);
        assert!(stream.nodelay().unwrap());
        assert!(SockRef::from(&stream).tcp_nodelay().unwrap());
        listener.accept().await.unwrap();
    }

    #[tokio::test]
    async fn refused_connection_is_a_connect_error_with_the_address() {
        let (_reserved, target) = refusing();

        let err = dial(vec![target], &DialOptions::default(), None)
            .await
            .unwrap_err();
        assert!(err.is_connect(), "{err}");
        assert!(!err.is_interface());
        assert_eq!(err.addr(), Some(target));
        let source = std::error::Error::source(&err).unwrap();
        let io = source.downcast_ref::<io::Error>().unwrap();
        assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(err.to_string(), format!("failed to connect to {target}"));
        assert!(format!("{err:#}").starts_with(&format!("failed to connect to {target}: ")));
    }

    #[tokio::test]
    async fn second_address_is_used_when_the_first_refuses() {
        let (_reserved, refused) = refusing();
        let listener = TcpListener::bind(loopback()).await.unwrap();
        let open = listener.local_addr().unwrap();

        let (_stream, remote) = dial(vec![refused, open], &DialOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(remote, open);
    }

    #[tokio::test]
    async fn nonexistent_interface_is_an_interface_and_connect_error() {
        let listener = TcpListener::bind(loopback()).await.unwrap();
        let target = listener.local_addr().unwrap();

        let err = dial(vec![target], &DialOptions::default(), Some("pool-none0"))
            .await
            .unwrap_err();
        assert!(err.is_interface(), "{err}");
        assert!(err.is_connect(), "{err}");
        assert_eq!(err.addr(), Some(target));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        assert!(
            format!("{err:#}").starts_with("binding to interface pool-none0 failed: "),
            "{err:#}"
        );
    }

    /// Binding to the loopback interface either works, or (on kernels that still require
    /// `CAP_NET_RAW` for `SO_BINDTODEVICE`) fails with EPERM, which must surface as an interface
    /// error. Both outcomes are acceptable; anything else is not.
    #[cfg(any(target_os = "android", target_os = "linux"))]
    #[tokio::test]
    async fn binding_to_loopback_interface_works_or_is_an_interface_error() {
        let listener = TcpListener::bind(loopback()).await.unwrap();
        let target = listener.local_addr().unwrap();

        match dial(vec![target], &DialOptions::default(), Some("lo")).await {
            Ok((stream, remote)) => {
                assert_eq!(remote, target);
                let bound = SockRef::from(&stream).device().unwrap();
                assert_eq!(bound.as_deref(), Some(&b"lo"[..]));
            }
            Err(err) => {
                assert!(err.is_interface() && err.is_connect(), "{err}");
                let source = std::error::Error::source(&err).unwrap();
                let io = source.downcast_ref::<io::Error>().unwrap();
                assert_eq!(io.kind(), io::ErrorKind::PermissionDenied, "{err}");
            }
        }
    }

    #[test]
    fn empty_interface_name_is_refused() {
        let err = build_socket(loopback(), &DialOptions::default(), Some("")).unwrap_err();
        assert!(err.is_interface() && err.is_connect());
    }
}
