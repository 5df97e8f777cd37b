//! Authentication that answers a challenge, as curl does it: `--digest`, `--anyauth` and
//! `--ntlm` for the server's `401`, `--proxy-digest` and `--proxy-anyauth` for a forward proxy's `407` (a
//! tunnel's `CONNECT` is answered by the pool's connector, before the request).
//!
//! The first request of a URL goes out without the credentials a challenge is waited for (and
//! without its request data: a body that a challenge is sure to refuse is not sent twice; it
//! goes with `Content-Length: 0`). A `401` whose `WWW-Authenticate` offers `Digest` (or, with
//! `--anyauth`, only `Basic`), or a `407` whose `Proxy-Authenticate` does, is answered once:
//! its body is read and dropped, and the same request goes again with the answer and its
//! data. A proxy's challenge and then the server's are two answers, in that order. Whatever
//! the answered request gets is the transfer's response, a second `401` or `407` included. A
//! redirect (`-L`) starts over at the new URL. `--basic`, `--digest` and `--anyauth` override
//! each other (the last one wins), as do `--proxy-basic`, `--proxy-digest` and
//! `--proxy-anyauth`. The challenge is parsed and answered by the pool's
//! [`pool::AuthScheme`] (MD5, SHA-256 and SHA-512-256, `qop=auth` and `auth-int`).
//!
//! `--ntlm` follows the same steps with one difference: its first request already carries
//! NTLM's negotiate message, and the challenge it draws is answered with the authenticate
//! message ([`pool::AuthScheme::Ntlm`]). NTLM authenticates the connection, so the answer must
//! go on the connection the challenge came on: the challenge's body is read to its end first,
//! and curl mode's requests are HTTP/1.1 under `--ntlm`, so the pool hands the same idle
//! connection to the answer (one transfer at a time; with `-Z` a parallel transfer to the same
//! host could take it first, and the server would then refuse the answer).
//!
//! Through a forward proxy, curl sends the credentials it has before any challenge right
//! after `Host`, and its `Proxy-Connection` among its own headers: this module places them
//! in the request too (`forward_proxy_headers`), where the pool would append them.
//!
//! What this module does not do: keep a nonce for later URLs (each URL is challenged anew, as
//! with curl's command line across transfers).

use http::header::WWW_AUTHENTICATE;
use http::{HeaderMap, HeaderValue, Uri};

use super::super::Session;
use super::super::request::{Hop, RequestTemplate};
use super::super::url;
use super::{HopState, Next};

/// The challenges the next request of a transfer may draw and answer.
#[derive(Debug, Default)]
pub(super) struct Pending<'a> {
    /// `--digest` or `--anyauth`, before this URL's challenge: the user to answer it as.
    server: Option<(&'a str, &'a str)>,
    /// `--proxy-digest` or `--proxy-anyauth` through a forward proxy, before its challenge.
    proxy: Option<&'a pool::Proxy>,
}

impl Pending<'_> {
    /// Whether a challenge is awaited, so the request leaves its data for the answer.
    pub(super) fn awaited(&self) -> bool {
        self.server.is_some() || self.proxy.is_some()
    }
}

/// A challenge answered: what follows, and `-v`'s line about it.
pub(super) struct Answered {
    pub(super) next: Next,
    pub(super) info: String,
}

impl Session {
    /// What the request to `uri` in `hop` may be challenged for and answer.
    pub(super) fn pending_challenges<'a>(
        &'a self,
        uri: &Uri,
        hop: &Hop,
        state: &'a HopState<'a>,
    ) -> Pending<'a> {
        let server = (state.digest.is_none() && (!hop.drops_credentials() || state.own))
            .then(|| {
                self.composed
                    .challenge_credentials(state.credentials.as_ref())
            })
            .flatten();
        let proxy = state
            .proxy_digest
            .is_none()
            .then(|| self.forward_proxy(uri))
            .flatten()
            .filter(|proxy| proxy.auth().waits_for_challenge() && proxy.credentials().is_some());
        Pending { server, proxy }
    }

    /// The answer to the challenge of a response with `status` and `headers` to the request
    /// `hop` sends to `uri` (with its data), if it is one `pending` waits for and can answer.
    pub(super) fn answer_challenge(
        &self,
        pending: &Pending<'_>,
        (status, headers): (http::StatusCode, &HeaderMap),
        (uri, hop): (&Uri, &Hop),
        template: &RequestTemplate,
    ) -> Option<Answered> {
        let data = template.body_for(hop);
        // The target as the request line carried it (a non-ASCII path percent-encoded).
        let wire = url::wire_uri(uri);
        let target = wire.path_and_query().map_or("/", |p| p.as_str());
        let method = template.method_for(hop);
        let request = pool::Challenged {
            method: method.as_str(),
            target,
            body: &data,
        };
        match status.as_u16() {
            401 => {
                let user = pending.server?;
                let scheme = self.composed.challenged?;
                let answer = scheme.answer(headers.get_all(WWW_AUTHENTICATE), request, user)?;
                Some(Answered {
                    next: Next::Authenticate(answer.value),
                    info: format!("Server auth using {} with user '{}'", answer.scheme, user.0),
                })
            }
            407 => {
                let proxy = pending.proxy?;
                let (user, _) = proxy.credentials()?;
                let answer = proxy.answer_challenge(headers, request)?;
                Some(Answered {
                    next: Next::ProxyAuthenticate(answer.value),
                    info: format!("Proxy auth using {} with user '{user}'", answer.scheme),
                })
            }
            _ => None,
        }
    }

    /// The `Proxy-Authorization` (`digest`, the answer to the proxy's challenge, else the
    /// credentials sent up front) and curl's `Proxy-Connection` of a request to `uri` through
    /// a forward proxy. Curl mode puts them in curl's places, where the pool would append them
    /// after the request's headers; a tunnel's go on its `CONNECT`.
    pub(super) fn forward_proxy_headers(
        &self,
        uri: &Uri,
        digest: Option<&HeaderValue>,
    ) -> (Option<HeaderValue>, Option<HeaderValue>) {
        let forward = self.forward_proxy(uri);
        let authorization = digest
            .cloned()
            .or_else(|| forward.and_then(pool::Proxy::forwarded_authorization));
        let keep_alive = forward
            .filter(|_| crate::curl::setup::proxy_keep_alive(&self.args.connect))
            .map(|_| HeaderValue::from_static("Keep-Alive"));
        (authorization, keep_alive)
    }

    /// The forward proxy a request to `uri` goes through: an HTTP proxy the pool routes it to
    /// without a tunnel (an `http://` URL, without `-p` or HTTP/2 prior knowledge).
    fn forward_proxy(&self, uri: &Uri) -> Option<&pool::Proxy> {
        let tunnel = uri.scheme_str() == Some("https")
            || self.args.connect.proxytunnel
            || self.prior_knowledge(uri);
        self.proxy_for(uri)
            .filter(|proxy| !tunnel && !proxy.scheme().is_socks())
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderValue, Method};

    use super::*;

    /// The answer of `--digest` (or with `any`, `--anyauth`) to the challenges among
    /// `headers`, for a `method` request to `uri` with `body`: the value and the scheme's name.
    fn answer(
        headers: &HeaderMap,
        method: &Method,
        uri: &Uri,
        body: &[u8],
        user: (&str, &str),
        any: bool,
    ) -> Option<(HeaderValue, &'static str)> {
        let request = pool::Challenged {
            method: method.as_str(),
            target: uri.path_and_query().map_or("/", |p| p.as_str()),
            body,
        };
        let scheme = if any {
            pool::AuthScheme::Any
        } else {
            pool::AuthScheme::Digest
        };
        scheme
            .answer(headers.get_all(WWW_AUTHENTICATE), request, user)
            .map(|answer| (answer.value, answer.scheme))
    }

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
