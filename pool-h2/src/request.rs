//! Shaping a request for HTTP/2.

use http::uri::Authority;
use http::{Request, Uri, header::HOST};
use pool_core::RequestTarget;

/// Shapes `request` for HTTP/2: moves a `Host` header into the request's `:authority`, and a
/// [`RequestTarget`] into its `:path` (hyper derives both from the URI).
///
/// HTTP/2 carries the target's authority in `:authority`, and a client must not send a `Host`
/// field that differs from it (RFC 9113 §8.3.1); servers such as nginx answer a request that
/// has both with `400`. A caller who sets `Host` (curl's `-H 'Host: …'`, a gateway forwarding
/// its client's host) means the authority, as curl treats it. The connection was chosen by the
/// URI's origin already; this changes what the request names, not where it goes. A `Host` value
/// that is not a valid authority is dropped (hyper would reject the request otherwise).
pub fn prepare_request<B>(request: &mut Request<B>) {
    let authority = request
        .headers_mut()
        .remove(HOST)
        .and_then(|host| Authority::try_from(host.as_bytes()).ok());
    // One emptiness check for a request without extensions.
    let target = request.extensions().get::<RequestTarget>();
    if authority.is_none() && target.is_none() {
        return;
    }
    let mut parts = request.uri().clone().into_parts();
    if let Some(authority) = authority {
        parts.authority = Some(authority);
    }
    if let Some(target) = target {
        parts.path_and_query = Some(target.path_and_query().clone());
    }
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_becomes_the_authority() {
        let mut request = Request::get("https://origin.test/path?q=1")
            .header("host", "other.test:8443")
            .body(())
            .unwrap();
        prepare_request(&mut request);
        assert_eq!(request.uri(), "https://other.test:8443/path?q=1");
        assert!(request.headers().get(HOST).is_none());

        let mut plain = Request::get("http://origin.test/").body(()).unwrap();
        prepare_request(&mut plain);
        assert_eq!(plain.uri(), "http://origin.test/");
    }

    #[test]
    fn a_request_target_becomes_the_path() {
        let mut request = Request::options("https://origin.test/path?q=1")
            .header("host", "other.test")
            .body(())
            .unwrap();
        request.extensions_mut().insert(RequestTarget::asterisk());
        prepare_request(&mut request);
        assert_eq!(request.uri().authority().unwrap(), "other.test");
        assert_eq!(request.uri().path_and_query().unwrap(), "*");
    }
}
