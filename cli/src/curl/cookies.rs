//! `-b` / `-c`: curl's cookie engine on [`cookie_store`] (RFC 6265 domain, path, expiry and
//! `Secure` matching), with curl's jar file format.
//!
//! * `-b "NAME=VALUE; ..."` (an argument with `=`) is sent as given with every request;
//! * `-b FILE` loads a jar (Netscape format, or `Set-Cookie:` lines) and turns the engine on; a
//!   file that does not exist is an empty jar, as in curl; `-b @FILE` names a file whatever it
//!   holds (a `=` included) and `-b -` reads the jar from standard input;
//! * with the engine on (`-b` or `-c`), `Set-Cookie` headers of every response (redirects
//!   included) are stored and sent back to matching URLs;
//! * `-c FILE` writes every unexpired cookie after the last transfer, in the Netscape format
//!   curl writes: `domain`, subdomains `TRUE`/`FALSE`, `path`, secure `TRUE`/`FALSE`, expiry
//!   (Unix seconds, 0 for a session cookie), `name`, `value`, tab-separated, `#HttpOnly_`
//!   before the domain of an HttpOnly cookie.
//!
//! With `--next`, the groups of a command line share one engine ([`Cookies`]), as curl's
//! transfers share theirs: a cookie one group stores is sent by a later group whose engine is
//! on, and every `-c` writes them all. `-b NAME=VALUE` strings stay with their group.
//!
//! `-j` leaves out the session cookies of the `-b` files (a Netscape line with expiry 0, a
//! `Set-Cookie:` line without `Expires` or `Max-Age`), as a new browser session would; session
//! cookies that responses set during the run are kept.
//!
//! A `Domain` attribute naming an IP address makes a host-only cookie, as in curl (an address
//! has no subdomains).
//!
//! What this does not do: public-suffix checks (cookie_store's `public_suffix` feature is off).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ::url::Url;
use cookie_store::{CookieDomain, CookieExpiration, CookieStore};
use http::header::{HeaderValue, SET_COOKIE};
use http::{HeaderMap, Uri};

use super::exit::CurlError;
use super::getdate::unix_now;

/// The cookie engine's cookies, shared by every group of a command line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cookies(Arc<Mutex<Engine>>);

impl Cookies {
    fn lock(&self) -> MutexGuard<'_, Engine> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The store, and when each cookie was stored: `cookie_store` keeps cookies in hash maps, and
/// a `Cookie` header must not change order from one run to the next.
#[derive(Debug, Default)]
struct Engine {
    store: CookieStore,
    /// (domain, path, name) → the order it was created in. As in curl, a cookie that
    /// replaces one of the same name, domain and path keeps the creation of the one it
    /// replaces; one stored after its predecessor expired or was removed is new.
    stored: HashMap<(String, String, String), u64>,
    next: u64,
}

impl Engine {
    /// Stores one `Set-Cookie` value received from `url` (or read from a jar as if it was:
    /// `jar_line`, whose subdomain flag stands as written).
    fn add(&mut self, set_cookie: &str, url: &Url, jar_line: bool) {
        if oversized(set_cookie) {
            return;
        }
        let Ok(mut cookie) = cookie_store::Cookie::parse(set_cookie, url) else {
            return;
        };
        if !prefix_kept(&cookie) {
            return;
        }
        // An IP address has no subdomains: curl keeps `Domain=127.0.0.1` host-only (its jar
        // line says `FALSE`), where cookie_store would store a domain cookie. A jar line that
        // says `.127.0.0.1 TRUE` is kept as it is, as curl writes it back as it read it.
        if let (CookieDomain::Suffix(host), false) = (&cookie.domain, jar_line) {
            if host.parse::<std::net::IpAddr>().is_ok() {
                cookie.domain = CookieDomain::HostOnly(host.clone());
            }
        }
        let key = key_of(&cookie);
        let replaces = self.store.contains(&key.0, &key.1, &key.2);
        if self.store.insert(cookie.into_owned(), url).is_ok() && !replaces {
            self.next += 1;
            self.stored.insert(key, self.next);
        }
    }

    /// The `NAME=VALUE` pairs for a request to `url` in curl's order: longer paths first, then
    /// longer domains, then longer names, then the most recently stored.
    fn request_values(&self, url: &Url) -> Vec<String> {
        let mut cookies = self.store.matches(url);
        let created = |c: &cookie_store::Cookie<'_>| self.stored.get(&key_of(c)).copied();
        let domain_len = |c: &cookie_store::Cookie<'_>| c.domain.as_cow().map_or(0, |d| d.len());
        cookies.sort_by(|a, b| {
            (b.path.len(), domain_len(b), b.name().len(), created(b)).cmp(&(
                a.path.len(),
                domain_len(a),
                a.name().len(),
                created(a),
            ))
        });
        cookies
            .iter()
            .map(|c| {
                let (name, value) = c.name_value();
                format!("{name}={value}")
            })
            .collect()
    }
}

/// What identifies a cookie in the store.
fn key_of(cookie: &cookie_store::Cookie<'_>) -> (String, String, String) {
    let domain = cookie.domain.as_cow().map(|d| d.into_owned());
    (
        domain.unwrap_or_default(),
        cookie.path.as_ref().to_owned(),
        cookie.name().to_owned(),
    )
}

/// The cookies of one group of the command line: its `-b` strings and, with the engine on,
/// the shared engine.
#[derive(Debug)]
pub(crate) struct CookieJar {
    /// The engine's cookies.
    store: Cookies,
    /// `-b NAME=VALUE` strings, sent with every request.
    literal: Vec<String>,
    /// Whether `Set-Cookie` is stored (a `-b FILE` or `-c`).
    engine: bool,
}

impl CookieJar {
    /// The jar `-b` and `-c` ask for; `None` when neither was given.
    ///
    /// # Errors
    ///
    /// Exit 26 when a `-b` file exists but cannot be read.
    pub(crate) fn new(
        cookie: &[String],
        jar: Option<&Path>,
        junk_session: bool,
        store: &Cookies,
    ) -> Result<Option<CookieJar>, CurlError> {
        if cookie.is_empty() && jar.is_none() {
            return Ok(None);
        }
        let mut cookies = CookieJar {
            store: store.clone(),
            literal: Vec::new(),
            engine: jar.is_some(),
        };
        for arg in cookie {
            // curl's reading of `-b`: `@FILE` is a file whatever it holds, else a `=` makes
            // cookies to send as given, and anything else is a file (`-`: standard input).
            let file = match arg.strip_prefix('@') {
                Some(file) => file,
                None if arg.contains('=') => {
                    cookies.literal.push(arg.trim().to_owned());
                    continue;
                }
                None => arg,
            };
            cookies.engine = true;
            let bytes = match file {
                "-" => super::data::read_source(file)?,
                _ => match std::fs::read(file) {
                    Ok(bytes) => bytes,
                    // A missing file is a jar yet to be written, as in curl.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(CurlError::read_failed(file, &e)),
                },
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            cookies.load(&text, junk_session);
        }
        Ok(Some(cookies))
    }

    /// Adds the cookies of a jar file's text, without its session cookies when `junk_session`
    /// (`-j`).
    fn load(&mut self, text: &str, junk_session: bool) {
        let now = unix_now();
        let mut store = self.store.lock();
        for line in text.lines() {
            if let Some(set_cookie) = line.strip_prefix("Set-Cookie:") {
                // A header dump: no URL to check the cookie against, so any host may set it.
                let session = cookie_store::RawCookie::parse(set_cookie.trim())
                    .is_ok_and(|c| c.expires().is_none() && c.max_age().is_none());
                if junk_session && session {
                    continue;
                }
                if let Some(url) = set_cookie_origin(set_cookie) {
                    store.add(set_cookie.trim(), &url, false);
                }
                continue;
            }
            let (line, http_only) = match line.strip_prefix("#HttpOnly_") {
                Some(rest) => (rest, true),
                None => (line, false),
            };
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let [domain, subdomains, path, secure, expires, name, value] = fields[..] else {
                continue;
            };
            let host = domain.trim_start_matches('.');
            let scheme = if secure == "TRUE" { "https" } else { "http" };
            let Ok(url) = Url::parse(&format!("{scheme}://{host}{path}")) else {
                continue;
            };
            let mut text = format!("{name}={value}; Path={path}");
            if subdomains == "TRUE" {
                let _ = write!(text, "; Domain={host}");
            }
            if secure == "TRUE" {
                text.push_str("; Secure");
            }
            if http_only {
                text.push_str("; HttpOnly");
            }
            match expires.parse::<i64>() {
                Ok(0) | Err(_) if junk_session => continue,
                Ok(0) | Err(_) => {}
                Ok(at) if at <= now => continue,
                Ok(at) => {
                    let _ = write!(text, "; Max-Age={}", at - now);
                }
            }
            store.add(&text, &url, true);
        }
    }

    /// The `Cookie` header for a request to `uri`, if any cookie applies: the engine's
    /// cookies, then `-b NAME=VALUE`'s, as curl appends its cookie string to the engine's.
    /// `with_strings` is false when `-H` gave (or removed) a `Cookie` of its own: curl then
    /// leaves its cookie strings out but still sends the engine's, in a header of their own.
    pub(crate) fn header_for(&self, uri: &Uri, with_strings: bool) -> Option<HeaderValue> {
        let mut pairs: Vec<String> = Vec::new();
        // The shared engine's cookies go only with a group whose own engine is on.
        if let Some(url) = to_url(uri).filter(|_| self.engine) {
            pairs.extend(self.store.lock().request_values(&url));
        }
        // curl joins its `-b` strings with a bare `;`, and that string to the engine's with `; `.
        if with_strings && !self.literal.is_empty() {
            pairs.push(self.literal.join(";"));
        }
        if pairs.is_empty() {
            return None;
        }
        HeaderValue::from_str(&pairs.join("; ")).ok()
    }

    /// Stores the `Set-Cookie` headers of a response from `uri` (with the engine on).
    pub(crate) fn store_from(&self, uri: &Uri, headers: &HeaderMap) {
        if !self.engine {
            return;
        }
        let Some(url) = to_url(uri) else { return };
        let mut store = self.store.lock();
        for value in headers.get_all(SET_COOKIE) {
            if let Ok(text) = value.to_str() {
                store.add(text, &url, false);
            }
        }
    }

    /// The jar in curl's Netscape format.
    pub(crate) fn netscape(&self) -> String {
        let mut out = String::from("# Netscape HTTP Cookie File\n# Written by poolcurl.\n\n");
        let engine = self.store.lock();
        // Newest first, as curl writes its jar (and the same from run to run).
        let mut cookies: Vec<_> = engine.store.iter_unexpired().collect();
        cookies.sort_by_key(|c| std::cmp::Reverse(engine.stored.get(&key_of(c)).copied()));
        for cookie in cookies {
            let (domain, subdomains) = match &cookie.domain {
                CookieDomain::HostOnly(host) => (host.clone(), "FALSE"),
                CookieDomain::Suffix(suffix) => (format!(".{suffix}"), "TRUE"),
                CookieDomain::NotPresent | CookieDomain::Empty => continue,
            };
            let expires = match &cookie.expires {
                CookieExpiration::AtUtc(at) => at.unix_timestamp(),
                CookieExpiration::SessionEnd => 0,
            };
            let prefix = if cookie.http_only().unwrap_or(false) {
                "#HttpOnly_"
            } else {
                ""
            };
            let secure = if cookie.secure().unwrap_or(false) {
                "TRUE"
            } else {
                "FALSE"
            };
            let path: &str = &cookie.path;
            let _ = writeln!(
                out,
                "{prefix}{domain}\t{subdomains}\t{path}\t{secure}\t{expires}\t{}\t{}",
                cookie.name(),
                cookie.value()
            );
        }
        out
    }

    /// Writes the jar to `path` (`-` is stdout).
    ///
    /// # Errors
    ///
    /// Exit 23 when the file cannot be written (which curl mode only notes under `-v`).
    pub(crate) fn save(&self, path: &Path) -> Result<(), CurlError> {
        let text = self.netscape();
        if path.as_os_str() == "-" {
            use std::io::Write as _;
            return std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(|e| CurlError::write_failed(format!("stdout: {e}")));
        }
        std::fs::write(path, text).map_err(|e| {
            CurlError::new(
                23,
                format!("Failed to write cookie jar {}: {e}", path.display()),
            )
        })
    }
}

/// The `url::Url` of a request URI, for cookie matching.
fn to_url(uri: &Uri) -> Option<Url> {
    Url::parse(&uri.to_string()).ok()
}

/// A URL under which a `Set-Cookie:` line from a header dump may be stored: its `Domain`
/// attribute's host, else any host.
fn set_cookie_origin(set_cookie: &str) -> Option<Url> {
    let domain = set_cookie.split(';').find_map(|attr| {
        let (key, value) = attr.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("domain")
            .then(|| value.trim().trim_start_matches('.').to_owned())
    });
    Url::parse(&format!(
        "http://{}/",
        domain.as_deref().unwrap_or("localhost")
    ))
    .ok()
}

/// Whether curl 7.88 drops a `Set-Cookie` value as too large: a header over 5,000 bytes, or a
/// `NAME=VALUE` pair (the cookie's or an attribute's) with a part of 4,095 bytes or more or
/// over 4,096 bytes in all, as browsers limit cookies.
fn oversized(set_cookie: &str) -> bool {
    const LINE: usize = 5000;
    const PAIR: usize = 4096;
    set_cookie.len() > LINE
        || set_cookie.split(';').any(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (name, value) = (name.trim().len(), value.trim().len());
            name >= PAIR - 1 || value >= PAIR - 1 || name + value > PAIR
        })
}

/// Whether a cookie keeps the promise of its name's prefix (in any case, as curl compares
/// it): `__Secure-` cookies must be `Secure`, `__Host-` ones also host-only with path `/`.
fn prefix_kept(cookie: &cookie_store::Cookie<'_>) -> bool {
    let name = cookie.name().as_bytes();
    let has = |prefix: &str| {
        name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
    };
    let secure = cookie.secure() == Some(true);
    if has("__Secure-") {
        secure
    } else if has("__Host-") {
        secure && &*cookie.path == "/" && matches!(cookie.domain, CookieDomain::HostOnly(_))
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A jar with nothing in it, written to stdout (`-c -`): the cookie engine alone.
    fn empty_jar() -> CookieJar {
        CookieJar::new(&[], Some(Path::new("-")), false, &Cookies::default())
            .unwrap()
            .unwrap()
    }

    fn headers(set_cookies: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in set_cookies {
            map.append(SET_COOKIE, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn literal_cookies_go_everywhere_and_the_engine_matches_paths() {
        let jar = CookieJar::new(
            &["a=1; b=2".into(), "c=3".into()],
            Some(Path::new("-")),
            false,
            &Cookies::default(),
        )
        .unwrap()
        .unwrap();
        let uri: Uri = "http://example.test/app/x".parse().unwrap();
        // Each string as given, joined by a bare `;` as curl joins them.
        assert_eq!(jar.header_for(&uri, true).unwrap(), "a=1; b=2;c=3");
        jar.store_from(
            &uri,
            &headers(&["s=v; Path=/app", "other=o; Path=/elsewhere; HttpOnly"]),
        );
        // The engine's first, then the string, as curl appends it.
        assert_eq!(jar.header_for(&uri, true).unwrap(), "s=v; a=1; b=2;c=3");
        let other: Uri = "http://another.test/app/".parse().unwrap();
        assert_eq!(jar.header_for(&other, true).unwrap(), "a=1; b=2;c=3");
    }

    #[test]
    fn a_domain_that_is_an_address_makes_a_host_only_cookie() {
        let jar = empty_jar();
        let uri: Uri = "http://127.0.0.1:8080/".parse().unwrap();
        jar.store_from(&uri, &headers(&["ip=1; Domain=127.0.0.1"]));
        let text = jar.netscape();
        assert!(
            text.contains("\n127.0.0.1\tFALSE\t/\tFALSE\t0\tip\t1\n"),
            "{text}"
        );
        assert_eq!(jar.header_for(&uri, true).unwrap(), "ip=1");
        // A jar line keeps its flag, as curl writes it back as read.
        let mut read = empty_jar();
        read.load(".127.0.0.1\tTRUE\t/\tFALSE\t0\twide\t1\n", false);
        assert!(
            read.netscape()
                .contains("\n.127.0.0.1\tTRUE\t/\tFALSE\t0\twide\t1\n"),
            "{}",
            read.netscape()
        );
        assert_eq!(read.header_for(&uri, true).unwrap(), "wide=1");
    }

    #[test]
    fn oversized_cookies_and_broken_prefix_promises_are_dropped() {
        let jar = empty_jar();
        let uri: Uri = "https://example.test/app/x".parse().unwrap();
        let big = format!("big={}", "a".repeat(4095));
        let fits = format!("fits={}", "a".repeat(4090));
        let long_attr = format!("attr=1; Comment={}", "c".repeat(4095));
        jar.store_from(
            &uri,
            &headers(&[
                &big,
                &fits,
                &long_attr,
                "__Secure-a=1",
                "__secure-b=1; Secure",
                "__Host-c=1; Secure; Path=/",
                "__Host-d=1; Secure",
                "__Host-e=1; Secure; Path=/; Domain=example.test",
                "__HOST-f=1; Path=/",
            ]),
        );
        let sent = jar.header_for(&uri, true).unwrap();
        let mut names: Vec<&str> = sent
            .to_str()
            .unwrap()
            .split("; ")
            .map(|pair| pair.split('=').next().unwrap())
            .collect();
        names.sort_unstable();
        // `__Host-d` took `/app` for its path from the URL, so it is not `/`.
        assert_eq!(names, ["__Host-c", "__secure-b", "fits"]);
    }

    #[test]
    fn netscape_files_round_trip() {
        let jar = empty_jar();
        let uri: Uri = "http://example.test/".parse().unwrap();
        jar.store_from(
            &uri,
            &headers(&[
                "session=1",
                "wide=2; Domain=example.test; Max-Age=3600; Secure; HttpOnly",
            ]),
        );
        let text = jar.netscape();
        assert!(text.starts_with("# Netscape HTTP Cookie File\n"), "{text}");
        assert!(
            text.contains("example.test\tFALSE\t/\tFALSE\t0\tsession\t1\n"),
            "{text}"
        );
        assert!(
            text.contains("#HttpOnly_.example.test\tTRUE\t/\tTRUE\t"),
            "{text}"
        );
        let mut loaded = empty_jar();
        loaded.load(&text, false);
        let secure: Uri = "https://www.example.test/".parse().unwrap();
        assert_eq!(loaded.header_for(&secure, true).unwrap(), "wide=2");
        assert_eq!(loaded.header_for(&uri, true).unwrap(), "session=1");
        // -j: the session cookie stays behind, the persistent one comes.
        let mut fresh = empty_jar();
        fresh.load(&text, true);
        assert_eq!(fresh.header_for(&secure, true).unwrap(), "wide=2");
        assert_eq!(fresh.header_for(&uri, true), None);
        fresh.load("Set-Cookie: dumped=1; Domain=example.test\n", true);
        assert_eq!(fresh.header_for(&uri, true), None);
    }

    #[test]
    fn groups_share_the_engine_and_keep_their_own_strings() {
        let shared = Cookies::default();
        let uri: Uri = "http://example.test/".parse().unwrap();
        let first = CookieJar::new(&[], Some(Path::new("-")), false, &shared)
            .unwrap()
            .unwrap();
        first.store_from(&uri, &headers(&["sid=abc"]));
        // `-b FILE` of a file that does not exist: the engine is on, with the shared cookies.
        let missing = "/nonexistent/poolcurl-cookies".to_owned();
        let second = CookieJar::new(&[missing], None, false, &shared)
            .unwrap()
            .unwrap();
        assert_eq!(second.header_for(&uri, true).unwrap(), "sid=abc");
        // `-b NAME=VALUE` alone leaves the engine off: its string only.
        let third = CookieJar::new(&["x=1".into()], None, false, &shared)
            .unwrap()
            .unwrap();
        assert_eq!(third.header_for(&uri, true).unwrap(), "x=1");
    }

    /// curl's order, whatever the store's hash maps do: longer paths first, then the most
    /// recently created; and a jar file newest first.
    #[test]
    fn cookies_go_out_in_curls_order_every_time() {
        let jar = empty_jar();
        let uri: Uri = "http://example.test/app/x".parse().unwrap();
        let names = ["b1", "a2", "c3", "d4", "e5", "f6"];
        let mut set: Vec<String> = names.iter().map(|n| format!("{n}=v; Path=/")).collect();
        set.push("deep=v; Path=/app".into());
        let set: Vec<&str> = set.iter().map(String::as_str).collect();
        jar.store_from(&uri, &headers(&set));
        assert_eq!(
            jar.header_for(&uri, true).unwrap(),
            "deep=v; f6=v; e5=v; d4=v; c3=v; a2=v; b1=v"
        );
        let text = jar.netscape();
        let order: Vec<&str> = text.lines().filter_map(|l| l.split('\t').nth(5)).collect();
        assert_eq!(order, ["deep", "f6", "e5", "d4", "c3", "a2", "b1"]);
        // A cookie that replaces another keeps its place; one set again after it expired is
        // new.
        jar.store_from(&uri, &headers(&["c3=w; Path=/", "a2=x; Max-Age=0; Path=/"]));
        jar.store_from(&uri, &headers(&["a2=y; Path=/"]));
        assert_eq!(
            jar.header_for(&uri, true).unwrap(),
            "deep=v; a2=y; f6=v; e5=v; d4=v; c3=w; b1=v"
        );
    }
}
