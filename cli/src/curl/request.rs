//! Building requests the way curl does: method, default headers, `-H` edits, request data.
//!
//! Headers go out in curl's order: `Host` (added by the pool for HTTP/1.1 unless `-H` sets it),
//! `User-Agent`, `Accept`, the `-H` headers, then `Content-Length` and `Content-Type` for
//! request data. A `-H` header replaces a default of the same name in place; `-H "Name:"`
//! removes it.

use std::io::Read;

use bytes::Bytes;
use http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HOST, HeaderName, HeaderValue, USER_AGENT,
};
use http::{Method, Request, Uri};
use http_body_util::Full;

use super::args::{DataArg, HeaderAction, RequestArgs};
use super::exit::CurlError;

/// Where a header of the template came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A default (`User-Agent`, `Accept`).
    Default,
    /// A `-H` argument.
    User,
    /// Describes the request data (`Content-Length`, the default `Content-Type`); left out of a
    /// request sent without the data.
    Data,
}

/// One header of the template.
#[derive(Debug, Clone)]
struct Entry {
    name: HeaderName,
    value: HeaderValue,
    source: Source,
}

/// What every request of an invocation starts from.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    /// The method of the first request of each transfer.
    method: Method,
    /// The headers, in sending order.
    headers: Vec<Entry>,
    /// The request data (`-d` pieces joined with `&`); empty without data.
    body: Bytes,
    /// Whether data was given (even empty data makes a POST).
    has_data: bool,
}

/// How one request of a transfer is sent (the first, or one after a redirect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hop {
    /// The request method.
    pub(crate) method: Method,
    /// Whether the request data is sent.
    pub(crate) send_body: bool,
    /// Whether credentials and a custom `Host` from `-H` are left out (the redirect went to
    /// another host).
    pub(crate) cross_host: bool,
}

impl RequestTemplate {
    /// Assembles the template from the request flags, `-I` (`head`) and the data pieces (in
    /// command-line order).
    ///
    /// # Errors
    ///
    /// Exit 26 when a `@file` cannot be read.
    pub(crate) fn new(args: &RequestArgs, head: bool, data: &[DataArg]) -> Result<Self, CurlError> {
        let has_data = !data.is_empty();
        let body = read_data(data)?;
        let method = match &args.method {
            Some(method) => method.clone(),
            None if head => Method::HEAD,
            None if has_data => Method::POST,
            None => Method::GET,
        };
        let user_agent = concat!("poolcurl/", env!("CARGO_PKG_VERSION"));
        let mut headers = vec![
            Entry {
                name: USER_AGENT,
                value: HeaderValue::from_static(user_agent),
                source: Source::Default,
            },
            Entry {
                name: http::header::ACCEPT,
                value: HeaderValue::from_static("*/*"),
                source: Source::Default,
            },
        ];
        let mut removed: Vec<HeaderName> = Vec::new();
        for header in &args.headers {
            match &header.action {
                HeaderAction::Remove => {
                    headers.retain(|e| e.name != header.name);
                    removed.push(header.name.clone());
                }
                HeaderAction::Set(value) => {
                    removed.retain(|name| *name != header.name);
                    let entry = Entry {
                        name: header.name.clone(),
                        value: value.clone(),
                        source: Source::User,
                    };
                    match headers
                        .iter()
                        .position(|e| e.name == header.name && e.source == Source::Default)
                    {
                        Some(at) => headers[at] = entry,
                        None => headers.push(entry),
                    }
                }
            }
        }
        if has_data {
            let mut add = |name: HeaderName, value: HeaderValue| {
                if !removed.contains(&name) && !headers.iter().any(|e| e.name == name) {
                    headers.push(Entry {
                        name,
                        value,
                        source: Source::Data,
                    });
                }
            };
            add(CONTENT_LENGTH, HeaderValue::from(body.len()));
            add(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
        }
        Ok(RequestTemplate {
            method,
            headers,
            body,
            has_data,
        })
    }

    /// The first request of a transfer.
    pub(crate) fn first_hop(&self) -> Hop {
        Hop {
            method: self.method.clone(),
            send_body: self.has_data,
            cross_host: false,
        }
    }

    /// The bytes a hop that sends data sends.
    pub(crate) fn body_len(&self, hop: &Hop) -> usize {
        if hop.send_body { self.body.len() } else { 0 }
    }

    /// Builds the request for `uri` as `hop` says.
    ///
    /// # Errors
    ///
    /// Exit 3 if `http` refuses the URI (it was parsed by the same crate, so this does not
    /// happen in practice).
    pub(crate) fn build(&self, uri: &Uri, hop: &Hop) -> Result<Request<Full<Bytes>>, CurlError> {
        let mut builder = Request::builder()
            .method(hop.method.clone())
            .uri(uri.clone());
        for entry in &self.headers {
            if entry.source == Source::Data && !hop.send_body {
                continue;
            }
            let credential = [AUTHORIZATION, COOKIE, HOST].contains(&entry.name);
            if entry.source == Source::User && hop.cross_host && credential {
                continue;
            }
            builder = builder.header(entry.name.clone(), entry.value.clone());
        }
        let body = if hop.send_body {
            self.body.clone()
        } else {
            Bytes::new()
        };
        builder
            .body(Full::new(body))
            .map_err(|_| CurlError::malformed_url())
    }
}

/// Reads and joins the data pieces: `-d @file` without CR and LF, `--data-binary @file` as
/// is, `@-` from stdin; pieces are joined with `&`.
fn read_data(data: &[DataArg]) -> Result<Bytes, CurlError> {
    let mut body = Vec::new();
    for (i, piece) in data.iter().enumerate() {
        if i > 0 {
            body.push(b'&');
        }
        match piece {
            DataArg::Ascii(text) => match text.strip_prefix('@') {
                Some(path) => body.extend(
                    read_source(path)?
                        .into_iter()
                        .filter(|b| *b != b'\r' && *b != b'\n'),
                ),
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Binary(text) => match text.strip_prefix('@') {
                Some(path) => body.extend(read_source(path)?),
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Raw(text) => body.extend_from_slice(text.as_bytes()),
        }
    }
    Ok(Bytes::from(body))
}

/// The contents of a `@file` argument (`-` is stdin).
///
/// # Errors
///
/// Exit 26 when it cannot be read.
pub(crate) fn read_source(path: &str) -> Result<Vec<u8>, CurlError> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CurlError::read_failed(path, &e))?;
        return Ok(bytes);
    }
    std::fs::read(path).map_err(|e| CurlError::read_failed(path, &e))
}

/// A header name as curl shows and sends it on HTTP/1.1: `user-agent` -> `User-Agent`.
pub(crate) fn title_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = c == '-';
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(argv: &[&str]) -> RequestTemplate {
        let (args, matches) = crate::curl::args::parse_test_args(argv);
        let data = args.request.data_in_order(&matches);
        RequestTemplate::new(&args.request, args.head, &data).unwrap()
    }

    fn sent(template: &RequestTemplate, hop: &Hop) -> (Method, Vec<(String, String)>, Bytes) {
        use http_body_util::BodyExt;
        let request = template
            .build(&"http://a.test/".parse().unwrap(), hop)
            .unwrap();
        let headers = request
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        let method = request.method().clone();
        let body = futures_body(request.into_body().collect());
        (method, headers, body.expect("Full never fails").to_bytes())
    }

    /// `Full` is ready on first poll; no runtime needed.
    fn futures_body<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("Full bodies are always ready"),
        }
    }

    #[test]
    fn defaults_are_a_get_with_user_agent_and_accept() {
        let t = template(&["http://a.test/"]);
        let (method, headers, body) = sent(&t, &t.first_hop());
        assert_eq!(method, Method::GET);
        assert_eq!(headers[0].0, "user-agent");
        assert!(headers[0].1.starts_with("poolcurl/"));
        assert_eq!(headers[1], ("accept".into(), "*/*".into()));
        assert!(body.is_empty());
    }

    #[test]
    fn header_flags_replace_remove_and_add() {
        let t = template(&[
            "-H",
            "Accept: text/plain",
            "-H",
            "User-Agent:",
            "-H",
            "X-A: 1",
            "-H",
            "X-A: 2",
            "http://a.test/",
        ]);
        let (_, headers, _) = sent(&t, &t.first_hop());
        let names: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            names,
            [("accept", "text/plain"), ("x-a", "1"), ("x-a", "2")]
        );
    }

    #[test]
    fn data_makes_a_form_post_and_joins_with_ampersand() {
        let t = template(&["-d", "a=1", "-d", "b=2", "http://a.test/"]);
        let (method, headers, body) = sent(&t, &t.first_hop());
        assert_eq!(method, Method::POST);
        assert_eq!(body, "a=1&b=2");
        assert!(headers.contains(&("content-length".into(), "7".into())));
        assert!(headers.contains(&(
            "content-type".into(),
            "application/x-www-form-urlencoded".into()
        )));

        let t = template(&[
            "-d",
            "x",
            "-H",
            "Content-Type: text/plain",
            "http://a.test/",
        ]);
        let (_, headers, _) = sent(&t, &t.first_hop());
        let types: Vec<_> = headers
            .iter()
            .filter(|(n, _)| n == "content-type")
            .collect();
        assert_eq!(
            types,
            [&("content-type".to_owned(), "text/plain".to_owned())]
        );
    }

    #[test]
    fn a_hop_without_data_drops_the_data_headers() {
        let t = template(&["-d", "x=1", "-H", "Authorization: secret", "http://a.test/"]);
        let hop = Hop {
            method: Method::GET,
            send_body: false,
            cross_host: true,
        };
        let (method, headers, body) = sent(&t, &hop);
        assert_eq!(method, Method::GET);
        assert!(body.is_empty());
        assert!(
            headers
                .iter()
                .all(|(n, _)| n != "content-length" && n != "content-type" && n != "authorization")
        );
    }

    #[test]
    fn head_and_explicit_methods() {
        assert_eq!(
            template(&["-I", "http://a.test/"]).first_hop().method,
            Method::HEAD
        );
        assert_eq!(
            template(&["-X", "PUT", "-d", "x", "http://a.test/"])
                .first_hop()
                .method,
            "PUT"
        );
    }

    #[test]
    fn title_case_names() {
        assert_eq!(title_case("user-agent"), "User-Agent");
        assert_eq!(title_case("x-a"), "X-A");
        assert_eq!(title_case("accept"), "Accept");
    }
}
