//! Building requests the way curl does: method, default headers, `-H` edits, the payload.
//!
//! Headers go out in curl's order: `Host`, `Authorization`, `Range`, `User-Agent`, `Accept`,
//! `Accept-Encoding`, `Referer`, a streamed upload's `Transfer-Encoding`, `Cookie`, the `-H`
//! headers, then `Content-Length` and `Content-Type` for a payload. A `-H` header leaves out
//! the default of the same name and goes with the other `-H` headers (a `Host` stays first),
//! its name as typed; `-H "Name:"` removes it.
//!
//! The template holds what every request of an invocation shares; what differs per URL or per
//! hop (`Host`, credentials from the URL, `Range` for `-C -`, an automatic `Referer`, cookies)
//! comes in a [`PerRequest`]. `poolcurl load` uses [`RequestTemplate::new`] and
//! [`RequestTemplate::build`]: no `Host` of its own (the pool adds it), nothing per request.
//! curl mode assembles its template in [`super::compose`].

use std::sync::Arc;

use bytes::Bytes;
use http::header::{
    CONTENT_LENGTH, CONTENT_TYPE, EXPECT, HOST, HeaderName, HeaderValue, USER_AGENT,
};
use http::{Method, Uri, Version};

use super::args::{DataArg, HeaderAction, HeaderArg, RequestArgs};
use super::data::read_data;
use super::exit::CurlError;
use super::time_cond::TimeCond;
use super::upload::Streamed;

mod build;
mod forward;
mod uploading;

pub(crate) use forward::Forwarded;

/// The `User-Agent` poolcurl sends without `-A`, as curl sends `curl/VERSION`.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!("poolcurl/", env!("CARGO_PKG_VERSION"));

/// Where a header of the template came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A default (`User-Agent`, `Accept`, and curl mode's `Accept-Encoding`, `Referer`).
    Default,
    /// A `-H` argument (or a flag that acts like one: `--json`, `-u`).
    User,
    /// Describes the payload (`Content-Length`, the default `Content-Type`); left out of a
    /// request sent without it.
    Data,
}

/// Request data larger than this asks for `100 Continue` (curl's `EXPECT_100_THRESHOLD`).
const EXPECT_DATA_ABOVE: usize = 1024 * 1024;

/// One header of the template.
#[derive(Debug, Clone)]
struct Entry {
    name: HeaderName,
    value: HeaderValue,
    source: Source,
}

/// What a request sends as its body.
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    /// No body (a GET unless `-X` says otherwise).
    None,
    /// Request data (`-d` and friends): a POST with this `Content-Type` by default.
    Data {
        /// The joined data.
        body: Bytes,
        /// The `Content-Type` sent unless `-H` sets one (`None`: none).
        content_type: Option<HeaderValue>,
    },
    /// A `-T` upload: a PUT with a `Content-Length` and no `Content-Type`.
    Upload(Bytes),
}

/// What every request of an invocation starts from.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    /// What the first request of each transfer is, whatever `-X` says: `GET`, `POST` with
    /// data, `PUT` with `-T`, `HEAD` with `-I` (curl's `httpreq`). Redirects decide on it.
    method: Method,
    /// `-X`: the method every request of the transfer is sent with, redirected ones too, as
    /// curl 7.88 sends its custom request (a 302 after `-X POST` is followed with `POST`).
    custom_method: Option<Method>,
    /// The headers, in sending order.
    headers: Vec<Entry>,
    /// Header names `-H "Name:"` removed.
    removed: Vec<HeaderName>,
    /// The payload; empty without one (and for a streamed upload).
    body: Bytes,
    /// A `-T` upload of unknown size, streamed chunked instead of `body` ([`super::upload`]).
    stream: Option<Arc<Streamed>>,
    /// Whether the body is a transfer's `-T` upload (made by [`with_upload`](Self::with_upload))
    /// or a POST that `-C`/`-r` apply to: they then shape it (`content_range`), not the
    /// response.
    uploads: bool,
    /// `-C`/`-r` on an upload or a POST's data: the `Content-Range` its requests carry.
    content_range: Option<HeaderValue>,
    /// Whether there is a payload (even empty data makes a POST).
    has_data: bool,
    /// The payload size above which a request asks for `100 Continue` on HTTP/1.1: 0 for a
    /// `-T` upload, 1 MiB for data, as curl 7.88 decides; `None` without a payload.
    expect_above: Option<usize>,
    /// The HTTP version of requests (`--http1.0`).
    version: Version,
    /// Whether requests carry their own `Host` header first (curl mode), rather than leaving
    /// it to the pool.
    host_first: bool,
    /// `--request-target`: sent instead of each URL's path and query.
    target: Option<pool::RequestTarget>,
    /// `-z`: the condition, and its `If-Modified-Since` or `If-Unmodified-Since`.
    time_condition: Option<(TimeCond, HeaderName, HeaderValue)>,
    /// `-H` names typed otherwise than in title case (`x-Custom-ID`), which curl mode's
    /// requests carry for the pool to write as typed (HTTP/1).
    spellings: Option<pool::RequestHeaderNames>,
}

/// How one request of a transfer is sent (the first, or one after a redirect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hop {
    /// The request method.
    pub(crate) method: Method,
    /// Whether the request data is sent.
    pub(crate) send_body: bool,
    /// Whether a custom `Host` from `-H` is left out: the redirect went to another host than
    /// the transfer's first.
    pub(crate) cross_host: bool,
    /// Whether the redirect went to another host, port or scheme than the transfer's first:
    /// credentials are left out then.
    pub(crate) cross_origin: bool,
    /// `--location-trusted`: credentials go to other hosts too (a custom `Host` still does
    /// not, as in curl).
    pub(crate) trusted: bool,
}

impl Hop {
    /// Whether this request leaves out credentials (`-u`, `-H Authorization`, `-H Cookie`).
    pub(crate) fn drops_credentials(&self) -> bool {
        self.cross_origin && !self.trusted
    }
}

/// Headers that differ per URL or per hop, in curl mode.
#[derive(Debug, Clone, Default)]
pub(crate) struct PerRequest {
    /// `Proxy-Authorization` through a forward proxy: its credentials sent up front, or the
    /// answer to its challenge (`--proxy-digest`).
    pub(crate) proxy_authorization: Option<HeaderValue>,
    /// curl's `Proxy-Connection: Keep-Alive` through a forward proxy, in its place among curl's
    /// own headers (tunnels' `CONNECT`s carry it as a proxy header).
    pub(crate) proxy_connection: Option<HeaderValue>,
    /// `Authorization` (from `-u` or the URL's credentials, or `--aws-sigv4`'s signature).
    pub(crate) authorization: Option<HeaderValue>,
    /// What `-v` says of the credentials `authorization` carries (`Server auth using Basic
    /// with user 'NAME'`), after the connection's lines, as curl says it.
    pub(crate) auth_note: Option<String>,
    /// `--aws-sigv4`'s date header, sent right after `Authorization` (even when `-H` sends
    /// it too, as curl does).
    pub(crate) signed_date: Option<(HeaderName, HeaderValue)>,
    /// `Range` (`-r`, `-C`).
    pub(crate) range: Option<HeaderValue>,
    /// `Referer` for this hop (`-e ";auto"` after a redirect).
    pub(crate) referer: Option<HeaderValue>,
    /// `Cookie` from `-b` and the cookie engine.
    pub(crate) cookie: Option<HeaderValue>,
    /// `Alt-Used`: the `--alt-svc` alternative the request goes to.
    pub(crate) alt_used: Option<HeaderValue>,
    /// `--digest`'s first request, which leaves its data for the answer to the challenge:
    /// `Content-Length: 0`, as curl sends it (a server may refuse a `POST` without a length),
    /// and the data's own headers (`Content-Type`) kept, as curl keeps them.
    pub(crate) empty_length: bool,
    /// The server refused `Expect: 100-continue` for this URL (`417`): do not ask again.
    pub(crate) no_expect: bool,
}

impl RequestTemplate {
    /// Assembles the template from the request flags, `-I` (`head`) and the data pieces (in
    /// command-line order).
    ///
    /// # Errors
    ///
    /// Exit 26 when a `@file` cannot be read.
    pub(crate) fn new(args: &RequestArgs, head: bool, data: &[DataArg]) -> Result<Self, CurlError> {
        let payload = if data.is_empty() {
            Payload::None
        } else {
            Payload::Data {
                body: read_data(data)?,
                content_type: Some(HeaderValue::from_static(
                    "application/x-www-form-urlencoded",
                )),
            }
        };
        Ok(Self::with_payload(args, head, payload, &[]))
    }

    /// Assembles the template with `payload`; `defaults` are extra default headers after
    /// `User-Agent` and `Accept` (curl mode's `Accept-Encoding`, `Referer`).
    pub(crate) fn with_payload(
        args: &RequestArgs,
        head: bool,
        payload: Payload,
        defaults: &[(HeaderName, HeaderValue)],
    ) -> Self {
        let method = match &payload {
            _ if head => Method::HEAD,
            Payload::None => Method::GET,
            Payload::Data { .. } => Method::POST,
            Payload::Upload(_) => Method::PUT,
        };
        let mut headers = vec![
            Entry {
                name: USER_AGENT,
                value: HeaderValue::from_static(DEFAULT_USER_AGENT),
                source: Source::Default,
            },
            Entry {
                name: http::header::ACCEPT,
                value: HeaderValue::from_static("*/*"),
                source: Source::Default,
            },
        ];
        headers.extend(defaults.iter().map(|(name, value)| Entry {
            name: name.clone(),
            value: value.clone(),
            source: Source::Default,
        }));
        let mut template = RequestTemplate {
            method,
            custom_method: args.method.clone(),
            headers,
            removed: Vec::new(),
            body: Bytes::new(),
            stream: None,
            uploads: false,
            content_range: None,
            has_data: false,
            expect_above: None,
            version: Version::HTTP_11,
            host_first: false,
            target: None,
            time_condition: None,
            spellings: None,
        };
        // Every `-H` name, so that fields of one name keep their own spellings in turn, when
        // one of them is not title case; not `Host`, which curl writes as `Host` whatever
        // was typed.
        let set: Vec<&HeaderArg> = args
            .headers
            .iter()
            .filter(|h| matches!(h.action, HeaderAction::Set(_)) && h.name != HOST)
            .collect();
        if set
            .iter()
            .any(|h| h.spelling != title_case(h.name.as_str()))
        {
            template.spellings = Some(set.iter().map(|h| h.spelling.clone()).collect());
        }
        for header in &args.headers {
            match &header.action {
                HeaderAction::Remove => template.remove(&header.name),
                HeaderAction::Set(value) => template.set_user(header.name.clone(), value.clone()),
            }
        }
        let (body, content_type, expect_above) = match payload {
            Payload::None => return template,
            Payload::Data { body, content_type } => (body, content_type, EXPECT_DATA_ABOVE),
            Payload::Upload(body) => (body, None, 0),
        };
        template.expect_above = Some(expect_above);
        template.add_data(CONTENT_LENGTH, HeaderValue::from(body.len()));
        if let Some(content_type) = content_type {
            template.add_data(CONTENT_TYPE, content_type);
        }
        template.body = body;
        template.has_data = true;
        template
    }

    /// `-H "Name:"`: sends no header of that name, defaults included.
    fn remove(&mut self, name: &HeaderName) {
        self.headers.retain(|e| e.name != name);
        self.removed.push(name.clone());
    }

    /// `-H "Name: value"`: a default of that name is left out, and this goes after the
    /// defaults, with the other `-H` headers, where curl writes its custom headers.
    fn set_user(&mut self, name: HeaderName, value: HeaderValue) {
        self.removed.retain(|n| *n != name);
        self.headers
            .retain(|e| !(e.name == name && e.source == Source::Default));
        self.headers.push(Entry {
            name,
            value,
            source: Source::User,
        });
    }

    /// A payload header, unless `-H` set or removed that name.
    fn add_data(&mut self, name: HeaderName, value: HeaderValue) {
        if !self.removed.contains(&name) && !self.headers.iter().any(|e| e.name == name) {
            self.headers.push(Entry {
                name,
                value,
                source: Source::Data,
            });
        }
    }

    /// Sets a default header (`-A`): replaces the default of that name, or removes it when
    /// `value` is `None`; a `-H` of that name wins either way.
    pub(crate) fn override_default(&mut self, name: &HeaderName, value: Option<HeaderValue>) {
        let at = self
            .headers
            .iter()
            .position(|e| e.name == name && e.source == Source::Default);
        match (at, value) {
            (Some(at), Some(value)) => self.headers[at].value = value,
            (Some(at), None) => {
                self.headers.remove(at);
            }
            (None, _) => {}
        }
    }

    /// Adds headers that act as `-H` would, after the `-H` ones (curl appends them to its `-H`
    /// list), unless `-H` set or removed that name (`--json`'s `Content-Type` and `Accept`). A
    /// default of the same name goes.
    pub(crate) fn add_implied(&mut self, implied: &[(HeaderName, HeaderValue)]) {
        let after_user = self
            .headers
            .iter()
            .rposition(|e| e.source == Source::User)
            .map(|last| last + 1);
        let first_data = || {
            self.headers
                .iter()
                .position(|e| e.source == Source::Data)
                .unwrap_or(self.headers.len())
        };
        let mut at = after_user.unwrap_or_else(first_data);
        for (name, value) in implied {
            let user_set = self
                .headers
                .iter()
                .any(|e| e.name == name && e.source == Source::User);
            if user_set || self.removed.contains(name) {
                continue;
            }
            // An implied header replaces the payload's default of the same name.
            self.headers
                .retain(|e| !(e.name == name && e.source == Source::Data));
            if let Some(default) = self
                .headers
                .iter()
                .position(|e| e.name == name && e.source == Source::Default)
            {
                self.headers.remove(default);
                at -= 1;
            }
            self.headers.insert(
                at,
                Entry {
                    name: name.clone(),
                    value: value.clone(),
                    source: Source::User,
                },
            );
            at += 1;
        }
    }

    /// Makes requests carry their own `Host` header first and use `version` (curl mode).
    pub(crate) fn curl_mode(&mut self, version: Version) {
        self.send_host();
        self.version = version;
    }

    /// Makes requests carry their own `Host` header, first: `-H`'s if it set one, none if it
    /// removed it, otherwise the URL's as curl sends it.
    pub(crate) fn send_host(&mut self) {
        self.host_first = true;
    }

    /// Writes the fields named `spelling` (any case) spelled so on HTTP/1 (`TE`, which title
    /// case would write `Te`), beside the `-H` names' spellings.
    pub(crate) fn spell(&mut self, spelling: &str) {
        self.spellings
            .get_or_insert_with(pool::RequestHeaderNames::default)
            .push(spelling);
    }

    /// Makes every request carry `cond` (`-z`), after `Cookie`, as curl orders it.
    pub(crate) fn set_time_condition(&mut self, cond: TimeCond) {
        let (name, value) = cond.header();
        self.time_condition = Some((cond, name, value));
    }

    /// The `-z` condition, if any.
    pub(crate) fn time_condition(&self) -> Option<&TimeCond> {
        self.time_condition.as_ref().map(|(cond, _, _)| cond)
    }

    /// Sends `target` instead of each URL's path and query (`--request-target`).
    pub(crate) fn set_target(&mut self, target: pool::RequestTarget) {
        self.target = Some(target);
    }

    /// The request target a request for `uri` sends: `--request-target`'s, or the URL's path
    /// and query (`/` for none).
    pub(crate) fn target_for<'a>(&'a self, uri: &'a Uri) -> &'a str {
        match &self.target {
            Some(target) => target.as_str(),
            None => uri.path_and_query().map_or("/", |p| p.as_str()),
        }
    }

    /// Whether `--request-target` replaces the URLs' targets.
    pub(crate) fn has_target(&self) -> bool {
        self.target.is_some()
    }

    /// Whether `-H` set a header of this name (it then wins over curl mode's own).
    pub(crate) fn user_sets(&self, name: &HeaderName) -> bool {
        self.headers
            .iter()
            .any(|e| e.name == name && e.source == Source::User)
    }

    /// Whether `-H "Name:"` removed this name.
    pub(crate) fn user_removes(&self, name: &HeaderName) -> bool {
        self.removed.contains(name)
    }

    /// The first request of a transfer.
    pub(crate) fn first_hop(&self) -> Hop {
        Hop {
            method: self.method.clone(),
            send_body: self.has_data,
            cross_host: false,
            cross_origin: false,
            trusted: false,
        }
    }

    /// The method `hop`'s request goes with: `-X`'s, else the hop's own.
    pub(crate) fn method_for(&self, hop: &Hop) -> Method {
        self.custom_method
            .clone()
            .unwrap_or_else(|| hop.method.clone())
    }

    /// The payload `hop` sends (empty when it sends none).
    pub(crate) fn body_for(&self, hop: &Hop) -> Bytes {
        if hop.send_body {
            self.body.clone()
        } else {
            Bytes::new()
        }
    }

    /// Whether `hop`'s request asks for `100 Continue` when it goes over HTTP/1.1 (the pool
    /// adds the header there and holds the body back: [`pool::ExpectContinue`]). curl 7.88
    /// asks for a `-T` upload with a body and for data over 1 MiB, never under `--http1.0`,
    /// and leaves it to `-H` when that names `Expect` (set: the pool honours the header;
    /// removed: nobody asks).
    pub(crate) fn expects_continue(&self, hop: &Hop) -> bool {
        let Some(above) = self.expect_above else {
            return false;
        };
        hop.send_body
            && (self.body.len() > above || self.stream.is_some())
            && self.version == Version::HTTP_11
            && !self.removed.contains(&EXPECT)
            && !self.headers.iter().any(|e| e.name == EXPECT)
    }

    /// The bytes a hop that sends data sends.
    pub(crate) fn body_len(&self, hop: &Hop) -> usize {
        if hop.send_body { self.body.len() } else { 0 }
    }
}

/// `Host` as curl sends it: the URL's host, and its port unless it is the scheme's default.
pub(crate) fn host_value(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let text = match uri.port_u16() {
        Some(port) if port != super::url::default_port(uri) => format!("{host}:{port}"),
        _ => host.to_owned(),
    };
    HeaderValue::from_str(&text).ok()
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
        let mut hop = Hop {
            method: Method::GET,
            send_body: false,
            cross_host: true,
            cross_origin: true,
            trusted: false,
        };
        let (method, headers, body) = sent(&t, &hop);
        assert_eq!(method, Method::GET);
        assert!(body.is_empty());
        assert!(
            headers
                .iter()
                .all(|(n, _)| n != "content-length" && n != "content-type" && n != "authorization")
        );
        // --location-trusted: the credentials go to the other host too.
        hop.trusted = true;
        let (_, headers, _) = sent(&t, &hop);
        assert!(headers.iter().any(|(n, _)| n == "authorization"));
    }

    #[test]
    fn head_and_explicit_methods() {
        assert_eq!(
            template(&["-I", "http://a.test/"]).first_hop().method,
            Method::HEAD
        );
        // `-X` names the method sent; the hop stays what the data makes it, for redirects.
        let put = template(&["-X", "PUT", "-d", "x", "http://a.test/"]);
        assert_eq!(put.first_hop().method, Method::POST);
        assert_eq!(put.method_for(&put.first_hop()), "PUT");
        let (sent_method, _, body) = sent(&put, &put.first_hop());
        assert_eq!((sent_method.as_str(), &body[..]), ("PUT", &b"x"[..]));
    }

    #[test]
    fn title_case_names() {
        assert_eq!(title_case("user-agent"), "User-Agent");
        assert_eq!(title_case("x-a"), "X-A");
        assert_eq!(title_case("accept"), "Accept");
    }

    #[test]
    fn uploads_and_large_data_ask_for_100_continue_as_curl_decides() {
        let expects = |argv: &[&str], payload: Payload| {
            let (args, _) = crate::curl::args::parse_test_args(argv);
            let mut t = RequestTemplate::with_payload(&args.request, false, payload, &[]);
            t.curl_mode(if argv.contains(&"--http1.0") {
                Version::HTTP_10
            } else {
                Version::HTTP_11
            });
            t.expects_continue(&t.first_hop())
        };
        let upload = |n: usize| Payload::Upload(Bytes::from(vec![b'u'; n]));
        let data = |n: usize| Payload::Data {
            body: Bytes::from(vec![b'd'; n]),
            content_type: None,
        };
        let url = "http://a.test/";
        assert!(expects(&[url], upload(1)), "any upload with a body");
        assert!(!expects(&[url], upload(0)), "an empty upload");
        assert!(
            expects(&[url], data(EXPECT_DATA_ABOVE + 1)),
            "data over 1 MiB"
        );
        assert!(!expects(&[url], data(EXPECT_DATA_ABOVE)), "data of 1 MiB");
        assert!(!expects(&["--http1.0", url], upload(1)), "HTTP/1.0");
        assert!(
            !expects(&["-H", "Expect:", url], upload(1)),
            "-H removes it"
        );
        assert!(
            !expects(&["-H", "Expect: 100-continue", url], data(1)),
            "-H sets it itself"
        );
        assert!(!expects(&[url], Payload::None));
    }

    #[test]
    fn curl_mode_sends_host_first_and_per_request_headers_in_curls_order() {
        let (args, matches) =
            crate::curl::args::parse_test_args(&["-H", "X-A: 1", "-d", "x", "http://a.test:8080/"]);
        let data = args.request.data_in_order(&matches);
        let mut t = RequestTemplate::new(&args.request, false, &data).unwrap();
        t.curl_mode(Version::HTTP_11);
        let extra = PerRequest {
            proxy_authorization: Some(HeaderValue::from_static("Digest username=\"p\"")),
            proxy_connection: Some(HeaderValue::from_static("Keep-Alive")),
            authorization: Some(HeaderValue::from_static("Basic YTpi")),
            auth_note: None,
            signed_date: Some((
                HeaderName::from_static("x-amz-date"),
                HeaderValue::from_static("20150830T123600Z"),
            )),
            range: Some(HeaderValue::from_static("bytes=0-1")),
            referer: Some(HeaderValue::from_static("http://r/")),
            cookie: Some(HeaderValue::from_static("c=1")),
            alt_used: Some(HeaderValue::from_static("alt.test:8443")),
            empty_length: false,
            no_expect: false,
        };
        let request = t
            .build_for(
                &"http://a.test:8080/".parse().unwrap(),
                &t.first_hop(),
                &extra,
            )
            .unwrap();
        let names: Vec<&str> = request.headers().keys().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "host",
                "proxy-authorization",
                "authorization",
                "x-amz-date",
                "range",
                "user-agent",
                "accept",
                "referer",
                "proxy-connection",
                "alt-used",
                "cookie",
                "x-a",
                "content-length",
                "content-type"
            ]
        );
        assert_eq!(request.headers()["host"], "a.test:8080");
    }
}
