//! `-L`: which responses are followed and how the next request differs.
//!
//! | status | next request |
//! |--------|--------------|
//! | 301, 302 | a POST becomes a GET without the data; other methods are kept with their data |
//! | 303 | a GET without the data, unless the method was HEAD |
//! | 307, 308, and every other 3xx with a `Location` (300, 305, 306, ...) | the same method and data |
//!
//! `--post301`, `--post302` and `--post303` keep a POST (with its data) after that status.
//!
//! The method decided on is curl's `httpreq`, what the data, `-T` or `-I` make of the request;
//! `-X` only names the method each request is sent with, redirected ones too
//! ([`RequestTemplate::method_for`](super::request::RequestTemplate::method_for)): after `-X PUT
//! -d a` a 303 goes as `PUT` without the data, as curl 7.88 sends it.
//!
//! As curl does, `Authorization`, `Cookie` and a custom `Host` given with `-H` are not sent
//! to another host. The `Location` resolves against the URL that answered
//! ([`super::url::resolve_location`]).

use http::{Method, StatusCode, Uri};

use super::exit::CurlError;
use super::request::Hop;

/// Whether `-L` follows a response with this status (and a `Location`): every 3xx, as curl
/// follows them (300, 305 and 306 too, and a 304 that names a `Location`).
pub(crate) fn is_followed(status: StatusCode) -> bool {
    status.is_redirection()
}

/// `--post301`, `--post302`, `--post303`: the redirects after which a POST stays a POST with
/// its data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeepPost {
    pub(crate) on301: bool,
    pub(crate) on302: bool,
    pub(crate) on303: bool,
}

impl KeepPost {
    fn keeps(self, status: u16, method: &Method) -> bool {
        *method == Method::POST
            && match status {
                301 => self.on301,
                302 => self.on302,
                303 => self.on303,
                _ => false,
            }
    }
}

/// The request after a `status` redirect from `from` to `to`.
pub(crate) fn next_hop(
    status: StatusCode,
    hop: &Hop,
    from: &Uri,
    to: &Uri,
    keep_post: KeepPost,
) -> Hop {
    let (method, send_body) = match status.as_u16() {
        code if keep_post.keeps(code, &hop.method) => (hop.method.clone(), hop.send_body),
        301 | 302 if hop.method == Method::POST => (Method::GET, false),
        303 if hop.method != Method::HEAD => (Method::GET, false),
        _ => (hop.method.clone(), hop.send_body),
    };
    let other_host = !from
        .host()
        .zip(to.host())
        .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b));
    Hop {
        method,
        send_body,
        cross_host: hop.cross_host || other_host,
        trusted: hop.trusted,
    }
}

/// Checks that one more redirect stays within `--max-redirs` (`None`: unlimited).
///
/// # Errors
///
/// Exit 47 once `followed` redirects reached the limit.
pub(crate) fn check_limit(followed: u32, limit: Option<u32>) -> Result<(), CurlError> {
    match limit {
        Some(max) if followed >= max => Err(CurlError::too_many_redirects(max)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(method: Method, send_body: bool) -> Hop {
        Hop {
            method,
            send_body,
            cross_host: false,
            trusted: false,
        }
    }

    fn next(status: u16, from: Hop) -> Hop {
        let a: Uri = "http://a.test/x".parse().unwrap();
        next_hop(
            StatusCode::from_u16(status).unwrap(),
            &from,
            &a,
            &a,
            KeepPost::default(),
        )
    }

    #[test]
    fn methods_after_redirects() {
        assert_eq!(next(302, hop(Method::POST, true)), hop(Method::GET, false));
        assert_eq!(next(301, hop(Method::PUT, true)), hop(Method::PUT, true));
        assert_eq!(next(303, hop(Method::PUT, true)), hop(Method::GET, false));
        assert_eq!(
            next(303, hop(Method::HEAD, false)),
            hop(Method::HEAD, false)
        );
        assert_eq!(next(307, hop(Method::POST, true)), hop(Method::POST, true));
        assert_eq!(next(308, hop(Method::GET, false)), hop(Method::GET, false));
        // The other 3xx codes curl follows keep the method and data, as 307 does.
        assert_eq!(next(300, hop(Method::POST, true)), hop(Method::POST, true));
        let followed = |code| is_followed(StatusCode::from_u16(code).unwrap());
        assert!(
            [300, 301, 304, 305, 306, 308, 399]
                .into_iter()
                .all(followed)
        );
        assert!(![200, 299, 400, 101].into_iter().any(followed));
    }

    #[test]
    fn post30x_keep_a_post_after_their_status_only() {
        let a: Uri = "http://a/".parse().unwrap();
        let keep = KeepPost {
            on301: false,
            on302: true,
            on303: true,
        };
        let post = hop(Method::POST, true);
        let after = |status| next_hop(StatusCode::from_u16(status).unwrap(), &post, &a, &a, keep);
        assert_eq!(after(302), post);
        assert_eq!(after(303), post);
        assert_eq!(after(301), hop(Method::GET, false));
        let put = hop(Method::PUT, true);
        assert_eq!(
            next_hop(StatusCode::SEE_OTHER, &put, &a, &a, keep),
            hop(Method::GET, false)
        );
    }

    #[test]
    fn another_host_is_remembered() {
        let a: Uri = "http://a.test/".parse().unwrap();
        let b: Uri = "http://b.test/".parse().unwrap();
        let first = hop(Method::GET, false);
        let moved = next_hop(StatusCode::FOUND, &first, &a, &b, KeepPost::default());
        assert!(moved.cross_host);
        assert!(next_hop(StatusCode::FOUND, &moved, &b, &b, KeepPost::default()).cross_host);
        assert!(!next_hop(StatusCode::FOUND, &first, &a, &a, KeepPost::default()).cross_host);
    }

    #[test]
    fn limit() {
        assert!(check_limit(0, Some(1)).is_ok());
        assert_eq!(check_limit(1, Some(1)).unwrap_err().code(), 47);
        assert_eq!(check_limit(0, Some(0)).unwrap_err().code(), 47);
        assert!(check_limit(1_000, None).is_ok());
    }
}
