//! Reaching an origin through an HTTP proxy: dial the proxy (over TLS for an `https://` proxy),
//! then either open a `CONNECT` tunnel to the origin or hand the proxy connection back for
//! absolute-form requests (a *forward* proxy for `http://` origins).
//!
//! ```text
//!  dial proxy ──(TLS to the proxy, https:// proxies)──▶ CONNECT host:port ──2xx──▶ tunnel
//!                                                                          ├─407─▶ is_proxy_auth
//!                                                                          └─other▶ refused
//!  with AuthScheme::Digest or Any, a first 407 that can be answered:
//!      keeps the connection open ──▶ drop its body, CONNECT again with the answer (2xx or refused)
//!      closes it                 ──▶ Opened::Redial: the connector dials again and sends the answer
//! ```
//!
//! The `CONNECT` exchange is small and written here rather than through hyper: one request
//! head, one response head read byte by byte up to its blank line (so not one byte of the
//! tunnel's payload is consumed), bounded in size. A challenge is answered once: a second
//! `407` is the refusal, as with curl.
//!
//! What this module does not do: choose the proxy (see [`ProxyConfig`](crate::ProxyConfig)),
//! speak HTTP to the origin, or retry (beyond the one answer to a challenge).

use std::io;

use http::header::{
    CONNECTION, CONTENT_LENGTH, HOST, PROXY_AUTHORIZATION, TRANSFER_ENCODING, USER_AGENT,
};
use http::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::auth::Challenged;
use crate::{ConnectError, Proxy};

/// The largest `CONNECT` response head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// The largest `407` body read and dropped to send a challenge's answer on the same
/// connection; a longer one (an error page) costs a new connection instead.
const MAX_DRAINED: u64 = 64 * 1024;

/// How a transport reaches its origin through a proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyUse {
    /// The proxy, as `scheme://host:port` (credentials are never included).
    pub proxy: String,
    /// `true` for a `CONNECT` tunnel (the transport speaks to the origin end to end);
    /// `false` for a forward proxy (the transport speaks to the proxy, and HTTP/1 requests must
    /// use the absolute form and carry [`authorization`](Self::authorization)).
    pub tunnel: bool,
    /// The `Proxy-Authorization` value a forward proxy's requests carry, if any.
    pub authorization: Option<HeaderValue>,
    /// The headers a forward proxy's requests carry besides their own
    /// ([`Proxy::with_header`](crate::Proxy::with_header)); empty for a tunnel.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The head of the proxy's answer to the tunnel's `CONNECT`, as received (status line,
    /// headers and the blank line; bytes that are not UTF-8 replaced), for diagnostics such as
    /// `curl -v`; `None` for a forward proxy and a SOCKS5 tunnel.
    pub connect_response: Option<String>,
    /// Through a SOCKS5 proxy: the target the tunnel was asked for, as sent (`ADDR:PORT` the
    /// connector resolved, or `NAME:PORT` for the proxy to resolve); `None` otherwise.
    pub socks_target: Option<String>,
    /// The head of the proxy's `407` to the tunnel's first `CONNECT`, when the connector
    /// answered its challenge ([`AuthScheme::Digest`](crate::AuthScheme::Digest) or
    /// [`Any`](crate::AuthScheme::Any)); `None` when the first `CONNECT` opened the tunnel.
    pub connect_challenge: Option<String>,
    /// The `Proxy-Authorization` of the `CONNECT` that answered
    /// [`connect_challenge`](Self::connect_challenge), marked sensitive (its `Debug` shows
    /// none of it); [`Proxy::connect_head_with`](crate::Proxy::connect_head_with) writes that
    /// request again for diagnostics.
    pub connect_authorization: Option<HeaderValue>,
    /// Whether the proxy closed the connection its challenge came on, so that the answered
    /// `CONNECT` went on a second one: the transport took two connections to the proxy (curl
    /// counts both in `%{num_connects}`).
    pub connect_redialed: bool,
}

/// The headers the connector writes on a `CONNECT` besides `Host`.
#[derive(Debug, Default)]
pub(crate) struct ConnectHeaders {
    /// `Proxy-Authorization`, from the proxy's credentials.
    pub(crate) authorization: Option<HeaderValue>,
    /// `User-Agent` ([`Proxy::with_user_agent`](crate::Proxy::with_user_agent)).
    pub(crate) user_agent: Option<HeaderValue>,
    /// The request line says HTTP/1.0
    /// ([`Proxy::with_http10_connect`](crate::Proxy::with_http10_connect)).
    pub(crate) http10: bool,
}

/// The `CONNECT` request head for a tunnel to `authority` (`host:port`): the request line,
/// `Host`, then `own` (`Proxy-Authorization`, `User-Agent`, each when set), then `headers`
/// (the proxy's own, [`Proxy::with_header`](crate::Proxy::with_header); one with the name of a
/// header written here replaces it), and the blank line. The order is curl's. Every name is
/// written in title case (`X-Trace-Id`), as HTTP/1.1 heads conventionally are and as the
/// pool's own names here are: `HeaderName` keeps no case, and some proxies match names
/// case-sensitively.
pub(crate) fn connect_head(
    authority: &str,
    own: &ConnectHeaders,
    headers: &[(HeaderName, HeaderValue)],
) -> Vec<u8> {
    let given = |name: &HeaderName| headers.iter().any(|(n, _)| n == name);
    let version = if own.http10 { "1.0" } else { "1.1" };
    let mut head = format!("CONNECT {authority} HTTP/{version}\r\n").into_bytes();
    let mut line = |name: &str, value: &[u8]| {
        let mut upper = true;
        for byte in name.bytes() {
            head.push(if upper {
                byte.to_ascii_uppercase()
            } else {
                byte
            });
            upper = byte == b'-';
        }
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    };
    if !given(&HOST) {
        line("Host", authority.as_bytes());
    }
    if let Some(value) = own
        .authorization
        .as_ref()
        .filter(|_| !given(&PROXY_AUTHORIZATION))
    {
        line("Proxy-Authorization", value.as_bytes());
    }
    if let Some(value) = own.user_agent.as_ref().filter(|_| !given(&USER_AGENT)) {
        line("User-Agent", value.as_bytes());
    }
    for (name, value) in headers {
        line(name.as_str(), value.as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// What a tunnel's `CONNECT` exchange came to.
#[derive(Debug)]
pub(crate) enum Opened {
    /// The proxy answered 2xx with `answer` (its head), after answering `challenge` (the
    /// `407`'s head and the `Proxy-Authorization` that answered it) when there was one.
    Tunnel {
        answer: Vec<u8>,
        challenge: Option<(Vec<u8>, HeaderValue)>,
    },
    /// The proxy challenged the first `CONNECT` and does not keep this connection open: the
    /// answer goes on a new one.
    Redial {
        challenge: Vec<u8>,
        authorization: HeaderValue,
    },
}

/// Opens a tunnel to `authority` (`host:port`) through `proxy` over `stream`, a connection to
/// it: writes the `CONNECT` and reads the answer. The `CONNECT` carries `answered` (the answer
/// to a challenge an earlier connection drew) or the proxy's
/// [up-front credentials](Proxy::upfront_authorization). When the proxy waits for a challenge
/// ([`AuthScheme::Digest`](crate::AuthScheme::Digest) or `Any`) and the first `CONNECT` draws a
/// `407` that can be answered, the answer goes on this connection if the proxy keeps it open
/// (the `407`'s body read and dropped), else [`Opened::Redial`] says to open another.
pub(crate) async fn open_tunnel<S>(
    stream: &mut S,
    proxy: &Proxy,
    authority: &str,
    answered: Option<HeaderValue>,
) -> Result<Opened, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let first = answered.is_none();
    let authorization = answered.or_else(|| proxy.upfront_authorization());
    let response = exchange(stream, &proxy.connect_head_with(authority, authorization)).await?;
    let head = Head::parse(&response)?;
    if head.is_success() {
        return Ok(Opened::Tunnel {
            answer: response,
            challenge: None,
        });
    }
    let request = Challenged {
        method: "CONNECT",
        target: authority,
        body: b"",
    };
    let answer = (first && head.status == 407 && proxy.auth().waits_for_challenge())
        .then(|| proxy.answer_challenge(&head.headers, request))
        .flatten();
    let Some(answer) = answer else {
        return Err(ConnectError::tunnel_refused(head.status, &response));
    };
    let Some(length) = head.reusable_body() else {
        return Ok(Opened::Redial {
            challenge: response,
            authorization: answer.value,
        });
    };
    // The `407`'s body, so the next `CONNECT`'s answer is the next thing read.
    let mut body = (&mut *stream).take(length);
    tokio::io::copy(&mut body, &mut tokio::io::sink())
        .await
        .map_err(ConnectError::tunnel_io)?;
    if body.limit() > 0 {
        return Err(closed_early());
    }
    let again = proxy.connect_head_with(authority, Some(answer.value.clone()));
    // A proxy may close after its `407` without saying so (no `Connection: close`): a
    // connection that takes no answer or ends before a byte of one is not a refusal, and the
    // answer goes on a new one.
    let Some(second) = exchange_on_open(stream, &again).await? else {
        return Ok(Opened::Redial {
            challenge: response,
            authorization: answer.value,
        });
    };
    let answered = Head::parse(&second)?;
    if !answered.is_success() {
        let refused = ConnectError::tunnel_refused(answered.status, &second);
        return Err(refused.after_challenge(&response));
    }
    Ok(Opened::Tunnel {
        answer: second,
        challenge: Some((response, answer.value)),
    })
}

/// Writes `head` (a [`connect_head`]) and reads the proxy's answer's head.
async fn exchange<S>(stream: &mut S, head: &[u8]) -> Result<Vec<u8>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    stream
        .write_all(head)
        .await
        .map_err(ConnectError::tunnel_io)?;
    stream.flush().await.map_err(ConnectError::tunnel_io)?;
    read_head(stream).await?.ok_or_else(closed_early)
}

/// [`exchange`] on a connection that has carried an exchange already: `None` when the proxy
/// had closed it (the write fails, or the connection ends before a byte of the answer).
async fn exchange_on_open<S>(stream: &mut S, head: &[u8]) -> Result<Option<Vec<u8>>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if stream.write_all(head).await.is_err() || stream.flush().await.is_err() {
        return Ok(None);
    }
    read_head(stream).await
}

/// The parts of a `CONNECT` answer's head the connector acts on.
struct Head {
    status: u16,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    minor: u8,
    headers: HeaderMap,
}

impl Head {
    fn parse(head: &[u8]) -> Result<Head, ConnectError> {
        let mut parsed = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut parsed);
        let (Ok(httparse::Status::Complete(_)), Some(status), Some(minor)) =
            (response.parse(head), response.code, response.version)
        else {
            return Err(malformed());
        };
        let mut headers = HeaderMap::new();
        for header in response.headers.iter() {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(header.name.as_bytes()),
                HeaderValue::from_bytes(header.value),
            ) {
                headers.append(name, value);
            }
        }
        Ok(Head {
            status,
            minor,
            headers,
        })
    }

    fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The length of the body to read and drop before the connection can carry another
    /// `CONNECT`: `Some` when the proxy keeps the connection open (HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `keep-alive`) and says how long the body is, at
    /// most [`MAX_DRAINED`] bytes, without a `Transfer-Encoding`.
    fn reusable_body(&self) -> Option<u64> {
        let says = |token: &str| {
            [CONNECTION, HeaderName::from_static("proxy-connection")]
                .iter()
                .flat_map(|name| self.headers.get_all(name))
                .filter_map(|value| value.to_str().ok())
                .flat_map(|value| value.split(','))
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        let open = if self.minor >= 1 {
            !says("close")
        } else {
            says("keep-alive") && !says("close")
        };
        if !open || self.headers.contains_key(TRANSFER_ENCODING) {
            return None;
        }
        let mut lengths = self.headers.get_all(CONTENT_LENGTH).iter();
        let length = lengths.next()?.to_str().ok()?.trim().parse::<u64>().ok()?;
        (lengths.next().is_none() && length <= MAX_DRAINED).then_some(length)
    }
}

/// Reads a response head up to and including its blank line, one byte at a time so nothing of
/// the tunnel's payload is consumed; `None` when the connection ends (or resets) before its
/// first byte.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Option<Vec<u8>>, ConnectError> {
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = match stream.read(&mut byte).await {
            Ok(n) => n,
            Err(e) if head.is_empty() && e.kind() == io::ErrorKind::ConnectionReset => 0,
            Err(e) => return Err(ConnectError::tunnel_io(e)),
        };
        match (n, head.is_empty()) {
            (0, true) => return Ok(None),
            (0, false) => return Err(closed_early()),
            _ => head.push(byte[0]),
        }
        if head.len() > MAX_HEAD {
            return Err(ConnectError::tunnel_io(io::Error::new(
                io::ErrorKind::InvalidData,
                "the proxy's CONNECT response head is too large",
            )));
        }
    }
    Ok(Some(head))
}

fn closed_early() -> ConnectError {
    ConnectError::tunnel_io(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the proxy closed the connection before answering CONNECT",
    ))
}

fn malformed() -> ConnectError {
    ConnectError::tunnel_io(io::Error::new(
        io::ErrorKind::InvalidData,
        "the proxy's CONNECT response is not HTTP",
    ))
}

#[cfg(test)]
mod tests {
    use tokio::io::DuplexStream;

    use super::*;
    use crate::AuthScheme;

    /// A scripted proxy on `stream`: for each answer, reads one request head and writes the
    /// answer (nothing for an empty one); then reads what follows until the client closes.
    /// Returns the heads it read and the rest.
    async fn scripted(
        mut stream: DuplexStream,
        answers: Vec<&'static [u8]>,
    ) -> (Vec<String>, Vec<u8>) {
        let mut heads = Vec::new();
        for answer in answers {
            let mut seen = Vec::new();
            let mut byte = [0u8; 1];
            while !seen.ends_with(b"\r\n\r\n") {
                if stream.read_exact(&mut byte).await.is_err() {
                    return (heads, Vec::new());
                }
                seen.push(byte[0]);
            }
            heads.push(String::from_utf8(seen).unwrap());
            if answer.is_empty() {
                // Closes without answering.
                return (heads, Vec::new());
            }
            stream.write_all(answer).await.unwrap();
        }
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
        (heads, rest)
    }

    /// Opens a tunnel to `origin.test:443` through `proxy` against a [`scripted`] proxy; once
    /// open, writes `payload` through it.
    async fn run_through(
        proxy: &Proxy,
        answers: Vec<&'static [u8]>,
    ) -> (Result<Opened, ConnectError>, Vec<String>, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(4096);
        let server = tokio::spawn(scripted(server, answers));
        let result = open_tunnel(&mut client, proxy, "origin.test:443", None).await;
        if matches!(result, Ok(Opened::Tunnel { .. })) {
            client.write_all(b"payload").await.unwrap();
        }
        drop(client);
        let (heads, rest) = server.await.unwrap();
        (result, heads, rest)
    }

    /// [`run_through`] a proxy with the credentials `u:p`, presented with Basic up front;
    /// the answer's head when the tunnel opened.
    async fn run(answer: &'static [u8]) -> (Result<Vec<u8>, ConnectError>, String, Vec<u8>) {
        run_with(answer, Vec::new()).await
    }

    async fn run_with(
        answer: &'static [u8],
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> (Result<Vec<u8>, ConnectError>, String, Vec<u8>) {
        let mut proxy = Proxy::parse("http://u:p@proxy.test:3128").unwrap();
        for (name, value) in headers {
            proxy = proxy.with_header(name, value);
        }
        let (result, heads, rest) = run_through(&proxy, vec![answer]).await;
        let result = result.map(|opened| match opened {
            Opened::Tunnel { answer, challenge } => {
                assert!(challenge.is_none());
                answer
            }
            Opened::Redial { .. } => panic!("no challenge was answered"),
        });
        (result, heads.concat(), rest)
    }

    #[tokio::test]
    async fn a_2xx_answer_opens_the_tunnel_and_consumes_only_the_head() {
        let answer = b"HTTP/1.1 200 Connection established\r\nVia: test\r\n\r\n";
        let (result, seen, rest) = run(answer).await;
        assert_eq!(result.expect("tunnel"), answer);
        assert_eq!(
            seen,
            "CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\
             Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
        assert_eq!(rest, b"payload");
    }

    #[tokio::test]
    async fn proxy_headers_follow_and_replace_the_connectors_own() {
        let headers = vec![
            (
                HeaderName::from_static("x-proxy"),
                HeaderValue::from_static("1"),
            ),
            (HOST, HeaderValue::from_static("other.test")),
        ];
        let (result, seen, _) = run_with(b"HTTP/1.1 200 OK\r\n\r\n", headers).await;
        result.expect("tunnel");
        assert_eq!(
            seen,
            "CONNECT origin.test:443 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n\
             X-Proxy: 1\r\nHost: other.test\r\n\r\n"
        );
    }

    /// A `407` as Apache httpd's mod_auth_digest sends it (nonce shortened), with a body of
    /// `BODY` bytes; the connection stays open.
    const DIGEST_407: &[u8] = b"HTTP/1.1 407 Proxy Authentication Required\r\n\
        Proxy-Authenticate: Digest realm=\"interop\", nonce=\"n0nce\", algorithm=MD5, qop=\"auth\"\r\n\
        Content-Length: 5\r\n\r\nnope!";
    const OPENED: &[u8] = b"HTTP/1.0 200 Connection Established\r\n\r\n";

    #[tokio::test]
    async fn a_digest_challenge_is_answered_on_the_same_connection() {
        let proxy = Proxy::parse("http://u:p@proxy.test:3128")
            .unwrap()
            .with_auth(AuthScheme::Digest);
        let (result, heads, rest) = run_through(&proxy, vec![DIGEST_407, OPENED]).await;
        let Ok(Opened::Tunnel { answer, challenge }) = result else {
            panic!("{result:?}");
        };
        assert_eq!(answer, OPENED);
        let (challenge, authorization) = challenge.expect("a challenge was answered");
        assert!(challenge.starts_with(b"HTTP/1.1 407") && challenge.ends_with(b"\r\n\r\n"));
        assert!(authorization.is_sensitive());
        // Nothing up front; then the answer, naming the tunnel's target as its uri.
        assert_eq!(
            heads[0],
            "CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\r\n"
        );
        let second = &heads[1];
        assert_eq!(
            second,
            &String::from_utf8(proxy.connect_head_with("origin.test:443", Some(authorization)))
                .unwrap()
        );
        for part in [
            "Proxy-Authorization: Digest username=\"u\"",
            "realm=\"interop\"",
            "nonce=\"n0nce\"",
            "uri=\"origin.test:443\"",
            "qop=auth",
            "nc=00000001",
        ] {
            assert!(second.contains(part), "{part} in {second}");
        }
        // The 407's body was read and dropped, not taken for the tunnel's payload.
        assert_eq!(rest, b"payload");
    }

    #[tokio::test]
    async fn a_challenge_on_a_closing_connection_is_answered_on_a_new_one() {
        let proxy = Proxy::parse("http://u:p@proxy.test:3128")
            .unwrap()
            .with_auth(AuthScheme::Digest);
        for closing in [
            &b"HTTP/1.1 407 No\r\nProxy-Authenticate: Digest realm=\"r\", nonce=\"n\"\r\n\
               Connection: close\r\nContent-Length: 0\r\n\r\n"[..],
            b"HTTP/1.1 407 No\r\nProxy-Authenticate: Digest realm=\"r\", nonce=\"n\"\r\n\r\n",
            b"HTTP/1.0 407 No\r\nProxy-Authenticate: Digest realm=\"r\", nonce=\"n\"\r\n\
              Content-Length: 0\r\n\r\n",
        ] {
            let (result, heads, _) = run_through(&proxy, vec![closing, b""]).await;
            let Ok(Opened::Redial {
                challenge,
                authorization,
            }) = result
            else {
                panic!("{result:?}");
            };
            assert_eq!(challenge, closing);
            assert!(
                authorization
                    .to_str()
                    .unwrap()
                    .starts_with("Digest username=\"u\"")
            );
            assert_eq!(
                heads.len(),
                1,
                "nothing more was sent on the closing connection"
            );
        }
    }

    /// `with_http10_connect` (curl's `--proxy1.0`) changes the request line only.
    #[test]
    fn an_http10_connect_says_so_in_its_request_line() {
        let proxy = Proxy::parse("http://u:p@proxy.test:3128")
            .unwrap()
            .with_http10_connect(true);
        assert_eq!(
            String::from_utf8(proxy.connect_head("origin.test:443")).unwrap(),
            "CONNECT origin.test:443 HTTP/1.0\r\nHost: origin.test:443\r\n\
             Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
    }

    /// A proxy that keeps nothing after its `407` but does not say so: the answer sent on the
    /// closed connection draws no byte, and goes on a new one instead of failing.
    #[tokio::test]
    async fn a_connection_closed_unannounced_after_a_challenge_is_dialed_again() {
        let proxy = Proxy::parse("http://u:p@proxy.test:3128")
            .unwrap()
            .with_auth(AuthScheme::Digest);
        let (result, heads, _) = run_through(&proxy, vec![DIGEST_407, b""]).await;
        let Ok(Opened::Redial { challenge, .. }) = result else {
            panic!("{result:?}");
        };
        assert_eq!(challenge, &DIGEST_407[..DIGEST_407.len() - 5]);
        assert_eq!(heads.len(), 2, "the answer went on the first connection");
    }

    #[tokio::test]
    async fn a_challenge_is_answered_once_and_only_with_what_the_scheme_allows() {
        let basic_407: &'static [u8] =
            b"HTTP/1.1 407 No\r\nProxy-Authenticate: Basic realm=\"r\"\r\n\
            Content-Length: 0\r\n\r\n";
        let proxy = Proxy::parse("http://u:p@proxy.test:3128").unwrap();
        // Digest answers no Basic challenge; Any does, once; a second 407 is the refusal.
        let (result, heads, _) = run_through(
            &proxy.clone().with_auth(AuthScheme::Digest),
            vec![basic_407],
        )
        .await;
        let error = result.expect_err("Digest cannot answer Basic");
        assert!(error.is_proxy_auth(), "{error}");
        assert_eq!(heads.len(), 1);
        let any = proxy.clone().with_auth(AuthScheme::Any);
        let (result, heads, _) = run_through(&any, vec![basic_407, basic_407]).await;
        let error = result.expect_err("the answer was refused");
        assert_eq!(error.proxy_status(), Some(407), "{error}");
        assert_eq!(
            error.proxy_challenge(),
            Some(std::str::from_utf8(basic_407).unwrap())
        );
        assert_eq!(heads.len(), 2);
        assert!(
            heads[1].contains("Proxy-Authorization: Basic dTpw\r\n"),
            "{}",
            heads[1]
        );
        // Basic sent its credentials up front: a 407 then is not answered again.
        let (result, heads, _) = run_through(&proxy, vec![DIGEST_407]).await;
        assert!(result.expect_err("refused").is_proxy_auth());
        assert_eq!(heads.len(), 1);
    }

    #[test]
    fn the_user_agent_follows_the_credentials_and_a_proxy_header_replaces_it() {
        let own = ConnectHeaders {
            authorization: Some(HeaderValue::from_static("Basic dTpw")),
            user_agent: Some(HeaderValue::from_static("agent/1")),
            http10: false,
        };
        let head = connect_head("origin.test:443", &own, &[]);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\
             Proxy-Authorization: Basic dTpw\r\nUser-Agent: agent/1\r\n\r\n"
        );
        let replaced = [(USER_AGENT, HeaderValue::from_static("other/2"))];
        let head = connect_head("origin.test:443", &own, &replaced);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test:443\r\n\
             Proxy-Authorization: Basic dTpw\r\nUser-Agent: other/2\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn refusals_say_their_status() {
        let (result, _, _) =
            run(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n").await;
        let error = result.expect_err("refused");
        assert!(error.is_proxy() && error.is_proxy_auth(), "{error}");
        assert_eq!(error.proxy_status(), Some(407));
        assert_eq!(
            error.proxy_response(),
            Some("HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
        );
        let (result, _, _) = run(b"HTTP/1.1 403 Forbidden\r\n\r\n").await;
        let error = result.expect_err("refused");
        assert!(error.is_proxy() && !error.is_proxy_auth(), "{error}");
        assert_eq!(error.proxy_status(), Some(403));
        assert_eq!(
            error.proxy_response(),
            Some("HTTP/1.1 403 Forbidden\r\n\r\n")
        );
        assert!(error.to_string().contains("403"), "{error}");
    }

    #[tokio::test]
    async fn a_proxy_that_closes_or_speaks_nonsense_is_a_tunnel_failure() {
        let (result, _, _) = run(b"").await;
        let error = result.expect_err("closed");
        assert!(
            error.is_proxy() && error.proxy_status().is_none() && error.proxy_response().is_none(),
            "{error}"
        );
        let (result, _, _) = run(b"SSH-2.0-OpenSSH\r\n\r\n").await;
        assert!(result.expect_err("not HTTP").is_proxy());
    }
}
