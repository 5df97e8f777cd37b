//! `--digest` and `--anyauth`: HTTP authentication that answers the server's challenge, as
//! curl does it: Digest (RFC 7616), and with `--anyauth` Basic when the server offers only
//! Basic.
//!
//! The first request of a URL goes out without credentials (and without its request data: a
//! body that a challenge is sure to refuse is not sent twice). A `401` whose
//! `WWW-Authenticate` offers `Digest` (or, with `--anyauth`, only `Basic`) is answered once:
//! its body is read and dropped, and the same request goes again with the `Authorization` and
//! its data. `--basic`, `--digest` and `--anyauth` override each other: the last one wins.
//! Whatever that second request gets is the transfer's response, a second `401` included. A
//! redirect (`-L`) starts over at the new URL. The challenge is parsed and the response
//! computed by the `digest_auth` crate (MD5, SHA-256 and SHA-512-256, `qop=auth` and
//! `auth-int`).
//!
//! What this module does not do: keep a nonce for later URLs (each URL is challenged anew, as
//! with curl's command line across transfers) or answer a proxy's challenge.

use http::header::WWW_AUTHENTICATE;
use http::{HeaderMap, HeaderValue, Method, Uri};

/// The `Authorization` answering the `Digest` challenge among `headers` for a `method` request
/// to `uri` with `body`, as `user` with `password`, with the scheme's name; with `any`
/// (`--anyauth`), a `Basic` one when no challenge offers Digest but one offers Basic. `None`
/// when nothing offered can be answered.
pub(crate) fn answer(
    headers: &HeaderMap,
    method: &Method,
    uri: &Uri,
    body: &[u8],
    (user, password): (&str, &str),
    any: bool,
) -> Option<(HeaderValue, &'static str)> {
    digest(headers, method, uri, body, (user, password))
        .map(|value| (value, "Digest"))
        .or_else(|| {
            let offered = challenges(headers).any(|value| is_scheme(value, "basic"));
            (any && offered).then(|| (super::compose::basic(user, password), "Basic"))
        })
}

/// The `Digest` answer of [`answer`].
fn digest(
    headers: &HeaderMap,
    method: &Method,
    uri: &Uri,
    body: &[u8],
    (user, password): (&str, &str),
) -> Option<HeaderValue> {
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let context = digest_auth::AuthContext::new_with_method(
        user,
        password,
        target,
        Some(body),
        digest_auth::HttpMethod::from(method.as_str()),
    );
    challenges(headers)
        .filter(|value| is_scheme(value, "digest"))
        .find_map(|value| {
            let mut challenge = digest_auth::parse(value).ok()?;
            let answer = challenge.respond(&context).ok()?;
            HeaderValue::from_str(&answer.to_header_string()).ok()
        })
}

/// The `WWW-Authenticate` values of a response, as text.
fn challenges(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
}

/// Whether a `WWW-Authenticate` value is a challenge of `scheme` (lower case).
fn is_scheme(value: &str, scheme: &str) -> bool {
    let value = value.trim_start();
    value
        .get(..scheme.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
        && value[scheme.len()..].starts_with([' ', '\t'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7616 §3.9.1's example, MD5 with `qop=auth`: the response depends on the client's
    /// random cnonce, so the answer is checked for its fixed parts and its shape.
    #[test]
    fn answers_a_digest_challenge_and_ignores_other_schemes() {
        let mut headers = HeaderMap::new();
        headers.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"x\""),
        );
        headers.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(
                "Digest realm=\"http-auth@example.org\", qop=\"auth, auth-int\", \
                 algorithm=MD5, nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", \
                 opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\"",
            ),
        );
        let uri: Uri = "http://www.example.org/dir/index.html".parse().unwrap();
        let (header, scheme) = answer(
            &headers,
            &Method::GET,
            &uri,
            b"",
            ("Mufasa", "Circle of Life"),
            false,
        )
        .expect("a digest answer");
        assert_eq!(scheme, "Digest");
        let text = header.to_str().unwrap();
        assert!(text.starts_with("Digest "), "{text}");
        for part in [
            "username=\"Mufasa\"",
            "realm=\"http-auth@example.org\"",
            "uri=\"/dir/index.html\"",
            "nc=00000001",
            "opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\"",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        headers.remove(WWW_AUTHENTICATE);
        headers.insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"x\""),
        );
        assert_eq!(
            answer(&headers, &Method::GET, &uri, b"", ("a", "b"), false),
            None
        );
        // `--anyauth` answers Basic when Basic is all there is.
        let (basic, scheme) = answer(&headers, &Method::GET, &uri, b"", ("a", "b"), true).unwrap();
        assert_eq!((basic.to_str().unwrap(), scheme), ("Basic YTpi", "Basic"));
    }
}
