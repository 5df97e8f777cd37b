//! `-w '%{size_request}'`: the bytes of a request as curl 7.88 counts them.
//!
//! curl writes every request as HTTP/1 text first (for HTTP/2 too, before it becomes HEADERS),
//! and counts that text: the request line, each header line, the blank line, and request data
//! (`-d`, `--json`, `--data-urlencode`, ...) that goes out with an HTTP/1 head. An HTTP/2
//! request line says `HTTP/2`; its data goes in DATA frames and is not counted, and neither is
//! a `-F` or `-T` body, which curl sends after the head. A transfer that follows redirects
//! counts every request it sent.
//!
//! Through a forward proxy the caller passes the absolute-form target and the proxy's headers
//! ([`super::request::Forwarded`]), which curl writes into the same text.
//!
//! What this does not count: the bytes of a `CONNECT` to a proxy, and HPACK's compression
//! (curl does not count it either: the figure is the text, not the wire).

use http::{HeaderMap, Method};

/// The bytes curl counts for one request: `method` with request target `target` (the URL's
/// path and query, or `--request-target`), `headers` as the request carries them (curl mode's
/// requests carry their own `Host`, as curl's do), and `data` bytes of request data sent with
/// the head.
pub(crate) fn request_size(
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    http2: bool,
    data: usize,
) -> u64 {
    const CRLF: usize = 2;
    let target = target.len().max(1);
    let version = if http2 { "HTTP/2" } else { "HTTP/1.1" };
    let mut size = method.as_str().len() + 1 + target + 1 + version.len() + CRLF;
    for (name, value) in headers {
        size += name.as_str().len() + ": ".len() + value.len() + CRLF;
    }
    size += CRLF;
    if !http2 {
        size += data;
    }
    size as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| {
                (
                    http::HeaderName::from_static(n),
                    HeaderValue::from_static(v),
                )
            })
            .collect()
    }

    #[test]
    fn a_get_counts_its_head_as_curl_does() {
        // curl 7.88.1 prints 79 for `curl -w '%{size_request}' http://127.0.0.1:18080/`.
        let h = headers(&[
            ("host", "127.0.0.1:18080"),
            ("user-agent", "curl/7.88.1"),
            ("accept", "*/*"),
        ]);
        assert_eq!(request_size(&Method::GET, "/", &h, false, 0), 79);
        // Over HTTP/2 the request line says HTTP/2 (77 in curl 7.88.1).
        assert_eq!(request_size(&Method::GET, "/", &h, true, 0), 77);
    }

    #[test]
    fn data_counts_over_http1_only() {
        let h = headers(&[("host", "a"), ("content-length", "5")]);
        let head = "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\n".len() as u64;
        assert_eq!(request_size(&Method::POST, "/", &h, false, 5), head + 5);
        assert_eq!(request_size(&Method::POST, "/", &h, true, 5), head - 2);
    }
}
