//! One forward proxy's connections shared by every origin sent to it
//! ([`Builder::share_forward_proxy_connections`](crate::Builder::share_forward_proxy_connections)).
//!
//! A request for an `http://` origin that goes to an HTTP forward proxy (not through a tunnel)
//! names its origin in its own absolute-form target and `Host`; the connection itself only
//! reaches the proxy. curl and Go's `Transport` therefore reuse one proxy connection for
//! requests to any such origin (Go keys the connection by the proxy alone for them). By default
//! the pool keeps a cell per origin, as for every other route, so that `max_connections_per_host`,
//! the gauges and the events stay per origin. With sharing on, each partition keeps one cell per
//! forward *route* (the proxy), which every origin forwarded to that proxy maps to: its
//! connections, its idle set, its waiters and, for a bounded pool, its bound, as Go's
//! `MaxConnsPerHost` bounds the proxy for them.
//!
//! A route's cell is created for the first origin a partition sends to it: that origin is what
//! the connector is asked to reach (the proxy, by the same configuration), names the cell's
//! connections ([`ConnectionInfo::origin`](crate::ConnectionInfo::origin)), its failed
//! establishments and its metrics labels; [`ConnectionPool::stats`](crate::ConnectionPool::stats)
//! of any of the route's origins reads the route's gauges.
//!
//! What this does not do: share tunnels (`https://` origins, `tunnel_http`, h2c with prior
//! knowledge, SOCKS), whose connections carry one origin's bytes end to end; or follow a custom
//! connector's routing (only [`Builder::proxy`](crate::Builder::proxy)'s configuration is read).

use pool_core::OriginKey;
use pool_core::cell::EstablishMode;
use pool_core::origin::Scheme;
use pool_tls::{ProxyConfig, ProxyScheme};

/// The pool's proxy configuration, read to find which origins share a forward route.
#[derive(Debug)]
pub(crate) struct ForwardSharing {
    proxies: ProxyConfig,
    tunnel_http: bool,
}

impl ForwardSharing {
    pub(crate) fn new(proxies: ProxyConfig, tunnel_http: bool) -> ForwardSharing {
        ForwardSharing {
            proxies,
            tunnel_http,
        }
    }

    /// The key of the forward route `origin`'s requests take when its cell would establish in
    /// `mode` (the proxy, as an origin of its own scheme), or `None` when they go direct or
    /// through a tunnel. Mirrors the default connector's choice: a cleartext origin, an HTTP or
    /// HTTPS proxy the bypass list does not skip, HTTP/1 (h2c with prior knowledge tunnels), and
    /// no `tunnel_http`.
    pub(crate) fn route(&self, origin: &OriginKey, mode: EstablishMode) -> Option<OriginKey> {
        if origin.is_tls() || self.tunnel_http || mode != EstablishMode::Http1 {
            return None;
        }
        let proxy = self.proxies.route(false, origin.host(), origin.port())?;
        let scheme = match proxy.scheme() {
            ProxyScheme::Http => Scheme::Http,
            ProxyScheme::Https => Scheme::Https,
            _ => return None,
        };
        OriginKey::new(scheme, proxy.host(), proxy.port()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pool_tls::{NoProxy, Proxy};

    fn origin(text: &str) -> OriginKey {
        OriginKey::from_uri(&text.parse().unwrap()).unwrap()
    }

    #[test]
    fn only_origins_forwarded_to_an_http_proxy_share_its_route() {
        let config = ProxyConfig::new()
            .http(Proxy::parse("http://proxy.test:3128").unwrap())
            .https(Proxy::parse("http://proxy.test:3128").unwrap())
            .no_proxy(NoProxy::parse("direct.test"));
        let sharing = ForwardSharing::new(config.clone(), false);
        let route = Some(origin("http://proxy.test:3128"));
        let http1 = EstablishMode::Http1;
        assert_eq!(sharing.route(&origin("http://a.test"), http1), route);
        assert_eq!(sharing.route(&origin("http://b.test:8080"), http1), route);
        assert_eq!(sharing.route(&origin("http://direct.test"), http1), None);
        assert_eq!(
            sharing.route(&origin("https://a.test"), EstablishMode::Auto),
            None
        );
        assert_eq!(
            sharing.route(&origin("http://a.test"), EstablishMode::Http2),
            None
        );
        let tunnels = ForwardSharing::new(config, true);
        assert_eq!(tunnels.route(&origin("http://a.test"), http1), None);

        let tls_proxy = ProxyConfig::new().all(Proxy::parse("https://p.test:8443").unwrap());
        let sharing = ForwardSharing::new(tls_proxy, false);
        assert_eq!(
            sharing.route(&origin("http://a.test"), http1),
            Some(origin("https://p.test:8443"))
        );
        let socks = ProxyConfig::new().all(Proxy::parse("socks5://p.test:1080").unwrap());
        let sharing = ForwardSharing::new(socks, false);
        assert_eq!(sharing.route(&origin("http://a.test"), http1), None);
    }
}
