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
//! As curl does, a custom `Host` given with `-H` is not sent to another host, and credentials
//! (`-u`, the URL's, `-H Authorization`, `-H Cookie`) not to another host, port or scheme than
//! the transfer's first URL's (curl's `Curl_auth_allowed_to_host`), unless
//! `--location-trusted`. The `Location` resolves against the URL that answered
//! ([`super::url::resolve_location`]).

use http::header::HeaderValue;
use http::{Method, StatusCode, Uri};

use super::exit::CurlError;
use super::request::Hop;
use super::url::port_of;

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

/// The request after a `status` redirect to `to`, in a transfer that started at `first`.
pub(crate) fn next_hop(
    status: StatusCode,
    hop: &Hop,
    first: &Uri,
    to: &Uri,
    keep_post: KeepPost,
) -> Hop {
    let (method, send_body) = match status.as_u16() {
        code if keep_post.keeps(code, &hop.method) => (hop.method.clone(), hop.send_body),
        301 | 302 if hop.method == Method::POST => (Method::GET, false),
        303 if hop.method != Method::HEAD => (Method::GET, false),
        _ => (hop.method.clone(), hop.send_body),
    };
    // As curl decides it, against the transfer's first URL rather than the previous hop: a
    // redirect back to the first host sends what a detour left out.
    let cross_host = !first
        .host()
        .zip(to.host())
        .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b));
    Hop {
        method,
        send_body,
        cross_host,
        cross_origin: cross_host || first.scheme() != to.scheme() || port_of(first) != port_of(to),
        trusted: hop.trusted,
    }
}

/// What `-v` says when a redirect from `from` goes to another port or scheme, as curl says it
/// whether or not there are credentials to leave out: `Clear auth, redirects to port from 80
/// to 8080`, or `... scheme from HTTP to https`.
pub(crate) fn clear_auth_note(from: &Uri, to: &Uri) -> Option<String> {
    let (port_from, port_to) = (port_of(from), port_of(to));
    if port_from != port_to {
        return Some(format!(
            "Clear auth, redirects to port from {port_from} to {port_to}"
        ));
    }
    let (scheme_from, scheme_to) = (from.scheme_str()?, to.scheme_str()?);
    (!scheme_from.eq_ignore_ascii_case(scheme_to)).then(|| {
        format!(
            "Clear auth, redirects scheme from {} to {scheme_to}",
            scheme_from.to_ascii_uppercase()
        )
    })
}

/// `%{redirect_url}` for a `Location` resolved to `next`: with the `Location`'s fragment, which
/// the next request would not carry but curl shows.
pub(crate) fn shown_location(next: &Uri, location: &HeaderValue) -> String {
    super::url::effective(next, next, super::url::fragment(location.as_bytes()))
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
            cross_origin: false,
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
    fn credentials_follow_the_first_url_host_port_and_scheme() {
        let url = |text: &str| text.parse::<Uri>().unwrap();
        let a = url("http://a.test/");
        let first = hop(Method::GET, false);
        let to = |target: &str| {
            next_hop(
                StatusCode::FOUND,
                &first,
                &a,
                &url(target),
                KeepPost::default(),
            )
        };
        let moved = to("http://B.test/x");
        assert!(moved.cross_host && moved.drops_credentials());
        // Back on the first host, what the detour left out goes again (curl compares each
        // hop with the first URL).
        let back = next_hop(StatusCode::FOUND, &moved, &a, &a, KeepPost::default());
        assert!(!back.cross_host && !back.drops_credentials());
        // Another port or scheme keeps a custom Host but not the credentials.
        for other in ["http://a.test:8080/", "https://a.test/"] {
            let hop = to(other);
            assert!(!hop.cross_host && hop.drops_credentials(), "{other}");
        }
        assert!(!to("http://A.test:80/y").drops_credentials());
        let trusted = Hop {
            trusted: true,
            ..to("https://b.test/")
        };
        assert!(!trusted.drops_credentials());
    }

    #[test]
    fn verbose_notes_a_port_or_scheme_change() {
        let url = |text: &str| text.parse::<Uri>().unwrap();
        let note = |from: &str, to: &str| clear_auth_note(&url(from), &url(to));
        assert_eq!(
            note("http://a/", "http://a:8080/").unwrap(),
            "Clear auth, redirects to port from 80 to 8080"
        );
        assert_eq!(
            note("http://a:443/", "https://a/").unwrap(),
            "Clear auth, redirects scheme from HTTP to https"
        );
        assert_eq!(note("http://a/", "http://b:80/x"), None);
    }

    #[test]
    fn limit() {
        assert!(check_limit(0, Some(1)).is_ok());
        assert_eq!(check_limit(1, Some(1)).unwrap_err().code(), 47);
        assert_eq!(check_limit(0, Some(0)).unwrap_err().code(), 47);
        assert!(check_limit(1_000, None).is_ok());
    }
}
