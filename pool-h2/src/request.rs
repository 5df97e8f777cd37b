//! Shaping a request for HTTP/2.

use http::uri::Authority;
use http::{Request, Uri, header::HOST};

/// Moves a `Host` header into the request's `:authority` (hyper derives it from the URI).
///
/// HTTP/2 carries the target's authority in `:authority`, and a client must not send a `Host`
/// field that differs from it (RFC 9113 §8.3.1); servers such as nginx answer a request that
/// has both with `400`. A caller who sets `Host` (curl's `-H 'Host: …'`, a gateway forwarding
/// its client's host) means the authority, as curl treats it. The connection was chosen by the
/// URI's origin already; this changes what the request names, not where it goes. A `Host` value
/// that is not a valid authority is dropped (hyper would reject the request otherwise).
pub fn prepare_request<B>(request: &mut Request<B>) {
    let Some(host) = request.headers_mut().remove(HOST) else {
        return;
    };
    let Ok(authority) = Authority::try_from(host.as_bytes()) else {
        return;
    };
    let mut parts = request.uri().clone().into_parts();
    parts.authority = Some(authority);
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
}
