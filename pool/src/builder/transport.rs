//! The builder's transport settings: the connector or the default one's resolver, socket
//! options, proxies, `connect_to` rules, a Unix socket and TLS trust. They configure the
//! default connector only; a connector set with [`Builder::connector`] replaces all of them.

use std::net::IpAddr;
use std::time::Duration;

use pool_core::sync::Arc;
use pool_tls::{
    Connect, ConnectTo, HttpConnector, ProxyConfig, Resolve, SystemResolver, TlsConnector,
    TlsOptions,
};

use super::{BuildError, Builder};

impl Builder {
    /// Replaces the default connector (resolve, dial, TLS). Dial, resolver and TLS settings of
    /// this builder then no longer apply.
    pub fn connector(mut self, connector: impl Connect) -> Self {
        self.connector = Some(Arc::new(connector));
        self
    }

    /// The resolver of the default connector (the system resolver unless set).
    pub fn resolver(mut self, resolver: impl Resolve) -> Self {
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// Sets `TCP_NODELAY` on new sockets (on by default).
    pub fn tcp_nodelay(mut self, enabled: bool) -> Self {
        self.dial.nodelay = enabled;
        self
    }

    /// TCP keepalive: probes start after this much silence on a connection (15 s by
    /// default, as reqwest's and Go's; curl's are 60 s). `None` turns keepalive off.
    ///
    /// With the two settings below and [`tcp_user_timeout`](Self::tcp_user_timeout), this is
    /// how a connection whose peer vanished without a word (a host gone, a NAT or load
    /// balancer that dropped the flow) is found: the kernel ends it with `ETIMEDOUT`, an idle
    /// one closes (its close event carries that error) instead of waiting for the next
    /// request to be written into it, and the probes keep a NAT's mapping of a quiet
    /// connection alive. With the defaults a dead idle connection ends about 30 s after it
    /// went quiet on Linux (the user timeout cuts the probes short), within a minute elsewhere.
    /// Whole seconds from 1 to 32767 (Linux's limits; [`build`](Self::build) refuses others).
    pub fn tcp_keepalive(mut self, idle: Option<Duration>) -> Self {
        self.dial.keepalive = idle;
        self
    }

    /// The time between two unanswered keepalive probes (15 s by default; `None`: the OS's,
    /// 75 s on Linux). Only with [`tcp_keepalive`](Self::tcp_keepalive). Whole seconds from 1
    /// to 32767.
    pub fn tcp_keepalive_interval(mut self, interval: Option<Duration>) -> Self {
        self.dial.keepalive_interval = interval;
        self
    }

    /// How many unanswered keepalive probes end a connection (3 by default; `None`: the OS's,
    /// 9 on Linux). Only with [`tcp_keepalive`](Self::tcp_keepalive); where
    /// [`tcp_user_timeout`](Self::tcp_user_timeout) is set, Linux ends the connection once
    /// that much time passed without an answer instead. From 1 to 127.
    pub fn tcp_keepalive_retries(mut self, retries: Option<u32>) -> Self {
        self.dial.keepalive_retries = retries;
        self
    }

    /// `TCP_USER_TIMEOUT`: how long data written on a connection may stay unacknowledged
    /// before the kernel ends it (30 s by default, as reqwest's; `None`: TCP's own
    /// retransmissions, which give up after about 15 minutes). A request written into a
    /// connection whose peer is gone then fails with the transport's `ETIMEDOUT` in that
    /// time, whatever the [`read_timeout`](Self::read_timeout). A connection that
    /// stays busy on a path that loses every segment for that long ends too, and so does an
    /// upload to a live server that stops reading it for that long (Linux counts a closed
    /// receive window against the timeout once data waits for it): for servers that pause
    /// reading longer (a proxy streaming the body to a slow backend), raise it or pass
    /// `None`. Keepalive alone does not cover data in flight: the kernel sends no probe
    /// while data waits for its acknowledgement. Linux applies it to the connect as well: a
    /// connect nothing answers (an address that drops the SYN) fails after it, where the
    /// kernel's SYN retries alone take over two minutes (134 s measured with Linux's default
    /// of 6), with an error that is [`is_connect`](crate::Error::is_connect) and
    /// [`is_timeout`](crate::Error::is_timeout); a shorter
    /// [`connect_timeout`](Self::connect_timeout) still ends it first. At most 2^31 - 1 ms;
    /// zero is the kernel's default. Applied on Linux, Android and Fuchsia; elsewhere it does
    /// nothing.
    pub fn tcp_user_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.dial.user_timeout = timeout;
        self
    }

    /// Binds new sockets to this local address before connecting.
    pub fn local_address(mut self, address: Option<IpAddr>) -> Self {
        self.dial.local_address = address;
        self
    }

    /// Binds new sockets to the first free local port of `ports` (curl's `--local-port`), with
    /// the [`local_address`](Self::local_address) or the unspecified address. A connection
    /// for which no port of the range is free fails with [`Error::is_connect`]; its
    /// [`ConnectError`](crate::ConnectError) says
    /// [`is_local_port`](crate::ConnectError::is_local_port). A short range bounds how many
    /// connections can be open at once. `None` (the default) lets the OS pick.
    ///
    /// [`Error::is_connect`]: crate::Error::is_connect
    pub fn local_ports(mut self, ports: Option<std::ops::RangeInclusive<u16>>) -> Self {
        self.dial.local_ports = ports;
        self
    }

    /// Writes HAProxy's PROXY protocol line (version 1) first on every new TCP connection
    /// (curl's `--haproxy-protocol`), for upstreams that read the client's addresses from it
    /// (nginx's `listen ... proxy_protocol`). It names the connection's own ends, not a
    /// request's client: connections are shared between requests. It goes before TLS with the
    /// origin, inside a `CONNECT` or SOCKS tunnel, and to a forward proxy, as curl sends it;
    /// not over a Unix socket. Off by default.
    pub fn proxy_protocol(mut self, enabled: bool) -> Self {
        self.dial.proxy_protocol = enabled;
        self
    }

    /// The happy-eyeballs delay between connection attempts to successive addresses (RFC 8305,
    /// 250 ms by default). `None` or zero tries one address at a time.
    pub fn happy_eyeballs_delay(mut self, delay: Option<Duration>) -> Self {
        self.dial.happy_eyeballs_delay = delay;
        self
    }

    /// Routes origins through HTTP proxies (see [`ProxyConfig`]; [`ProxyConfig::from_env`]
    /// reads the environment as curl does). Off by default: a library does not follow the
    /// environment unless asked. `https` origins go through a `CONNECT` tunnel with TLS to the
    /// origin inside (ALPN and the one-HTTP/2-connection rule work as directly); `http` origins
    /// are sent to a forward proxy as absolute-form HTTP/1 requests, unless `tunnel_http` (curl's
    /// `--proxytunnel`) or h2c with prior knowledge asks for a tunnel.
    ///
    /// An origin's route is fixed by this configuration, so its connections never mix proxied
    /// and direct ones; `max_connections_per_host` still bounds the origin (the target), not the
    /// proxy, unless [`share_forward_proxy_connections`](Self::share_forward_proxy_connections)
    /// lets forwarded origins share the proxy's connections. Applies to the default connector
    /// only.
    pub fn proxy(mut self, proxy: ProxyConfig, tunnel_http: bool) -> Self {
        self.proxy = (!proxy.is_empty()).then_some((proxy, tunnel_http));
        self
    }

    /// Lets every `http://` origin sent to the same forward proxy share that proxy's
    /// connections, as curl and Go's `Transport` do: a request to one origin reuses an idle
    /// connection that served another. Each partition then keeps one cell per forward route (the
    /// proxy) instead of one per origin, so [`max_connections_per_host`](Self::max_connections_per_host)
    /// bounds the proxy for those origins (as Go's `MaxConnsPerHost` does), and
    /// [`ConnectionPool::stats`](crate::ConnectionPool::stats) of any of them reads the route's
    /// gauges; a connection's [`ConnectionInfo::origin`](crate::ConnectionInfo::origin) is the
    /// origin of the request that opened it, and each request still carries its own target and
    /// `Host`. Tunnels (`https://` origins, `tunnel_http`, h2c with prior knowledge, SOCKS) and
    /// bypassed origins keep a cell per origin. Off by default; applies to [`proxy`](Self::proxy)'s
    /// configuration with the default connector.
    pub fn share_forward_proxy_connections(mut self, share: bool) -> Self {
        self.share_forward = share;
        self
    }

    /// Dials another host and port than an origin's own where `rules` say so (curl's
    /// `--connect-to`; see [`ConnectTo`]): a request keeps its origin for TLS (SNI and the
    /// certificate check), for `Host` / `:authority` and for which connections it may reuse;
    /// only the socket goes elsewhere. Applies to the default connector only.
    pub fn connect_to(mut self, rules: ConnectTo) -> Self {
        self.connect_to = rules;
        self
    }

    /// Dials every origin through the Unix domain socket at `path` instead of the network
    /// (curl's `--unix-socket`), for servers that listen on a path: container engines, local
    /// daemons, sidecars. A request keeps its origin for TLS (SNI and the certificate check),
    /// for `Host` / `:authority` and for which connections it may reuse, and the per-origin
    /// bound still counts by origin; nothing is resolved, and [`proxy`](Self::proxy),
    /// [`connect_to`](Self::connect_to) and the TCP settings (a partition's interface, the
    /// local address and ports, keepalive) no longer apply. Connections report the path in
    /// [`ConnectionInfo::unix_socket`](crate::ConnectionInfo::unix_socket) and have no socket
    /// addresses. A missing or refusing socket fails with
    /// [`Error::is_connect`](crate::Error::is_connect). On Linux, a path that starts with a
    /// NUL byte names a socket in the abstract namespace (curl's `--abstract-unix-socket`).
    /// `None` (the default) uses the network. Applies to the default connector only.
    #[cfg(unix)]
    pub fn unix_socket(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.unix_socket = path;
        self
    }

    /// TLS settings for the connection to an `https://` proxy, in place of this builder's own
    /// (curl's `--proxy-cacert`, `--proxy-capath`, `--proxy-crlfile`, `--proxy-insecure`,
    /// `--proxy-cert` / `--proxy-key`). Unset (the default), a proxy is trusted as origins
    /// are, with this builder's TLS settings. Once set, those settings apply to origins alone
    /// (TLS inside a tunnel included) and these to the proxy alone, as curl keeps `--cacert`
    /// and `-k` off the proxy. [`build`](Self::build) fails when they are unusable (a PEM
    /// bundle without a certificate, say). Applies to the default connector only.
    pub fn proxy_tls(mut self, options: TlsOptions) -> Self {
        self.proxy_tls = Some(options);
        self
    }

    /// Adds trust anchors from a PEM bundle (curl's `--cacert`). Any certificate in it is
    /// trusted, a server's own included: a server presenting exactly that certificate (same
    /// subject and key) is accepted for the names it carries while it is valid, whoever issued
    /// it, as OpenSSL's partial chains (which curl asks for) accept it.
    pub fn add_root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.extra_roots_pem.push(pem.into());
        self
    }

    /// Adds certificate revocation lists from a PEM bundle (curl's `--crlfile`): a server
    /// certificate one of them revokes is rejected ([`Error::is_certificate`], with
    /// [`CertificateCheck::Revoked`](crate::CertificateCheck::Revoked)). Certificates whose
    /// issuer no list covers are not checked for revocation.
    ///
    /// [`Error::is_certificate`]: crate::Error::is_certificate
    pub fn add_crl_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.crls_pem.push(pem.into());
        self
    }

    /// Pins the server's public key (curl's `--pinnedpubkey`): once any pin is added, a TLS
    /// handshake whose server certificate carries none of the pinned keys fails
    /// ([`Error::is_pinned_key_mismatch`](crate::Error::is_pinned_key_mismatch)), whether
    /// certificates are verified or not. Applies to every `https` origin and never to an
    /// `https://` proxy, even one trusted with these settings: a proxy's key is pinned by
    /// [`proxy_tls`](Self::proxy_tls)'s `pinned_public_keys`.
    pub fn pin_public_key(mut self, pin: crate::PublicKeyPin) -> Self {
        self.tls.pinned_public_keys.push(pin);
        self
    }

    /// Whether to trust the platform's root certificates (on by default).
    pub fn native_roots(mut self, enabled: bool) -> Self {
        self.tls.native_roots = enabled;
        self
    }

    /// Presents this client certificate chain and key (both PEM) when a server asks for one.
    pub fn client_identity_pem(
        mut self,
        certificate_chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.tls.client_identity_pem = Some((certificate_chain.into(), key.into()));
        self
    }

    /// The oldest TLS version to offer (default TLS 1.2; curl's `--tlsv1.3` is
    /// `min_tls_version(TlsVersion::Tls13)`). A server that only speaks older versions fails
    /// the handshake ([`Error::is_tls`](crate::Error::is_tls)). [`build`](Self::build) fails
    /// when it is above [`max_tls_version`](Self::max_tls_version).
    pub fn min_tls_version(mut self, version: crate::TlsVersion) -> Self {
        self.tls.min_version = version;
        self
    }

    /// The newest TLS version to offer (default TLS 1.3; curl's `--tls-max 1.2` is
    /// `max_tls_version(TlsVersion::Tls12)`).
    pub fn max_tls_version(mut self, version: crate::TlsVersion) -> Self {
        self.tls.max_version = version;
        self
    }

    /// The cipher suites to offer, most preferred first (curl's `--ciphers` and
    /// `--tls13-ciphers`; see [`TlsOptions::cipher_suites`]). Every suite rustls's `ring`
    /// provider has by default; [`build`](Self::build) fails on a suite it lacks or a list
    /// with no suite for the TLS versions offered.
    pub fn tls_cipher_suites(
        mut self,
        suites: impl IntoIterator<Item = crate::CipherSuite>,
    ) -> Self {
        self.tls.cipher_suites = suites.into_iter().collect();
        self
    }

    /// The key exchange groups to offer, most preferred first (curl's `--curves`; see
    /// [`TlsOptions::key_exchange_groups`]). X25519, P-256 and P-384 by default;
    /// [`build`](Self::build) fails on a group the provider lacks.
    pub fn tls_key_exchange_groups(
        mut self,
        groups: impl IntoIterator<Item = crate::NamedGroup>,
    ) -> Self {
        self.tls.key_exchange_groups = groups.into_iter().collect();
        self
    }

    /// Whether to offer ALPN (on by default). Off (curl's `--no-alpn`), nothing is negotiated:
    /// origins are spoken to in HTTP/1.1, or in HTTP/2 with prior knowledge when the
    /// [`protocol`](Self::protocol) policy requires HTTP/2 (`ProtocolPolicy::Http2Only`), as
    /// curl does with `--no-alpn --http2-prior-knowledge`. The connection's
    /// [`TlsDetails::alpn`](crate::TlsDetails::alpn) is then `None`.
    pub fn tls_alpn(mut self, enabled: bool) -> Self {
        self.tls.alpn = enabled;
        self
    }

    /// Whether new connections resume earlier TLS sessions with the same server (on by
    /// default; curl's `--no-sessionid` turns it off). A resumed handshake is shorter and says
    /// so in [`TlsDetails::resumed`](crate::TlsDetails::resumed).
    pub fn tls_session_resumption(mut self, enabled: bool) -> Self {
        self.tls.session_resumption = enabled;
        self
    }

    /// Require a good stapled status (OCSP) for each server's certificate, as curl's
    /// `--cert-status` does: a handshake without a current response from the certificate's
    /// issuer saying "good" fails ([`Error::is_certificate_status`](crate::Error::is_certificate_status)).
    /// Off by default. Session resumption is off while it is on, so every connection is checked.
    pub fn tls_require_certificate_status(mut self, required: bool) -> Self {
        self.tls.require_certificate_status = required;
        self
    }

    /// Keep the certificates each server presented, readable afterwards from the connection's
    /// [`ConnectionInfo::peer_chain`](crate::ConnectionInfo::peer_chain) (DER, the server's own
    /// first), for showing them as curl's `-v` does. Off by default: a chain costs a few KiB
    /// for as long as its connection lives.
    pub fn tls_keep_peer_certificates(mut self, keep: bool) -> Self {
        self.tls.keep_peer_certificates = keep;
        self
    }

    /// Accepts any server certificate. This disables the protection TLS exists for; it is
    /// curl's `-k` and meant for tests against self-signed servers. Each connection still
    /// reports what verifying its certificate would have found
    /// ([`TlsDetails::certificate`](crate::TlsDetails::certificate)), checked after the
    /// handshake.
    pub fn danger_accept_invalid_certs(mut self, accept: bool) -> Self {
        self.tls.danger_accept_invalid_certs = accept;
        self
    }
}

/// The largest keepalive idle time and probe interval Linux takes (`MAX_TCP_KEEPIDLE`,
/// `MAX_TCP_KEEPINTVL`), in seconds; the smallest is one second.
const MAX_KEEPALIVE_SECS: u64 = 32_767;
/// The most keepalive probes Linux takes (`MAX_TCP_KEEPCNT`).
const MAX_KEEPALIVE_RETRIES: u32 = 127;

impl Builder {
    /// Refuses socket options the kernel would refuse on every dial (each connection would
    /// fail with `EINVAL` as a connect error): keepalive times and intervals are whole seconds
    /// from 1 to 32767, probe counts from 1 to 127, and `TCP_USER_TIMEOUT` at most
    /// 2^31 - 1 ms (Linux's limits; checked on Linux and Android).
    pub(super) fn validate_dial(&self) -> Result<(), BuildError> {
        if !cfg!(any(target_os = "linux", target_os = "android")) {
            return Ok(());
        }
        let seconds = |setting: &'static str, value: Option<Duration>| match value {
            Some(time) if !(1..=MAX_KEEPALIVE_SECS).contains(&time.as_secs()) => Err(
                BuildError::new(setting, format!("{time:?}"), "must be from 1 s to 32767 s"),
            ),
            _ => Ok(()),
        };
        seconds("tcp_keepalive", self.dial.keepalive)?;
        seconds("tcp_keepalive_interval", self.dial.keepalive_interval)?;
        if let Some(retries) = self
            .dial
            .keepalive_retries
            .filter(|n| !(1..=MAX_KEEPALIVE_RETRIES).contains(n))
        {
            return Err(BuildError::new(
                "tcp_keepalive_retries",
                retries,
                "must be from 1 to 127",
            ));
        }
        if let Some(timeout) = self
            .dial
            .user_timeout
            .filter(|t| t.as_millis() > i32::MAX as u128)
        {
            return Err(BuildError::new(
                "tcp_user_timeout",
                format!("{timeout:?}"),
                "must be at most 2147483647 ms",
            ));
        }
        Ok(())
    }

    /// The connector [`build`](Self::build) uses: the one [`connector`](Self::connector) set,
    /// or the default one made from these settings, with its TLS configuration (which the
    /// pool checks at start-up).
    pub(super) fn take_connector(
        &mut self,
    ) -> Result<(Arc<dyn Connect>, Option<TlsConnector>), BuildError> {
        if let Some(connector) = self.connector.take() {
            return Ok((connector, None));
        }
        let unusable =
            |setting: &'static str| move |e: pool_tls::TlsConfigError| BuildError::tls(setting, &e);
        let tls = TlsConnector::new(self.tls.clone()).map_err(unusable("tls"))?;
        let resolver = self
            .resolver
            .take()
            .unwrap_or_else(|| Arc::new(SystemResolver));
        let mut connector = HttpConnector::new(resolver, self.dial.clone(), tls.clone());
        if let Some((proxy, tunnel_http)) = self.proxy.clone() {
            connector = connector.with_proxy(proxy, tunnel_http);
            if let Some(options) = self.proxy_tls.clone() {
                let proxy_tls = TlsConnector::new(options).map_err(unusable("proxy_tls"))?;
                connector = connector.with_proxy_tls(proxy_tls);
            }
        }
        if !self.connect_to.is_empty() {
            connector = connector.with_connect_to(self.connect_to.clone());
        }
        #[cfg(unix)]
        if let Some(path) = self.unix_socket.clone() {
            connector = connector.with_unix_socket(path);
        }
        Ok((Arc::new(connector), Some(tls)))
    }
}
