//! Canonical origins: the scheme, host and port a connection is keyed by.
//!
//! An [`OriginKey`] is the identity of a pool cell: two requests share connections only when
//! their origins are equal. Canonicalization follows what a user of an HTTP client expects to be
//! "the same server", and nothing more clever:
//!
//! * the scheme is `http` or `https`, and the two are different origins;
//! * the host is lower-cased; IPv6 literals are stored in their canonical text form
//!   (`[0:0::1]` and `[::1]` are the same origin) without brackets;
//! * an absent port takes the scheme's default, so `http://a` and `http://a:80` are equal and the
//!   default port is elided when the key is displayed;
//! * user information (`user:pass@`) is not part of the origin;
//! * a trailing dot and IDN spellings are kept distinct (`example.com.` is not `example.com`),
//!   because resolving them is the resolver's business, not the pool's.
//!
//! # Borrowed lookup
//!
//! A reuse hit must not allocate, so cells are found with an [`OriginLookup`]: a borrowed view of
//! a URI's origin that hashes and compares exactly like the owned key it designates
//! (hashbrown's [`Equivalent`]). Canonicalizing a mixed-case name or a non-canonical IPv6 literal
//! happens in a stack buffer.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hashbrown::Equivalent;
use http::Uri;

/// The URI schemes the pool serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// Cleartext HTTP (`http://`).
    Http,
    /// HTTP over TLS (`https://`).
    Https,
}

impl Scheme {
    /// The scheme's default port: 80 or 443.
    pub const fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// Whether connections to this scheme use TLS.
    pub const fn is_tls(self) -> bool {
        matches!(self, Scheme::Https)
    }

    /// The scheme as it is written in a URI.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn parse(s: &str) -> Option<Scheme> {
        if s.eq_ignore_ascii_case("http") {
            Some(Scheme::Http)
        } else if s.eq_ignore_ascii_case("https") {
            Some(Scheme::Https)
        } else {
            None
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of host an origin names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostKind {
    /// A registered name to be resolved (`example.com`, `localhost`).
    Name,
    /// An IPv4 literal.
    Ipv4,
    /// An IPv6 literal (written in brackets in a URI).
    Ipv6,
}

/// The canonical identity of an HTTP origin: scheme, host and port.
///
/// See the [module documentation](self) for the canonicalization rules.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OriginKey {
    /// `http` or `https`.
    scheme: Scheme,
    /// Lower-cased name, or an IP literal in canonical text form without brackets.
    host: Box<str>,
    /// The explicit port, or the scheme's default.
    port: u16,
    /// What `host` is; derived from `host` at construction.
    kind: HostKind,
}

/// Why a URI does not designate an origin the pool can serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidOrigin {
    /// The URI has no scheme (a relative reference such as `/path`).
    MissingScheme,
    /// The scheme is neither `http` nor `https`.
    UnsupportedScheme(String),
    /// The URI has no host.
    MissingHost,
    /// The host is empty or longer than a DNS name may be.
    InvalidHost(String),
    /// The port is 0, above 65535, or not written in digits alone (`:+80`).
    InvalidPort,
}

impl fmt::Display for InvalidOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidOrigin::MissingScheme => {
                f.write_str("URI has no scheme (expected http or https)")
            }
            InvalidOrigin::UnsupportedScheme(s) => write!(f, "unsupported URI scheme {s:?}"),
            InvalidOrigin::MissingHost => f.write_str("URI has no host"),
            InvalidOrigin::InvalidHost(h) => write!(f, "invalid host {h:?}"),
            InvalidOrigin::InvalidPort => f.write_str("the port must be a number from 1 to 65535"),
        }
    }
}

impl std::error::Error for InvalidOrigin {}

/// Longest host we canonicalize: a DNS name is at most 253 characters, and the canonical text of
/// an IPv6 literal is at most 39.
const MAX_HOST_LEN: usize = 255;

impl OriginKey {
    /// Builds the canonical origin of `uri`.
    ///
    /// # Errors
    ///
    /// Fails when the URI is relative, uses a scheme other than `http`/`https`, has no host, or
    /// names port 0, a port above 65535 or one written with a sign.
    pub fn from_uri(uri: &Uri) -> Result<OriginKey, InvalidOrigin> {
        OriginLookup::from_uri(uri).map(|lookup| lookup.to_key())
    }

    /// Builds an origin from its parts, applying the same canonicalization as
    /// [`from_uri`](Self::from_uri). `host` may be an IPv6 literal with or without brackets.
    ///
    /// # Errors
    ///
    /// Fails when the host is empty or too long, or the port is 0.
    pub fn new(scheme: Scheme, host: &str, port: u16) -> Result<OriginKey, InvalidOrigin> {
        let (host, kind) = canonicalize(host)?;
        if port == 0 {
            return Err(InvalidOrigin::InvalidPort);
        }
        Ok(OriginKey {
            scheme,
            host: host.as_str().into(),
            port,
            kind,
        })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The canonical host: a lower-cased name, or an IP literal without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, explicit or the scheme's default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the host is a name or an IP literal.
    pub fn host_kind(&self) -> HostKind {
        self.kind
    }

    /// The host as an IP address when it is an IP literal.
    pub fn ip(&self) -> Option<IpAddr> {
        match self.kind {
            HostKind::Name => None,
            _ => self.host.parse().ok(),
        }
    }

    /// Whether connections to this origin use TLS.
    pub fn is_tls(&self) -> bool {
        self.scheme.is_tls()
    }

    /// The value of a `Host` header (and of `:authority`) for this origin: the host, bracketed
    /// when it is an IPv6 literal, followed by `:port` unless the port is the scheme's default.
    pub fn authority(&self) -> String {
        let mut s = String::with_capacity(self.host.len() + 8);
        self.write_authority(&mut s)
            .expect("writing to a String cannot fail");
        s
    }

    fn write_authority(&self, f: &mut impl fmt::Write) -> fmt::Result {
        match self.kind {
            HostKind::Ipv6 => write!(f, "[{}]", self.host)?,
            _ => f.write_str(&self.host)?,
        }
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }

    /// A borrowed view of this key, for comparisons with lookups.
    fn as_lookup(&self) -> OriginLookup<'_> {
        OriginLookup {
            scheme: self.scheme,
            host: HostText::Borrowed(&self.host),
            port: self.port,
            kind: self.kind,
        }
    }
}

impl Hash for OriginKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_lookup().hash(state)
    }
}

impl fmt::Display for OriginKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        self.write_authority(f)
    }
}

impl fmt::Debug for OriginKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OriginKey({self})")
    }
}

/// A buffer holding a canonicalized host while a lookup is in progress.
struct HostBuf {
    bytes: [u8; MAX_HOST_LEN],
    len: usize,
}

impl HostBuf {
    fn new() -> HostBuf {
        HostBuf {
            bytes: [0; MAX_HOST_LEN],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII is ever written into the buffer.
        std::str::from_utf8(&self.bytes[..self.len]).expect("host buffer holds ASCII")
    }
}

impl fmt::Write for HostBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > MAX_HOST_LEN {
            return Err(fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Canonicalizes `raw` (possibly bracketed, possibly mixed case). The common case (a lower-case
/// name or an IPv4 literal) borrows `raw` and touches no buffer; only text that must change is
/// written into a (heap) buffer.
/// Whether the URI's authority writes a port, for when `http` could not read it as one: the
/// `http` crate answers "no port" both when there is none and when the digits do not fit in 16
/// bits, and only the first may fall back to the scheme's default, or `:99999` would quietly
/// reach port 80. An empty port (`host:`) is no port, as for curl.
fn has_port_text(uri: &Uri) -> bool {
    let Some(authority) = uri.authority() else {
        return false;
    };
    let host_port = authority
        .as_str()
        .rsplit_once('@')
        .map_or(authority.as_str(), |(_, host_port)| host_port);
    match host_port.rfind(':') {
        // A colon inside an IPv6 literal's brackets is not a port separator.
        Some(i) => !host_port[i..].contains(']') && i + 1 < host_port.len(),
        None => false,
    }
}

fn canonicalize(raw: &str) -> Result<(HostText<'_>, HostKind), InvalidOrigin> {
    let invalid = || InvalidOrigin::InvalidHost(raw.to_owned());
    let unbracketed = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
    if let Some(inner) = unbracketed.or_else(|| raw.contains(':').then_some(raw)) {
        let addr: Ipv6Addr = inner.parse().map_err(|_| invalid())?;
        let mut buf = Box::new(HostBuf::new());
        fmt::write(&mut *buf, format_args!("{addr}")).map_err(|_| invalid())?;
        return Ok((HostText::Buffered(buf), HostKind::Ipv6));
    }
    if raw.is_empty() || raw.len() > MAX_HOST_LEN || !raw.is_ascii() {
        return Err(invalid());
    }
    if raw.as_bytes()[0].is_ascii_digit() && raw.parse::<Ipv4Addr>().is_ok() {
        return Ok((HostText::Borrowed(raw), HostKind::Ipv4));
    }
    if !raw.bytes().any(|b| b.is_ascii_uppercase()) {
        return Ok((HostText::Borrowed(raw), HostKind::Name));
    }
    let mut buf = Box::new(HostBuf::new());
    for (dst, src) in buf.bytes.iter_mut().zip(raw.bytes()) {
        *dst = src.to_ascii_lowercase();
    }
    buf.len = raw.len();
    Ok((HostText::Buffered(buf), HostKind::Name))
}

/// Canonical host text of a lookup: borrowed from the URI when already canonical (the common
/// case, which allocates nothing), otherwise a buffer holding the rewritten text (a mixed-case
/// name or an IPv6 literal).
enum HostText<'a> {
    Borrowed(&'a str),
    Buffered(Box<HostBuf>),
}

impl HostText<'_> {
    fn as_str(&self) -> &str {
        match self {
            HostText::Borrowed(s) => s,
            HostText::Buffered(b) => b.as_str(),
        }
    }
}

/// A borrowed, allocation-free view of a URI's origin, usable to look up an [`OriginKey`] in a
/// hashbrown map.
pub struct OriginLookup<'a> {
    scheme: Scheme,
    host: HostText<'a>,
    port: u16,
    kind: HostKind,
}

impl<'a> OriginLookup<'a> {
    /// Canonicalizes the origin of `uri` without allocating.
    ///
    /// # Errors
    ///
    /// As [`OriginKey::from_uri`].
    pub fn from_uri(uri: &'a Uri) -> Result<OriginLookup<'a>, InvalidOrigin> {
        let scheme = match uri.scheme_str() {
            None => return Err(InvalidOrigin::MissingScheme),
            Some(s) => {
                Scheme::parse(s).ok_or_else(|| InvalidOrigin::UnsupportedScheme(s.to_owned()))?
            }
        };
        let raw = uri.host().ok_or(InvalidOrigin::MissingHost)?;
        let port = match uri.port() {
            // `u16`'s parser takes a leading `+`, which no URI's port has (RFC 3986: digits
            // only); `:+8080` is as wrong as `:99999`, not another way to write 8080.
            Some(port) if port.as_str().starts_with('+') => return Err(InvalidOrigin::InvalidPort),
            Some(port) => port.as_u16(),
            None if has_port_text(uri) => return Err(InvalidOrigin::InvalidPort),
            None => scheme.default_port(),
        };
        if port == 0 {
            return Err(InvalidOrigin::InvalidPort);
        }
        let (host, kind) = canonicalize(raw)?;
        Ok(OriginLookup {
            scheme,
            host,
            port,
            kind,
        })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The canonical host.
    pub fn host(&self) -> &str {
        self.host.as_str()
    }

    /// The port, explicit or default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The owned key this lookup designates (allocates the host).
    pub fn to_key(&self) -> OriginKey {
        OriginKey {
            scheme: self.scheme,
            host: self.host.as_str().into(),
            port: self.port,
            kind: self.kind,
        }
    }
}

impl Hash for OriginLookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.scheme.hash(state);
        self.host.as_str().hash(state);
        self.port.hash(state);
    }
}

impl Equivalent<OriginKey> for OriginLookup<'_> {
    fn equivalent(&self, key: &OriginKey) -> bool {
        self.scheme == key.scheme && self.port == key.port && self.host.as_str() == &*key.host
    }
}

impl fmt::Debug for OriginLookup<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OriginLookup")
            .field("scheme", &self.scheme)
            .field("host", &self.host.as_str())
            .field("port", &self.port)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hashbrown::HashMap;
    use proptest::prelude::*;

    fn key(s: &str) -> OriginKey {
        OriginKey::from_uri(&s.parse().unwrap()).unwrap()
    }

    #[test]
    fn default_ports_are_elided_and_equal_to_explicit_ones() {
        assert_eq!(key("http://example.com/a"), key("http://example.com:80/b"));
        assert_eq!(key("https://example.com"), key("https://example.com:443"));
        assert_eq!(
            key("http://example.com:80").to_string(),
            "http://example.com"
        );
        assert_eq!(
            key("http://example.com:8080").to_string(),
            "http://example.com:8080"
        );
    }

    #[test]
    fn http_and_https_are_different_origins() {
        assert_ne!(key("http://example.com:443"), key("https://example.com"));
    }

    #[test]
    fn host_is_lower_cased_and_userinfo_dropped() {
        let k = key("HTTP://User:Pw@ExAmple.COM:8080/x");
        assert_eq!(k.host(), "example.com");
        assert_eq!(k.scheme(), Scheme::Http);
        assert_eq!(k, key("http://example.com:8080"));
    }

    #[test]
    fn ipv6_literals_are_canonical_and_unbracketed() {
        let k = key("http://[0:0:0:0:0:0:0:1]:8080/");
        assert_eq!(k.host(), "::1");
        assert_eq!(k.host_kind(), HostKind::Ipv6);
        assert_eq!(k, key("http://[::1]:8080"));
        assert_eq!(k.to_string(), "http://[::1]:8080");
        assert_eq!(k.authority(), "[::1]:8080");
        assert_eq!(k.ip(), Some("::1".parse().unwrap()));
        assert_eq!(key("http://[FE80::A]").host(), "fe80::a");
    }

    #[test]
    fn trailing_dot_is_a_distinct_origin() {
        assert_ne!(key("http://example.com./"), key("http://example.com/"));
    }

    #[test]
    fn ipv4_literals_are_recognized() {
        let k = key("http://127.0.0.1:9/");
        assert_eq!(k.host_kind(), HostKind::Ipv4);
        assert_eq!(k.ip(), Some("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn bad_uris_are_rejected_with_a_reason() {
        let err = |s: &str| OriginKey::from_uri(&s.parse().unwrap()).unwrap_err();
        assert_eq!(err("/relative"), InvalidOrigin::MissingScheme);
        assert_eq!(
            err("ftp://example.com/"),
            InvalidOrigin::UnsupportedScheme("ftp".into())
        );
        assert_eq!(err("http://example.com:0/"), InvalidOrigin::InvalidPort);
        // Too large for a port: refused, never sent to the default port instead.
        assert_eq!(err("http://127.0.0.1:99999/"), InvalidOrigin::InvalidPort);
        assert_eq!(
            err("https://example.com:65536/"),
            InvalidOrigin::InvalidPort
        );
        assert_eq!(err("http://[::1]:99999/"), InvalidOrigin::InvalidPort);
        assert_eq!(err("http://127.0.0.1:+8080/"), InvalidOrigin::InvalidPort);
        let ok = |s: &str| OriginKey::from_uri(&s.parse().unwrap()).unwrap().port();
        assert_eq!(ok("http://example.com:65535/"), 65535);
        assert_eq!(
            ok("http://[::1]/"),
            80,
            "colons inside brackets are not a port"
        );
        assert_eq!(ok("https://user:secret@example.com/"), 443);
        assert!(OriginKey::new(Scheme::Http, "", 80).is_err());
        assert!(OriginKey::new(Scheme::Http, "[::g]", 80).is_err());
    }

    #[test]
    fn new_accepts_bracketed_and_bare_ipv6() {
        let a = OriginKey::new(Scheme::Https, "[::1]", 443).unwrap();
        let b = OriginKey::new(Scheme::Https, "0::1", 443).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.authority(), "[::1]");
    }

    #[test]
    fn lookup_finds_the_owned_key() {
        let mut map = HashMap::new();
        map.insert(key("http://example.com:8080"), 1);
        map.insert(key("https://[::1]"), 2);
        let uri: Uri = "http://EXAMPLE.com:8080/path?q".parse().unwrap();
        assert_eq!(map.get(&OriginLookup::from_uri(&uri).unwrap()), Some(&1));
        let uri: Uri = "https://[0::1]:443/".parse().unwrap();
        assert_eq!(map.get(&OriginLookup::from_uri(&uri).unwrap()), Some(&2));
        let uri: Uri = "http://example.com/".parse().unwrap();
        assert_eq!(map.get(&OriginLookup::from_uri(&uri).unwrap()), None);
    }

    fn host_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z][a-zA-Z0-9-]{0,20}(\\.[a-zA-Z][a-zA-Z0-9-]{0,10}){0,3}\\.?",
            any::<[u8; 4]>().prop_map(|o| std::net::Ipv4Addr::from(o).to_string()),
            any::<[u16; 8]>().prop_map(|s| format!("[{}]", std::net::Ipv6Addr::from(s))),
        ]
    }

    proptest! {
        /// Canonicalization is idempotent: rebuilding a key from its own display gives the same key.
        #[test]
        fn display_round_trips(host in host_strategy(), port in 1u16.., https in any::<bool>()) {
            let scheme = if https { "https" } else { "http" };
            let k = key(&format!("{scheme}://{host}:{port}/"));
            prop_assert_eq!(key(&k.to_string()), k.clone());
            prop_assert_eq!(OriginKey::new(k.scheme(), k.host(), k.port()).unwrap(), k);
        }

        /// Case never distinguishes origins, and the borrowed lookup agrees with the owned key on
        /// both equality and hash.
        #[test]
        fn case_insensitive_and_lookup_consistent(host in host_strategy(), port in 1u16..) {
            let lower = format!("http://{}:{port}/", host.to_ascii_lowercase());
            let upper = format!("http://{}:{port}/", host.to_ascii_uppercase());
            let (kl, ku) = (key(&lower), key(&upper));
            prop_assert_eq!(&kl, &ku);
            let mut map = HashMap::new();
            map.insert(kl, ());
            let uri: Uri = upper.parse().unwrap();
            prop_assert!(map.contains_key(&OriginLookup::from_uri(&uri).unwrap()));
        }

        /// Different ports are different origins.
        #[test]
        fn ports_distinguish(host in host_strategy(), a in 1u16.., b in 1u16..) {
            prop_assume!(a != b);
            prop_assert_ne!(key(&format!("http://{host}:{a}/")), key(&format!("http://{host}:{b}/")));
        }
    }
}
