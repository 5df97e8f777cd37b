//! The connector's way through a proxy: dial the proxy (TLS to an `https://` one), then a
//! `CONNECT` or SOCKS tunnel with the origin's TLS inside it, or the proxy connection as it is
//! for a forward proxy.
//!
//! A tunnel's challenge ([`AuthScheme::Digest`](crate::AuthScheme::Digest) or `Any`) is
//! answered on the proxy's connection when it stays open (see
//! [`open_tunnel`](crate::tunnel::open_tunnel)); when the proxy closes it, the whole way is
//! taken a second time, from the dial, with the answer. Both attempts are inside the one
//! connect timeout.

use std::net::{IpAddr, SocketAddr};

use http::HeaderValue;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::step::{ConnectStep, begin};
use super::{Inner, authority, handshake, tls_config};
use crate::socks::{self, SocksTarget};
use crate::tunnel::{Opened, ProxyUse, open_tunnel};
use crate::{AlpnOffer, ConnectError, ConnectTarget, Connected, Io, Proxy, ProxyScheme};

/// A challenge a proxy made on a connection it then closed: its `407` head and the answer the
/// next connection's `CONNECT` carries.
struct Challenge {
    head: Vec<u8>,
    authorization: HeaderValue,
}

impl Inner {
    /// Through `proxy`: dial it (TLS to an `https://` proxy), then a `CONNECT` tunnel and the
    /// origin's TLS inside it, or (forward proxy) the proxy connection as it is; once more with
    /// the answer when the proxy challenged the tunnel's `CONNECT` and closed.
    pub(super) async fn establish_via(
        &self,
        proxy: &Proxy,
        target: &ConnectTarget,
    ) -> Result<(Io, Connected), ConnectError> {
        let start = Instant::now();
        let challenge = match self.via_once(proxy, target, start, None).await? {
            Ok(established) => return Ok(established),
            Err(challenge) => challenge,
        };
        // `open_tunnel` asks for another connection only when it sent no answer yet.
        let head = challenge.head.clone();
        self.via_once(proxy, target, start, Some(challenge))
            .await
            .map_err(|e| e.after_challenge(&head))?
            .map_err(|_| ConnectError::tunnel_refused(407, &head).via_proxy(proxy_label(proxy)))
    }

    /// One way through `proxy`, its `CONNECT` answering `answered` when set; `Err` with the
    /// challenge when the proxy challenged and closed.
    async fn via_once(
        &self,
        proxy: &Proxy,
        target: &ConnectTarget,
        start: Instant,
        answered: Option<Challenge>,
    ) -> Result<Result<(Io, Connected), Challenge>, ConnectError> {
        let origin = &target.origin;
        let label = proxy_label(proxy);
        let proxy_ip = proxy.host().parse::<IpAddr>().ok();
        let (tcp, mut connected) = self
            .dial_host(proxy.host(), proxy_ip, proxy.port(), target, start)
            .await
            .map_err(|e| e.via_proxy(&label))?;
        let tunnel = origin.is_tls()
            || self.tunnel_http
            || target.alpn == AlpnOffer::Http2Only
            || proxy.scheme().is_socks();
        connected.proxy = Some(ProxyUse {
            proxy: label.clone(),
            tunnel,
            authorization: (!tunnel).then(|| proxy.forwarded_authorization()).flatten(),
            headers: if tunnel {
                Vec::new()
            } else {
                proxy.forwarded_headers().cloned().collect()
            },
            connect_response: None,
            socks_target: None,
            connect_challenge: None,
            connect_authorization: None,
            connect_redialed: false,
        });
        // A tunnel goes where `--connect-to` says; the origin's TLS inside it does not change.
        let dial_target = self.connect_to.dial_target(origin.host(), origin.port());
        let authority = dial_target.to_string();
        let remote_addr = connected.remote_addr;
        let in_tunnel = |e: ConnectError| e.via_proxy(&label).with_addr(remote_addr);
        match proxy.scheme() {
            scheme @ (ProxyScheme::Socks5
            | ProxyScheme::Socks5h
            | ProxyScheme::Socks4
            | ProxyScheme::Socks4a) => {
                let version = match scheme {
                    ProxyScheme::Socks4 | ProxyScheme::Socks4a => socks::Version::V4,
                    _ => socks::Version::V5,
                };
                let (host, port) = (dial_target.host(), dial_target.port());
                let socks_target = match dial_target.ip() {
                    // SOCKS4a sends even a literal as a name, as curl does.
                    _ if scheme == ProxyScheme::Socks4a => SocksTarget::Name(host, port),
                    Some(ip) => SocksTarget::Addr(SocketAddr::new(ip, port)),
                    None if scheme.resolves_names() => SocksTarget::Name(host, port),
                    None => self
                        .socks_address(host, port, version)
                        .await
                        .map_err(|e| e.via_proxy(&label))?,
                };
                begin(ConnectStep::Socks);
                let tcp = socks::open(tcp, version, &socks_target, proxy.credentials())
                    .await
                    .map_err(in_tunnel)?;
                if let Some(route) = connected.proxy.as_mut() {
                    route.socks_target = Some(socks_target.shown());
                }
                Ok(Ok(self
                    .inside_tunnel(tcp, connected, target, start)
                    .await?))
            }
            ProxyScheme::Http => {
                let mut tcp = tcp;
                if !tunnel {
                    self.proxy_protocol_line(&mut tcp, &connected).await?;
                    return Ok(Ok((Io::tcp(tcp), connected)));
                }
                begin(ConnectStep::Tunnel);
                let opened = open_tunnel(&mut tcp, proxy, &authority, answer_of(&answered))
                    .await
                    .map_err(in_tunnel)?;
                if let Err(challenge) = tunnel_opened(&mut connected, opened, answered) {
                    return Ok(Err(challenge));
                }
                Ok(Ok(self
                    .inside_tunnel(tcp, connected, target, start)
                    .await?))
            }
            ProxyScheme::Https => {
                let proxy_tls = self.proxy_tls.as_ref().unwrap_or(&self.tls);
                begin(ConnectStep::Tls);
                let config = tls_config(proxy_tls, AlpnOffer::Http1Only, proxy.host())
                    .await
                    .map_err(|e| e.via_proxy(&label))?;
                let mut to_proxy = handshake(config, tcp, proxy.host(), proxy_ip)
                    .await
                    .map_err(in_tunnel)?;
                // The origins' pins are theirs: only the proxy's own settings pin its key.
                if let Some(own) = &self.proxy_tls {
                    own.check_pins(to_proxy.get_ref().1)
                        .map_err(|e| in_tunnel(e.with_target(proxy.host())))?;
                }
                if !tunnel {
                    self.proxy_protocol_line(&mut to_proxy, &connected).await?;
                    return Ok(Ok((Io::tls(to_proxy), connected)));
                }
                begin(ConnectStep::Tunnel);
                let opened = open_tunnel(&mut to_proxy, proxy, &authority, answer_of(&answered))
                    .await
                    .map_err(in_tunnel)?;
                if let Err(challenge) = tunnel_opened(&mut connected, opened, answered) {
                    return Ok(Err(challenge));
                }
                self.proxy_protocol_line(&mut to_proxy, &connected).await?;
                if !origin.is_tls() {
                    return Ok(Ok((Io::tls(to_proxy), connected)));
                }
                let stream = self
                    .origin_tls(to_proxy, target, &mut connected, start)
                    .await?;
                Ok(Ok((Io::custom(stream), connected)))
            }
        }
    }

    /// The origin's side of a tunnel over a plain socket (`CONNECT` or SOCKS5): TLS to the
    /// origin inside it when the origin is `https`, else the socket as it is.
    async fn inside_tunnel(
        &self,
        mut tcp: TcpStream,
        mut connected: Connected,
        target: &ConnectTarget,
        start: Instant,
    ) -> Result<(Io, Connected), ConnectError> {
        self.proxy_protocol_line(&mut tcp, &connected).await?;
        if !target.origin.is_tls() {
            return Ok((Io::tcp(tcp), connected));
        }
        let stream = self.origin_tls(tcp, target, &mut connected, start).await?;
        Ok((Io::tls(stream), connected))
    }

    /// The address a SOCKS proxy that is sent addresses is asked for: the first of the
    /// origin's, the first IPv4 one for SOCKS4 (as curl picks them). A failure is the
    /// handshake's ([`ConnectError::socks_resolve`]).
    async fn socks_address(
        &self,
        host: &str,
        port: u16,
        version: socks::Version,
    ) -> Result<SocksTarget<'static>, ConnectError> {
        begin(ConnectStep::Resolve);
        let addrs = self
            .resolve(host, port)
            .await
            .map_err(|e| ConnectError::socks_resolve(e, host))?;
        let first = match version {
            socks::Version::V5 => addrs.first(),
            socks::Version::V4 => addrs.iter().find(|addr| addr.is_ipv4()).or(addrs.first()),
        };
        first.map(|addr| SocksTarget::Addr(*addr)).ok_or_else(|| {
            ConnectError::socks_resolve(ConnectError::resolve("no address").with_target(host), host)
        })
    }
}

/// The `Proxy-Authorization` answering a challenge an earlier connection drew.
fn answer_of(answered: &Option<Challenge>) -> Option<HeaderValue> {
    answered.as_ref().map(|c| c.authorization.clone())
}

/// Records the proxy's answer to the tunnel's `CONNECT` and the challenge answered on the way
/// (on this connection, or `answered` on an earlier one); `Err` with the challenge when the
/// proxy closed this connection after it.
fn tunnel_opened(
    connected: &mut Connected,
    opened: Opened,
    answered: Option<Challenge>,
) -> Result<(), Challenge> {
    let redialed = answered.is_some();
    let (answer, challenge) = match opened {
        Opened::Tunnel { answer, challenge } => (
            answer,
            challenge.or(answered.map(|c| (c.head, c.authorization))),
        ),
        Opened::Redial {
            challenge,
            authorization,
        } => {
            return Err(Challenge {
                head: challenge,
                authorization,
            });
        }
    };
    if let Some(route) = connected.proxy.as_mut() {
        route.connect_response = Some(String::from_utf8_lossy(&answer).into_owned());
        route.connect_redialed = redialed;
        if let Some((head, authorization)) = challenge {
            route.connect_challenge = Some(String::from_utf8_lossy(&head).into_owned());
            route.connect_authorization = Some(authorization);
        }
    }
    Ok(())
}

/// The proxy as `scheme://host:port`, without credentials.
pub(super) fn proxy_label(proxy: &Proxy) -> String {
    let scheme = proxy.scheme().as_str();
    format!("{scheme}://{}", authority(proxy.host(), proxy.port()))
}
