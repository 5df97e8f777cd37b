//! Reaching an origin through an HTTP proxy: dial the proxy (over TLS for an `https://` proxy),
//! then either open a `CONNECT` tunnel to the origin or hand the proxy connection back for
//! absolute-form requests (a *forward* proxy for `http://` origins).
//!
//! ```text
//!  dial proxy ──(TLS to the proxy, https:// proxies)──▶ CONNECT host:port ──2xx──▶ tunnel
//!                                                                          └─407─▶ is_proxy_auth
//!                                                                          └─other▶ refused
//! ```
//!
//! The `CONNECT` exchange is small and written here rather than through hyper: one request
//! head, one response head read byte by byte up to its blank line (so not one byte of the
//! tunnel's payload is consumed), bounded in size.
//!
//! What this module does not do: choose the proxy (see [`ProxyConfig`](crate::ProxyConfig)),
//! speak HTTP to the origin, or retry.

use std::io;

use http::header::{HOST, PROXY_AUTHORIZATION, USER_AGENT};
use http::{HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::ConnectError;

/// The largest `CONNECT` response head accepted.
const MAX_HEAD: usize = 16 * 1024;

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
}

/// The headers the connector writes on a `CONNECT` besides `Host`.
#[derive(Debug, Default)]
pub(crate) struct ConnectHeaders {
    /// `Proxy-Authorization`, from the proxy's credentials.
    pub(crate) authorization: Option<HeaderValue>,
    /// `User-Agent` ([`Proxy::with_user_agent`](crate::Proxy::with_user_agent)).
    pub(crate) user_agent: Option<HeaderValue>,
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
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\n").into_bytes();
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

/// Opens a tunnel over `stream`, a connection to the proxy, by writing `head` (a
/// [`connect_head`]) and reading the answer. Returns the head of the proxy's 2xx answer.
pub(crate) async fn connect_tunnel<S>(stream: &mut S, head: &[u8]) -> Result<Vec<u8>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    stream
        .write_all(head)
        .await
        .map_err(ConnectError::tunnel_io)?;
    stream.flush().await.map_err(ConnectError::tunnel_io)?;

    let response = read_head(stream).await?;
    let status = parse_status(&response)?;
    match status {
        200..=299 => Ok(response),
        status => Err(ConnectError::tunnel_refused(status, &response)),
    }
}

/// Reads a response head up to and including its blank line, one byte at a time so nothing of
/// the tunnel's payload is consumed.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Vec<u8>, ConnectError> {
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream
            .read(&mut byte)
            .await
            .map_err(ConnectError::tunnel_io)?;
        if n == 0 {
            return Err(ConnectError::tunnel_io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the proxy closed the connection before answering CONNECT",
            )));
        }
        head.push(byte[0]);
        if head.len() > MAX_HEAD {
            return Err(ConnectError::tunnel_io(io::Error::new(
                io::ErrorKind::InvalidData,
                "the proxy's CONNECT response head is too large",
            )));
        }
    }
    Ok(head)
}

fn parse_status(head: &[u8]) -> Result<u16, ConnectError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => response.code.ok_or_else(malformed),
        _ => Err(malformed()),
    }
}

fn malformed() -> ConnectError {
    ConnectError::tunnel_io(io::Error::new(
        io::ErrorKind::InvalidData,
        "the proxy's CONNECT response is not HTTP",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(answer: &'static [u8]) -> (Result<Vec<u8>, ConnectError>, String, Vec<u8>) {
        run_with(answer, &[]).await
    }

    async fn run_with(
        answer: &'static [u8],
        headers: &[(HeaderName, HeaderValue)],
    ) -> (Result<Vec<u8>, ConnectError>, String, Vec<u8>) {
        let (mut client, mut proxy) = tokio::io::duplex(4096);
        let own = ConnectHeaders {
            authorization: Some(HeaderValue::from_static("Basic dTpw")),
            user_agent: None,
        };
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut byte = [0u8; 1];
            while !seen.ends_with(b"\r\n\r\n") {
                proxy.read_exact(&mut byte).await.unwrap();
                seen.push(byte[0]);
            }
            let mut rest = Vec::new();
            if !answer.is_empty() {
                proxy.write_all(answer).await.unwrap();
                let _ = proxy.read_to_end(&mut rest).await;
            }
            (String::from_utf8(seen).unwrap(), rest)
        });
        let head = connect_head("origin.test:443", &own, headers);
        let result = connect_tunnel(&mut client, &head).await;
        if result.is_ok() {
            client.write_all(b"payload").await.unwrap();
        }
        drop(client);
        let (seen, rest) = server.await.unwrap();
        (result, seen, rest)
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
        let headers = [
            (
                HeaderName::from_static("x-proxy"),
                HeaderValue::from_static("1"),
            ),
            (HOST, HeaderValue::from_static("other.test")),
        ];
        let (result, seen, _) = run_with(b"HTTP/1.1 200 OK\r\n\r\n", &headers).await;
        result.expect("tunnel");
        assert_eq!(
            seen,
            "CONNECT origin.test:443 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n\
             X-Proxy: 1\r\nHost: other.test\r\n\r\n"
        );
    }

    #[test]
    fn the_user_agent_follows_the_credentials_and_a_proxy_header_replaces_it() {
        let own = ConnectHeaders {
            authorization: Some(HeaderValue::from_static("Basic dTpw")),
            user_agent: Some(HeaderValue::from_static("agent/1")),
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
