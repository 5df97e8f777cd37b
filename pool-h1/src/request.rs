//! Shaping a request for an HTTP/1.1 connection.

use http::header::{HOST, PROXY_AUTHORIZATION};
use http::uri::{PathAndQuery, Uri};
use http::{HeaderName, HeaderValue, Request};
use pool_core::{OmitHost, OriginKey, RequestTarget};

/// Prepares `request` for the wire: sets `Host` from the origin unless the caller set one (or
/// marked the request [`OmitHost`]), and
/// replaces the absolute URI with its origin form (`/path?query`), which is what an origin
/// server expects on HTTP/1.1 (RFC 9112 section 3.2.1), or with the request's
/// [`RequestTarget`] when it carries one.
///
/// `host` is the origin's `Host` value, computed once per origin so this costs no allocation
/// beyond the header map's own.
pub fn prepare_request<B>(request: &mut Request<B>, host: &HeaderValue) {
    add_host(request, host);
    if override_target(request) {
        return;
    }
    // Taken, not cloned: the absolute URI is not needed again (a request handed back unsent
    // gets it back from `restore_absolute_uri`).
    let path = std::mem::take(request.uri_mut())
        .into_parts()
        .path_and_query
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let mut target = Uri::from(path);
    if target.path().is_empty() {
        // `http://host#frag` leaves an empty path, which reads as `/` while the authority is
        // there but as nothing without it, and hyper then wrote an empty request target
        // (`GET  HTTP/1.1`). An empty path goes out as `/` (RFC 9112 section 3.2.1); a path
        // with only a query displays with its `/` already.
        target = Uri::from(PathAndQuery::from_static("/"));
    }
    *request.uri_mut() = target;
}

/// A connection to a forward proxy: requests keep their absolute-form target (the proxy needs
/// it to know where to go) and carry the proxy's credentials and headers.
#[derive(Clone, Debug, Default)]
pub struct ForwardProxy {
    /// The `Proxy-Authorization` value, if the proxy needs one. The connector gives the
    /// proxy's `forwarded_authorization`, which is none when `headers` carry their own.
    pub authorization: Option<HeaderValue>,
    /// Headers for the proxy, appended to every request after its own.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Shapes a request for a forward proxy: `Host` as for any HTTP/1.1 request, the absolute-form
/// target kept (or the request's [`RequestTarget`], sent to the proxy as it is, as curl
/// does), `Proxy-Authorization` unless the caller set one, and the
/// proxy's headers appended (a request header of the same name stays; both go, as curl sends
/// both lists).
pub fn prepare_proxied_request<B>(
    request: &mut Request<B>,
    host: &HeaderValue,
    proxy: &ForwardProxy,
) {
    add_host(request, host);
    override_target(request);
    if let Some(value) = &proxy.authorization {
        if !request.headers().contains_key(PROXY_AUTHORIZATION) {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, value.clone());
        }
    }
    for (name, value) in &proxy.headers {
        request.headers_mut().append(name.clone(), value.clone());
    }
}

/// Inserts the origin's `Host` into a request that has none, unless it is marked [`OmitHost`].
#[inline]
fn add_host<B>(request: &mut Request<B>, host: &HeaderValue) {
    // The mark is looked for only when `Host` is missing: one emptiness check of the
    // extensions for a request without any.
    if !request.headers().contains_key(HOST) && request.extensions().get::<OmitHost>().is_none() {
        request.headers_mut().insert(HOST, host.clone());
    }
}

/// Sets the request's URI to its [`RequestTarget`], if it carries one; whether it did.
fn override_target<B>(request: &mut Request<B>) -> bool {
    // One emptiness check for a request without extensions.
    let Some(target) = request.extensions().get::<RequestTarget>() else {
        return false;
    };
    *request.uri_mut() = Uri::from(target.path_and_query().clone());
    true
}

/// Undoes [`prepare_request`]'s URI change for a request hyper handed back unsent, so it can be
/// routed again: `origin` + the request's origin-form target (`origin/` for a request with a
/// [`RequestTarget`], which the next attempt sends again).
pub fn restore_absolute_uri<B>(request: &mut Request<B>, origin: &OriginKey) {
    if request.uri().scheme().is_some() {
        // Still absolute (a forward proxy's request).
        return;
    }
    let overridden = request.extensions().get::<RequestTarget>().is_some();
    let path = request
        .uri()
        .path_and_query()
        .map(PathAndQuery::as_str)
        .filter(|_| !overridden)
        .unwrap_or("/");
    let absolute = format!("{origin}{path}");
    if let Ok(uri) = absolute.parse() {
        *request.uri_mut() = uri;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_form_and_host_are_set() {
        let mut req = Request::get("http://example.com:8080/a/b?c=d")
            .body(())
            .unwrap();
        prepare_request(&mut req, &HeaderValue::from_static("example.com:8080"));
        assert_eq!(req.uri().to_string(), "/a/b?c=d");
        assert_eq!(req.headers()[HOST], "example.com:8080");
    }

    #[test]
    fn caller_host_is_kept_and_empty_path_becomes_slash() {
        let mut req = Request::get("http://example.com")
            .header(HOST, "virtual.test")
            .body(())
            .unwrap();
        prepare_request(&mut req, &HeaderValue::from_static("example.com"));
        assert_eq!(req.uri().to_string(), "/");
        assert_eq!(req.headers()[HOST], "virtual.test");
    }

    #[test]
    fn a_request_marked_omit_host_goes_without_one_and_a_callers_host_stays() {
        let host = HeaderValue::from_static("example.com");
        let mut req = Request::get("http://example.com/a").body(()).unwrap();
        req.extensions_mut().insert(OmitHost);
        prepare_request(&mut req, &host);
        assert_eq!(req.uri().to_string(), "/a");
        assert!(!req.headers().contains_key(HOST));
        let mut proxied = Request::get("http://example.com/a").body(()).unwrap();
        proxied.extensions_mut().insert(OmitHost);
        prepare_proxied_request(&mut proxied, &host, &ForwardProxy::default());
        assert!(!proxied.headers().contains_key(HOST));
        let mut given = Request::get("http://example.com/a")
            .header(HOST, "virtual.test")
            .body(())
            .unwrap();
        given.extensions_mut().insert(OmitHost);
        prepare_request(&mut given, &host);
        assert_eq!(given.headers()[HOST], "virtual.test");
    }

    /// RFC 9112 section 3.2.1: an empty path is sent as `/`, also when the URI has only a query
    /// or a fragment after its authority.
    #[test]
    fn an_empty_path_goes_out_as_slash() {
        for (uri, target) in [
            ("http://example.com#frag", "/"),
            ("http://example.com?q=1", "/?q=1"),
            ("http://example.com?q=1#frag", "/?q=1"),
        ] {
            let mut req = Request::get(uri).body(()).unwrap();
            prepare_request(&mut req, &HeaderValue::from_static("example.com"));
            assert_eq!(req.uri().to_string(), target, "{uri}");
        }
    }

    #[test]
    fn a_forward_proxy_gets_its_credentials_and_headers_after_the_requests_own() {
        let proxy = ForwardProxy {
            authorization: Some(HeaderValue::from_static("Basic dTpw")),
            headers: vec![(
                HeaderName::from_static("x-proxy"),
                HeaderValue::from_static("p"),
            )],
        };
        let mut req = Request::get("http://example.com/a")
            .header("x-proxy", "own")
            .body(())
            .unwrap();
        prepare_proxied_request(&mut req, &HeaderValue::from_static("example.com"), &proxy);
        assert_eq!(req.uri().to_string(), "http://example.com/a");
        assert_eq!(req.headers()[PROXY_AUTHORIZATION], "Basic dTpw");
        let values: Vec<_> = req.headers().get_all("x-proxy").iter().collect();
        assert_eq!(values, ["own", "p"]);
        // The caller's own credentials stay, alone.
        let mut req = Request::get("http://example.com/a")
            .header(PROXY_AUTHORIZATION, "Bearer t")
            .body(())
            .unwrap();
        prepare_proxied_request(&mut req, &HeaderValue::from_static("example.com"), &proxy);
        let values: Vec<_> = req.headers().get_all(PROXY_AUTHORIZATION).iter().collect();
        assert_eq!(values, ["Bearer t"]);
    }

    #[test]
    fn a_request_target_replaces_the_uris_and_a_retry_restores_the_origin() {
        let origin = OriginKey::from_uri(&"http://example.com/".parse().unwrap()).unwrap();
        let mut req = Request::options("http://example.com/ignored?q")
            .body(())
            .unwrap();
        req.extensions_mut().insert(RequestTarget::asterisk());
        prepare_request(&mut req, &HeaderValue::from_static("example.com"));
        assert_eq!(req.uri().to_string(), "*");
        assert_eq!(req.headers()[HOST], "example.com");
        restore_absolute_uri(&mut req, &origin);
        assert_eq!(req.uri().to_string(), "http://example.com/");
        prepare_request(&mut req, &HeaderValue::from_static("example.com"));
        assert_eq!(req.uri().to_string(), "*");

        let mut proxied = Request::get("http://example.com/a").body(()).unwrap();
        proxied
            .extensions_mut()
            .insert("/b?c".parse::<RequestTarget>().unwrap());
        let proxy = ForwardProxy::default();
        prepare_proxied_request(
            &mut proxied,
            &HeaderValue::from_static("example.com"),
            &proxy,
        );
        assert_eq!(proxied.uri().to_string(), "/b?c");
    }

    #[test]
    fn absolute_uri_is_restored_for_a_retry() {
        let origin = OriginKey::from_uri(&"https://[::1]:8443/x".parse().unwrap()).unwrap();
        let mut req = Request::get("https://[::1]:8443/x?y").body(()).unwrap();
        prepare_request(&mut req, &HeaderValue::from_static("[::1]:8443"));
        restore_absolute_uri(&mut req, &origin);
        assert_eq!(req.uri().to_string(), "https://[::1]:8443/x?y");
    }
}
