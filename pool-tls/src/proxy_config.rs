//! Which proxy, if any, a request goes through.
//!
//! [`Proxy`] is one parsed proxy endpoint, [`NoProxy`] is a bypass list and [`ProxyConfig`]
//! ties them together: [`ProxyConfig::route`] answers "for this origin, which proxy?" with the
//! rules curl and Go's `net/http` apply to `http_proxy`, `https_proxy`, `all_proxy` and
//! `no_proxy`.
//!
//! What this module does not do: open connections, send `CONNECT`, or talk to a proxy in any
//! way; it only decides and formats (including the `Proxy-Authorization` value). SOCKS
//! proxies (`socks5://`, `socks5h://`, `socks4://`, `socks4a://`) parse here and are spoken to
//! by the connector. Unlike Go, `localhost` and loopback addresses are not bypassed
//! implicitly; list them in `no_proxy` to bypass them.

use std::fmt;
use std::net::Ipv6Addr;

use http::header::{PROXY_AUTHENTICATE, PROXY_AUTHORIZATION};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::auth::{AuthAnswer, AuthScheme, Challenged};
use crate::no_proxy::NoProxy;

/// The protocol spoken to the proxy itself (not to the origin behind it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProxyScheme {
    /// Plain-text HTTP to the proxy.
    Http,
    /// TLS to the proxy, then HTTP inside it.
    Https,
    /// SOCKS5 (RFC 1928), asking for the origin by the address the connector resolved.
    Socks5,
    /// SOCKS5, asking for the origin by name: the proxy resolves it (curl's `socks5h://`).
    Socks5h,
    /// SOCKS4, asking for the origin by the IPv4 address the connector resolved (`socks4://`,
    /// and curl's `socks://`).
    Socks4,
    /// SOCKS4a, asking for the origin by name: the proxy resolves it (`socks4a://`).
    Socks4a,
}

impl ProxyScheme {
    /// The URL scheme: `"http"`, `"https"`, `"socks5"`, `"socks5h"`, `"socks4"` or
    /// `"socks4a"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyScheme::Http => "http",
            ProxyScheme::Https => "https",
            ProxyScheme::Socks5 => "socks5",
            ProxyScheme::Socks5h => "socks5h",
            ProxyScheme::Socks4 => "socks4",
            ProxyScheme::Socks4a => "socks4a",
        }
    }

    /// The port used when the proxy URL has none: 1080 for `http` (curl's default) and the
    /// SOCKS schemes, 443 for `https`.
    pub fn default_port(self) -> u16 {
        match self {
            ProxyScheme::Https => 443,
            _ => 1080,
        }
    }

    /// Whether the proxy speaks SOCKS (4, 4a or 5): every origin goes through a tunnel, with
    /// no `CONNECT`.
    pub fn is_socks(self) -> bool {
        !matches!(self, ProxyScheme::Http | ProxyScheme::Https)
    }

    /// Whether the proxy is sent the origin's name to resolve (`socks5h://`, `socks4a://`)
    /// rather than an address the connector resolved.
    pub fn resolves_names(self) -> bool {
        matches!(self, ProxyScheme::Socks5h | ProxyScheme::Socks4a)
    }
}

/// One proxy endpoint, such as `http://user:pass@proxy.example:3128`.
///
/// Neither `Display` nor `Debug` print the password; both show `***` in its place.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    scheme: ProxyScheme,
    /// Lower-case; an IPv6 literal is stored without brackets.
    host: String,
    port: u16,
    /// Percent-decoded user name and password.
    credentials: Option<(String, String)>,
    /// Headers for the proxy alone ([`with_header`](Proxy::with_header)), in order.
    headers: Vec<(HeaderName, HeaderValue)>,
    /// For each of `headers`, whether only a tunnel's `CONNECT` carries it
    /// ([`with_connect_header`](Proxy::with_connect_header)).
    connect_only: Vec<bool>,
    /// The `User-Agent` of `CONNECT` requests ([`with_user_agent`](Proxy::with_user_agent)).
    user_agent: Option<HeaderValue>,
    /// How the credentials are presented ([`with_auth`](Proxy::with_auth)).
    auth: AuthScheme,
    /// `CONNECT` requests say HTTP/1.0 ([`with_http10_connect`](Proxy::with_http10_connect)).
    http10_connect: bool,
}

impl Proxy {
    /// Parses a proxy URL: `[scheme://][user[:password]@]host[:port][/]`.
    ///
    /// The scheme is `http` (the default when absent, as in curl), `https`, `socks5`,
    /// `socks5h` (the proxy resolves the origin's name), `socks4` (`socks` too, as curl reads
    /// it) or `socks4a` (the proxy resolves the name); anything else is an error. The user name and password are percent-decoded, so a `:`,
    /// `@`, `/`, `?` or `#` inside them must be written `%3A`, `%40`, `%2F`, `%3F`, `%23`. An
    /// IPv6 host must be bracketed (`http://[::1]:3128`). A path, query or fragment is ignored.
    pub fn parse(input: &str) -> Result<Proxy, ProxyError> {
        parse_proxy(input.trim()).map_err(|reason| ProxyError::new(input, reason))
    }

    /// Replaces the credentials with `user` and `pass`, taken verbatim (not decoded).
    pub fn with_credentials(mut self, user: impl Into<String>, pass: impl Into<String>) -> Self {
        self.credentials = Some((user.into(), pass.into()));
        self
    }

    /// Adds a header for the proxy alone (curl's `--proxy-header`): it goes on the `CONNECT`
    /// request of a tunnel, replacing the connector's own `Host` or `Proxy-Authorization` of
    /// the same name, and on every request sent through a forward proxy, after the request's
    /// own headers. It never reaches the origin through a tunnel.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self.connect_only.push(false);
        self
    }

    /// Adds a header that only a tunnel's `CONNECT` carries, in its turn among the
    /// [headers](Self::with_header); requests sent through a forward proxy do not. For a
    /// caller that places such a header in those requests itself, as curl does with its
    /// `Proxy-Connection: Keep-Alive` (among its own headers rather than after them).
    pub fn with_connect_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self.connect_only.push(true);
        self
    }

    /// Sets the `User-Agent` of the `CONNECT` requests that open tunnels through this proxy, as
    /// curl (its `-A`) and reqwest do, so a proxy's logs and rules can tell clients apart.
    /// Requests through a forward proxy carry their own `User-Agent` and are not changed; a
    /// [header](Self::with_header) named `User-Agent` replaces this one. Unset by default: the
    /// pool's `CONNECT` then carries no `User-Agent`.
    pub fn with_user_agent(mut self, value: HeaderValue) -> Self {
        self.user_agent = Some(value);
        self
    }

    /// Sets how the credentials are presented: [`AuthScheme::Basic`] (the default) sends them
    /// with every `CONNECT` and forwarded request, unasked; [`AuthScheme::Digest`] and
    /// [`AuthScheme::Any`] send nothing until the proxy answers `407` with a challenge.
    ///
    /// A tunnel's challenge is answered by the connector: the same `CONNECT` again with the
    /// answer, on the same connection when the proxy keeps it open (its `407` has a
    /// `Content-Length` of at most 64 KiB and no `Connection: close`), else on a new one. A
    /// forward proxy's `407` is the request's response: answer it with
    /// [`answer_challenge`](Self::answer_challenge) and send the request again with that
    /// `Proxy-Authorization`, which the pool does not replace. Without credentials this
    /// setting changes nothing.
    pub fn with_auth(mut self, auth: AuthScheme) -> Self {
        self.auth = auth;
        self
    }

    /// Asks for tunnels with HTTP/1.0 `CONNECT` requests (curl's `--proxy1.0`), for proxies
    /// that refuse HTTP/1.1's. Forwarded requests are not changed. Off by default.
    pub fn with_http10_connect(mut self, http10: bool) -> Self {
        self.http10_connect = http10;
        self
    }

    /// How the credentials are presented ([`with_auth`](Self::with_auth)).
    pub fn auth(&self) -> AuthScheme {
        self.auth
    }

    /// The `Proxy-Authorization` answering the challenge of a proxy's `407` whose headers are
    /// `response`, for `request`, with this proxy's credentials and [scheme](Self::with_auth);
    /// `None` without credentials or when no challenge offered can be answered. For a forward
    /// proxy's `407`, the `target` is the request's path and query, as curl sends it.
    pub fn answer_challenge(
        &self,
        response: &HeaderMap,
        request: Challenged<'_>,
    ) -> Option<AuthAnswer> {
        let credentials = self.credentials()?;
        self.auth
            .answer(response.get_all(PROXY_AUTHENTICATE), request, credentials)
    }

    /// The `Proxy-Authorization` a `CONNECT` or forwarded request carries before any
    /// challenge, when the proxy has credentials: Basic's ([`AuthScheme::Basic`]), NTLM's
    /// negotiate message ([`AuthScheme::Ntlm`]), else none.
    pub fn upfront_authorization(&self) -> Option<HeaderValue> {
        self.auth.upfront(self.credentials()?)
    }

    /// The `Proxy-Authorization` a request forwarded through this proxy (no tunnel) carries
    /// before any challenge: the [up-front credentials](Self::upfront_authorization), unless
    /// one of the [forwarded headers](Self::forwarded_headers) is a `Proxy-Authorization`,
    /// which then replaces them (as a header of that name does on a tunnel's `CONNECT`).
    pub fn forwarded_authorization(&self) -> Option<HeaderValue> {
        let replaced = self
            .forwarded_headers()
            .any(|(name, _)| name == PROXY_AUTHORIZATION);
        if replaced {
            return None;
        }
        self.upfront_authorization()
    }

    /// The `User-Agent` of this proxy's `CONNECT` requests, if one is set.
    pub fn user_agent(&self) -> Option<&HeaderValue> {
        self.user_agent.as_ref()
    }

    /// The headers for the proxy alone, in the order they were added: what a tunnel's
    /// `CONNECT` carries.
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }

    /// The headers a request sent through this proxy as a forward proxy carries after its
    /// own: [`headers`](Self::headers) but the [`CONNECT`-only](Self::with_connect_header)
    /// ones.
    pub fn forwarded_headers(&self) -> impl Iterator<Item = &(HeaderName, HeaderValue)> + '_ {
        self.headers
            .iter()
            .zip(&self.connect_only)
            .filter(|(_, only)| !**only)
            .map(|(header, _)| header)
    }

    /// The protocol spoken to the proxy.
    pub fn scheme(&self) -> ProxyScheme {
        self.scheme
    }

    /// The proxy's host in lower case; an IPv6 literal is returned without brackets (`::1`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The proxy's port, or the scheme's [default](ProxyScheme::default_port).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The decoded user name and password, if the proxy needs authentication.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The `CONNECT` request head the connector writes to this proxy to open a tunnel to
    /// `authority` (`host:port`), as written: the request line, `Host`, `Proxy-Authorization`
    /// when the proxy has credentials, the [`User-Agent`](Self::with_user_agent) when one is
    /// set, this proxy's [headers](Self::with_header) (one named `Host`,
    /// `Proxy-Authorization` or `User-Agent` replacing the connector's), and the blank line.
    /// For diagnostics such as `curl -v`; it carries the credentials in the clear.
    pub fn connect_head(&self, authority: &str) -> Vec<u8> {
        self.connect_head_with(authority, self.upfront_authorization())
    }

    /// [`connect_head`](Self::connect_head) with `authorization` as its
    /// `Proxy-Authorization` (none when `None`): the `CONNECT` that answered a challenge
    /// ([`ProxyUse::connect_authorization`](crate::ProxyUse::connect_authorization)).
    pub fn connect_head_with(
        &self,
        authority: &str,
        authorization: Option<HeaderValue>,
    ) -> Vec<u8> {
        let own = crate::tunnel::ConnectHeaders {
            authorization,
            user_agent: self.user_agent.clone(),
            http10: self.http10_connect,
        };
        crate::tunnel::connect_head(authority, &own, self.headers())
    }

    /// The `Proxy-Authorization` value, `Basic base64(user:password)`, marked sensitive.
    ///
    /// RFC 7617 forbids `:` in a user name; one is encoded as is, and the proxy will split at it.
    pub fn basic_auth(&self) -> Option<HeaderValue> {
        let (user, password) = self.credentials()?;
        Some(crate::auth::basic(user, password))
    }
}

impl fmt::Display for Proxy {
    /// Writes `scheme://[user:***@]host:port`, with the decoded user name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        if let Some((user, _)) = &self.credentials {
            write!(f, "{user}:***@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Proxy")
            .field(&format_args!("{self}"))
            .finish()
    }
}

/// Why a proxy URL whose scheme the pool does not speak is refused.
const UNSUPPORTED_SCHEME: &str =
    "unsupported proxy scheme (expected http, https, socks4, socks4a, socks5 or socks5h)";

fn parse_proxy(input: &str) -> Result<Proxy, &'static str> {
    let (scheme, rest) = match input.split_once("://") {
        None => (ProxyScheme::Http, input),
        Some((s, rest)) => match s.to_ascii_lowercase().as_str() {
            "http" => (ProxyScheme::Http, rest),
            "https" => (ProxyScheme::Https, rest),
            "socks5" => (ProxyScheme::Socks5, rest),
            "socks5h" => (ProxyScheme::Socks5h, rest),
            // curl reads a bare `socks://` as SOCKS4.
            "socks4" | "socks" => (ProxyScheme::Socks4, rest),
            "socks4a" => (ProxyScheme::Socks4a, rest),
            _ => return Err(UNSUPPORTED_SCHEME),
        },
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, host_port) = authority
        .rsplit_once('@')
        .map_or((None, authority), |(u, h)| (Some(u), h));
    let credentials = match userinfo {
        None | Some("") => None,
        Some(info) => {
            let (user, password) = info.split_once(':').unwrap_or((info, ""));
            Some((percent_decode(user)?, percent_decode(password)?))
        }
    };
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (ip, after) = bracketed.split_once(']').ok_or("unclosed '[' in host")?;
        ip.parse::<Ipv6Addr>().map_err(|_| "invalid IPv6 literal")?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or("unexpected text after ']'")?),
        };
        (ip.to_ascii_lowercase(), port)
    } else {
        let (host, port) = host_port
            .split_once(':')
            .map_or((host_port, None), |(h, p)| (h, Some(p)));
        if port.is_some_and(|p| p.contains(':')) {
            return Err("an IPv6 proxy host must be in brackets");
        }
        let valid = |b: u8| b.is_ascii_alphanumeric() || b"-._".contains(&b);
        if host.is_empty() || !host.bytes().all(valid) {
            return Err("missing or invalid host");
        }
        (host.to_ascii_lowercase(), port)
    };
    let port = match port {
        None | Some("") => scheme.default_port(),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n != 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err("invalid port"),
        },
    };
    Ok(Proxy {
        scheme,
        host,
        port,
        credentials,
        headers: Vec::new(),
        connect_only: Vec::new(),
        user_agent: None,
        auth: AuthScheme::Basic,
        http10_connect: false,
    })
}

fn percent_decode(s: &str) -> Result<String, &'static str> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let hex = |b: Option<u8>| b.and_then(|b| (b as char).to_digit(16));
        match (hex(bytes.next()), hex(bytes.next())) {
            (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
            _ => return Err("invalid percent-encoding in credentials"),
        }
    }
    String::from_utf8(out).map_err(|_| "credentials are not UTF-8 after percent-decoding")
}

/// Proxies per origin scheme plus a bypass list, usually read from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    http: Option<Proxy>,
    https: Option<Proxy>,
    all: Option<Proxy>,
    no_proxy: NoProxy,
}

impl ProxyConfig {
    /// A configuration that sends everything directly.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `proxy` for plain-text (`http://`) origins.
    pub fn http(mut self, proxy: Proxy) -> Self {
        self.http = Some(proxy);
        self
    }

    /// Uses `proxy` for TLS (`https://`) origins.
    pub fn https(mut self, proxy: Proxy) -> Self {
        self.https = Some(proxy);
        self
    }

    /// Uses `proxy` for origins whose scheme has no proxy of its own.
    pub fn all(mut self, proxy: Proxy) -> Self {
        self.all = Some(proxy);
        self
    }

    /// Sends hosts matching `no_proxy` directly.
    pub fn no_proxy(mut self, no_proxy: NoProxy) -> Self {
        self.no_proxy = no_proxy;
        self
    }

    /// Reads the process environment; see [`from_vars`](Self::from_vars) for the rules.
    /// Values that are not valid Unicode are decoded lossily, so they fail to parse.
    pub fn from_env() -> Result<Self, ProxyError> {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// Builds a configuration from variables looked up through `var`.
    ///
    /// Reads `http_proxy` (lower case only: `HTTP_PROXY` is ignored, because CGI servers put
    /// a request's `Proxy:` header there), `https_proxy`/`HTTPS_PROXY`, `all_proxy`/`ALL_PROXY`
    /// and `no_proxy`/`NO_PROXY`. The lower-case spelling wins when both are set; an empty or
    /// all-whitespace value counts as unset. A proxy value that does not parse is an error
    /// naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ProxyError> {
        let lookup = |names: &[&'static str]| {
            names
                .iter()
                .find_map(|&n| var(n).filter(|v| !v.trim().is_empty()).map(|v| (n, v)))
        };
        let proxy = |names: &[&'static str]| match lookup(names) {
            None => Ok(None),
            Some((name, value)) => Proxy::parse(&value).map(Some).map_err(|e| e.in_var(name)),
        };
        Ok(ProxyConfig {
            http: proxy(&["http_proxy"])?,
            https: proxy(&["https_proxy", "HTTPS_PROXY"])?,
            all: proxy(&["all_proxy", "ALL_PROXY"])?,
            no_proxy: lookup(&["no_proxy", "NO_PROXY"])
                .map_or_else(NoProxy::default, |(_, v)| NoProxy::parse(&v)),
        })
    }

    /// Sets the credentials of every configured proxy (curl's `--proxy-user`).
    pub fn with_credentials(self, user: &str, password: &str) -> Self {
        self.each_proxy(|proxy| proxy.with_credentials(user, password))
    }

    /// Adds a header for every configured proxy (curl's `--proxy-header`); see
    /// [`Proxy::with_header`].
    pub fn with_header(self, name: HeaderName, value: HeaderValue) -> Self {
        self.each_proxy(|proxy| proxy.with_header(name.clone(), value.clone()))
    }

    /// Adds a header for the `CONNECT`s of every configured proxy; see
    /// [`Proxy::with_connect_header`].
    pub fn with_connect_header(self, name: HeaderName, value: HeaderValue) -> Self {
        self.each_proxy(|proxy| proxy.with_connect_header(name.clone(), value.clone()))
    }

    /// Asks every configured proxy for tunnels with HTTP/1.0 `CONNECT`s; see
    /// [`Proxy::with_http10_connect`].
    pub fn with_http10_connect(self, http10: bool) -> Self {
        self.each_proxy(|proxy| proxy.with_http10_connect(http10))
    }

    /// Sets how every configured proxy's credentials are presented; see
    /// [`Proxy::with_auth`].
    pub fn with_auth(self, auth: AuthScheme) -> Self {
        self.each_proxy(|proxy| proxy.with_auth(auth))
    }

    /// Sets the `CONNECT` `User-Agent` of every configured proxy; see
    /// [`Proxy::with_user_agent`].
    pub fn with_user_agent(self, value: HeaderValue) -> Self {
        self.each_proxy(|proxy| proxy.with_user_agent(value.clone()))
    }

    /// Replaces every configured proxy with `change(proxy)`.
    fn each_proxy(mut self, change: impl Fn(Proxy) -> Proxy) -> Self {
        for proxy in [&mut self.http, &mut self.https, &mut self.all]
            .into_iter()
            .flatten()
        {
            *proxy = change(proxy.clone());
        }
        self
    }

    /// Whether no proxy is configured at all (the bypass list is not considered).
    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none() && self.all.is_none()
    }

    /// Whether any of its proxies is reached over TLS (an `https://` proxy), so that TLS
    /// settings for the proxy hop can matter.
    pub fn uses_tls(&self) -> bool {
        [&self.http, &self.https, &self.all]
            .into_iter()
            .flatten()
            .any(|proxy| proxy.scheme() == ProxyScheme::Https)
    }

    /// The proxy for a request to `host:port`, or `None` to connect directly.
    ///
    /// Picks the `https` proxy for TLS origins and the `http` proxy otherwise, falling back to
    /// `all`; returns `None` when the bypass list matches. `host` is canonical, as for
    /// [`NoProxy::matches`].
    pub fn route(&self, is_tls: bool, host: &str, port: u16) -> Option<&Proxy> {
        let proxy = if is_tls { &self.https } else { &self.http };
        let proxy = proxy.as_ref().or(self.all.as_ref())?;
        (!self.no_proxy.matches(host, port)).then_some(proxy)
    }
}

/// A proxy URL that could not be used. The message repeats the input with any password
/// replaced by `***`, and names the environment variable it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyError {
    input: String,
    reason: &'static str,
    var: Option<&'static str>,
}

impl ProxyError {
    /// The proxy URL as it was given (from the caller, or from the environment variable the
    /// error names).
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Whether the URL names a scheme the pool does not speak (`ftp://`, `socks9://`), rather
    /// than being malformed.
    pub fn is_unsupported_scheme(&self) -> bool {
        self.reason == UNSUPPORTED_SCHEME
    }

    fn new(input: &str, reason: &'static str) -> Self {
        let (input, var) = (redact(input), None);
        ProxyError { input, reason, var }
    }

    fn in_var(mut self, var: &'static str) -> Self {
        self.var = Some(var);
        self
    }
}

/// Replaces everything between the first `:` after the scheme and the last `@` with `***`,
/// so that even a malformed URL cannot leak (part of) a password into a message.
fn redact(input: &str) -> String {
    let start = match input.split_once("://") {
        Some((scheme, _)) if scheme.bytes().all(|b| b.is_ascii_alphanumeric()) => scheme.len() + 3,
        _ => 0,
    };
    let Some(at) = input.rfind('@').filter(|&at| at >= start) else {
        return input.to_owned();
    };
    match input[start..at].find(':') {
        Some(colon) => format!("{}:***{}", &input[..start + colon], &input[at..]),
        None => input.to_owned(),
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid proxy URL {:?}", self.input)?;
        if let Some(var) = self.var {
            write!(f, " in {var}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for ProxyError {}

#[cfg(test)]
mod tests {
    use super::ProxyScheme::{Http, Https};
    use super::*;
    use crate::auth::base64_encode;

    fn p(s: &str) -> Proxy {
        Proxy::parse(s).unwrap()
    }

    #[test]
    fn a_forwarded_proxy_authorization_header_replaces_the_credentials() {
        let value = HeaderValue::from_static;
        let proxy = p("http://u:pw@proxy.test:3128");
        let upfront = proxy.upfront_authorization();
        assert!(upfront.is_some());
        assert_eq!(proxy.forwarded_authorization(), upfront);
        // A CONNECT-only header replaces them on the CONNECT alone.
        let connect_only = proxy
            .clone()
            .with_connect_header(PROXY_AUTHORIZATION, value("Bearer c"));
        assert_eq!(connect_only.forwarded_authorization(), upfront);
        let forwarded = proxy.with_header(PROXY_AUTHORIZATION, value("Bearer f"));
        assert_eq!(forwarded.forwarded_authorization(), None);
        assert_eq!(p("http://proxy.test").forwarded_authorization(), None);
    }

    #[test]
    fn connect_only_headers_stay_off_forwarded_requests() {
        let value = HeaderValue::from_static;
        let proxy = p("http://proxy.test:3128")
            .with_header(HeaderName::from_static("x-a"), value("1"))
            .with_connect_header(HeaderName::from_static("proxy-connection"), value("k"))
            .with_header(HeaderName::from_static("x-b"), value("2"));
        let names = |headers: Vec<&(HeaderName, HeaderValue)>| -> Vec<String> {
            headers.iter().map(|(n, _)| n.to_string()).collect()
        };
        assert_eq!(
            names(proxy.headers().iter().collect()),
            ["x-a", "proxy-connection", "x-b"]
        );
        assert_eq!(names(proxy.forwarded_headers().collect()), ["x-a", "x-b"]);
        assert_eq!(
            String::from_utf8(proxy.connect_head("o.test:443")).unwrap(),
            "CONNECT o.test:443 HTTP/1.1\r\nHost: o.test:443\r\nX-A: 1\r\n\
             Proxy-Connection: k\r\nX-B: 2\r\n\r\n"
        );
    }

    #[test]
    fn parses_urls() {
        let cases = [
            ("http://Proxy.Example:3128/", Http, "proxy.example", 3128),
            ("  proxy.example ", Http, "proxy.example", 1080),
            ("proxy.example:8080", Http, "proxy.example", 8080),
            ("HTTPS://proxy/ignored?path", Https, "proxy", 443),
            ("http://[::1]:3128", Http, "::1", 3128),
            ("https://[FD00::A]", Https, "fd00::a", 443),
        ];
        for (input, scheme, host, port) in cases {
            let x = p(input);
            assert_eq!(
                (x.scheme(), x.host(), x.port()),
                (scheme, host, port),
                "{input}"
            );
            assert_eq!(x.credentials(), None);
        }
    }

    #[test]
    fn uses_tls_when_any_proxy_is_https() {
        assert!(!ProxyConfig::new().uses_tls());
        assert!(!ProxyConfig::new().all(p("http://a:1")).uses_tls());
        let mixed = ProxyConfig::new()
            .http(p("http://a:1"))
            .https(p("https://b:2"));
        assert!(mixed.uses_tls());
        assert!(ProxyConfig::new().all(p("https://c")).uses_tls());
    }

    #[test]
    fn decodes_userinfo() {
        let creds = |s| {
            p(s).credentials()
                .map(|(u, p)| (u.to_owned(), p.to_owned()))
        };
        let pair = |u: &str, p: &str| Some((u.to_owned(), p.to_owned()));
        assert_eq!(
            creds("http://us%40er:p%3Ass%2Fw@proxy:3128"),
            pair("us@er", "p:ss/w")
        );
        assert_eq!(creds("http://user@proxy"), pair("user", ""));
        assert_eq!(creds("a:b@c@proxy"), pair("a", "b@c"));
        assert_eq!(creds("http://@proxy"), None);
        let x = p("proxy:1").with_credentials("me", "secret");
        assert_eq!(x.credentials(), Some(("me", "secret")));
    }

    #[test]
    fn rejects_bad_input() {
        let err = Proxy::parse("socks6://proxy:1080").unwrap_err();
        assert!(err.to_string().contains("socks4a"), "{err}");
        assert!(err.is_unsupported_scheme());
        assert_eq!(err.input(), "socks6://proxy:1080");
        let from_env =
            ProxyConfig::from_vars(|var| (var == "http_proxy").then(|| "ftp://x".into()))
                .unwrap_err();
        assert_eq!(from_env.input(), "ftp://x");
        assert!(
            !Proxy::parse("http://p q")
                .unwrap_err()
                .is_unsupported_scheme()
        );
        let socks = Proxy::parse("socks5h://u:p@proxy").unwrap();
        assert_eq!(
            (socks.scheme(), socks.port(), socks.credentials()),
            (ProxyScheme::Socks5h, 1080, Some(("u", "p")))
        );
        assert!(socks.scheme().is_socks() && !ProxyScheme::Https.is_socks());
        let scheme = |s| Proxy::parse(s).unwrap().scheme();
        assert_eq!(
            ["socks4://p", "socks://p", "SOCKS4A://p"].map(scheme),
            [
                ProxyScheme::Socks4,
                ProxyScheme::Socks4,
                ProxyScheme::Socks4a
            ]
        );
        assert!(ProxyScheme::Socks4a.resolves_names() && !ProxyScheme::Socks4.resolves_names());
        assert_eq!(
            Proxy::parse("SOCKS5://p:9").unwrap().to_string(),
            "socks5://p:9"
        );
        let bad = "|ftp://p|http://|http://p:0|http://p:99999|http://p:+80|http://p q|p:80:80\
                   |http://::1:3128|http://[::1|http://[nope]:1|http://[::1]x|u:%zz@p|u:%ff@p";
        for input in bad.split('|') {
            assert!(Proxy::parse(input).is_err(), "{input:?}");
        }
    }

    #[test]
    fn display_debug_and_errors_hide_password() {
        let x = p("http://a%20b:hunter2@proxy:3128");
        assert_eq!(x.to_string(), "http://a b:***@proxy:3128");
        assert_eq!(p("https://[::1]").to_string(), "https://[::1]:443");
        let config = ProxyConfig::new().all(x.clone());
        for text in [format!("{x:?}"), format!("{config:?}")] {
            assert!(!text.contains("hunter2") && text.contains("***"), "{text}");
        }
        for input in [
            "http://u:hunter2@p:bad",
            "http://u:hun/ter2@p",
            "u:hun://ter2@p",
        ] {
            let err = Proxy::parse(input).unwrap_err();
            assert!(!format!("{err} {err:?}").contains("ter2"), "{err}");
            assert!(err.to_string().contains("u:***@p"), "{err}");
        }
    }

    #[test]
    fn base64_and_basic_auth() {
        let vectors = [
            "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy",
        ];
        for (len, expected) in vectors.into_iter().enumerate() {
            assert_eq!(base64_encode(&b"foobar"[..len]), expected); // RFC 4648 section 10
        }
        assert_eq!(base64_encode(&[0xfb, 0xff, 0xbf]), "+/+/");
        let value = p("http://Aladdin:open%20sesame@proxy")
            .basic_auth()
            .unwrap();
        assert_eq!(value, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert!(value.is_sensitive());
        assert_eq!(p("proxy").basic_auth(), None);
    }

    #[test]
    fn no_proxy_star_and_empty_entries() {
        assert!(NoProxy::parse("*").matches("anything", 80));
        assert!(NoProxy::parse("example.com, *").matches("10.0.0.1", 1));
        let empty = NoProxy::parse(" , ,");
        assert!(empty.is_empty() && !empty.matches("example.com", 80));
        assert_eq!(
            NoProxy::parse("0.0.0.0/99, 1.2.3.4/x, a/b, :1"),
            NoProxy::default()
        );
    }

    #[test]
    fn no_proxy_domains() {
        for list in [
            "example.com",
            ".example.com",
            "*.example.com",
            " EXAMPLE.com. ,",
        ] {
            let np = NoProxy::parse(list);
            assert!(np.matches("example.com", 443) && np.matches("a.b.example.com", 80));
            assert!(np.matches("A.Example.COM.", 80), "{list}");
            for other in ["badexample.com", "example.com.evil", "com", "93.184.216.34"] {
                assert!(!np.matches(other, 80), "{list} {other}");
            }
        }
    }

    #[test]
    fn no_proxy_ip_literals_and_cidr() {
        let np = NoProxy::parse("192.168.1.10, [::1], FE80::2, 10.0.0.0/8, fd00::/8");
        assert!(np.matches("192.168.1.10", 80) && !np.matches("192.168.1.11", 80));
        assert!(np.matches("::1", 80) && np.matches("[::1]", 80) && np.matches("fe80::2", 1));
        assert!(np.matches("10.255.0.1", 80) && !np.matches("11.0.0.1", 80));
        assert!(np.matches("fd12::1", 80) && !np.matches("fe00::1", 80));
        assert!(!np.matches("10.example", 80));
        assert!(NoProxy::parse("0.0.0.0/0").matches("8.8.8.8", 53));
        assert!(NoProxy::parse("::/0").matches("2001:db8::1", 53));
        assert!(!NoProxy::parse("::/0").matches("8.8.8.8", 53));
        assert!(NoProxy::parse("10.1.2.3/32").matches("10.1.2.3", 1));
    }

    #[test]
    fn no_proxy_host_port() {
        let np = NoProxy::parse("example.com:8080, 10.0.0.1:443, [::1]:8443");
        assert!(np.matches("example.com", 8080) && np.matches("a.example.com", 8080));
        assert!(!np.matches("example.com", 80));
        assert!(np.matches("10.0.0.1", 443) && !np.matches("10.0.0.1", 80));
        assert!(np.matches("::1", 8443) && !np.matches("::1", 80));
    }

    fn from(pairs: &[(&str, &str)]) -> Result<ProxyConfig, ProxyError> {
        ProxyConfig::from_vars(|name| {
            let found = pairs.iter().find(|(k, _)| *k == name);
            found.map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn from_vars_reads_each_variable() {
        let vars = [
            ("http_proxy", "h:1"),
            ("https_proxy", "https://s:2"),
            ("all_proxy", "a:3"),
        ];
        let config = from(&[vars[0], vars[1], vars[2], ("no_proxy", "internal")]).unwrap();
        let expected = ProxyConfig::new().http(p("h:1")).https(p("https://s:2"));
        let expected = expected.all(p("a:3")).no_proxy(NoProxy::parse("internal"));
        assert_eq!(config, expected);
        assert!(from(&[]).unwrap().is_empty());
    }

    #[test]
    fn from_vars_case_precedence_and_empty_values() {
        let config = from(&[
            ("HTTP_PROXY", "evil:1"),
            ("HTTPS_PROXY", "upper:1"),
            ("https_proxy", "lower:1"),
            ("ALL_PROXY", "all:1"),
            ("NO_PROXY", "upper.test"),
        ]);
        let expected = ProxyConfig::new().https(p("lower:1")).all(p("all:1"));
        assert_eq!(
            config.unwrap(),
            expected.no_proxy(NoProxy::parse("upper.test"))
        );
        let config = from(&[("no_proxy", "lower.test"), ("NO_PROXY", "upper.test")]);
        assert_eq!(
            config.unwrap(),
            ProxyConfig::new().no_proxy(NoProxy::parse("lower.test"))
        );
        let config = from(&[
            ("https_proxy", " "),
            ("HTTPS_PROXY", "upper:1"),
            ("all_proxy", ""),
        ]);
        assert_eq!(config.unwrap(), ProxyConfig::new().https(p("upper:1")));
    }

    #[test]
    fn from_vars_invalid_value_names_variable() {
        let err = from(&[("ALL_PROXY", "ftp://u:pw@h")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ALL_PROXY") && err.contains("scheme"), "{err}");
        assert!(!err.contains("pw"), "{err}");
    }

    #[test]
    fn route_choices() {
        let no_proxy = NoProxy::parse("local.test, 10.0.0.0/8");
        let config = ProxyConfig::new()
            .http(p("h:1"))
            .https(p("s:1"))
            .no_proxy(no_proxy);
        assert_eq!(config.route(false, "example.com", 80), Some(&p("h:1")));
        assert_eq!(config.route(true, "example.com", 443), Some(&p("s:1")));
        assert_eq!(config.route(true, "a.local.test", 443), None);
        assert_eq!(config.route(false, "10.1.1.1", 80), None);
        let config = ProxyConfig::new().https(p("s:1")).all(p("a:1"));
        assert_eq!(config.route(false, "example.com", 80), Some(&p("a:1")));
        assert_eq!(config.route(true, "example.com", 443), Some(&p("s:1")));
        assert_eq!(ProxyConfig::new().route(true, "example.com", 443), None);
        assert!(!config.is_empty() && ProxyConfig::new().is_empty());
    }
}
