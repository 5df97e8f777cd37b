//! What a request sent through a forward proxy (plain HTTP, no tunnel) carries beyond the
//! request poolcurl built: the absolute-form target, and the proxy's own headers, which the
//! pool appends as the request goes out (`Proxy-Connection` among them). `-v` shows them and
//! `%{size_request}` counts them, as curl's do.
//!
//! The credentials sent up front curl mode puts in the request itself, after `Host` where
//! curl has them, so the pool adds none. For a caller that did not, [`Forwarded::added`]
//! shows what the pool adds: `Proxy::forwarded_authorization`, unless the request has a
//! `Proxy-Authorization` of its own.
//!
//! What this does not do: add the proxy's headers (the pool does,
//! `pool_h1::prepare_proxied_request`).

use http::header::PROXY_AUTHORIZATION;
use http::{HeaderMap, HeaderName, HeaderValue};

/// The forward proxy a request went through, when its connection was a forward proxy's.
#[derive(Clone, Copy)]
pub(crate) struct Forwarded<'a> {
    proxy: &'a pool::Proxy,
}

impl<'a> Forwarded<'a> {
    /// `proxy` (the one curl mode routes the request's URL through), if `connection` went
    /// through a proxy without a tunnel.
    pub(crate) fn of(
        connection: Option<&pool::ConnectionHandle>,
        proxy: Option<&'a pool::Proxy>,
    ) -> Option<Forwarded<'a>> {
        connection
            .and_then(|c| c.info().proxy().filter(|route| !route.tunnel))
            .and(proxy)
            .map(|proxy| Forwarded { proxy })
    }

    /// The headers the pool adds after `headers` (the request's own), in its order.
    pub(crate) fn added(&self, headers: &HeaderMap) -> Vec<(HeaderName, HeaderValue)> {
        let authorization = self
            .proxy
            .forwarded_authorization()
            .filter(|_| !headers.contains_key(PROXY_AUTHORIZATION))
            .map(|value| (PROXY_AUTHORIZATION, value));
        authorization
            .into_iter()
            .chain(self.proxy.forwarded_headers().cloned())
            .collect()
    }
}
