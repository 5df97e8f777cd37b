//! `--alt-svc FILE`: HTTP Alternative Services (RFC 7838) as curl 7.88 keeps them.
//!
//! An `https://` response's `Alt-Svc` header names other places that serve its origin
//! (`h2="alt.example:8443"; ma=3600`); they are kept, and a later request to that origin
//! connects to the first one still fresh, as `--connect-to` would send it: TLS, `Host` and the
//! request stay the origin's, the request says where it went (`Alt-Used: HOST:PORT`), and the
//! connection is a new one, apart from the origin's own. The cache is read from FILE when a
//! group's first transfer needs it and written back when the group ends, in curl's format:
//!
//! ```text
//! h1 localhost 8443 h2 alt.example 8443 "20261204 10:00:00" 0 0
//! ```
//!
//! (source protocol, host and port; alternative protocol, host and port; expiry in UTC; the
//! `persist` flag; a priority curl always writes as 0). Groups naming the same file share one
//! cache, as curl's transfers share it through the file. An empty FILE keeps the cache in
//! memory for one transfer only, as curl's handle of each transfer has its own (under `-Z`, the
//! group's transfers running at once share it, and each one's start empties it).
//!
//! curl's reading is kept, quirks included, so that the same headers give the same file:
//!
//! * protocols are `h1`, `h2` and `h3` only (`http/1.1` is skipped);
//! * each header's first alternative replaces what the origin had (learned over the same
//!   protocol); `clear; ...` drops it, and a bare `clear` drops nothing (curl reads the line's
//!   CRLF into the word);
//! * an alternative without a port takes the previous one's (or the origin's), and a bad port
//!   ends the header;
//! * `ma` (default 24 hours) and `persist=1` are read, other parameters skipped;
//! * a lookup prefers an entry learned over h2, then one learned over HTTP/1, and never picks
//!   `h3` (no QUIC here, nor in Debian's curl). The protocol switch curl 7.88 notes for an
//!   alternative changes nothing it offers in ALPN, so none happens here either.
//!
//! One of curl's ways is not followed: once an origin's alternatives are gone (cleared or
//! expired), curl may send its next request over a connection it had opened to an
//! alternative; here that request opens (or reuses) a connection to the origin itself.
//!
//! What this module does not do: follow an alternative for an `http://` URL, or beside a
//! `--connect-to` entry that names a host or port for the origin (curl does neither), or take
//! the response's `Age` into the expiry (nor does curl 7.88).

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use http::{HeaderMap, Uri};

use super::getdate::{self, file_stamp, unix_now};

/// A protocol of an entry, by curl's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alpn {
    H1,
    H2,
    H3,
}

impl Alpn {
    /// `h1`, `h2` or `h3` in any case; anything else is unknown.
    fn parse(name: &str) -> Option<Alpn> {
        [Alpn::H1, Alpn::H2, Alpn::H3]
            .into_iter()
            .find(|alpn| alpn.to_string().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Alpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Alpn::H1 => "h1",
            Alpn::H2 => "h2",
            Alpn::H3 => "h3",
        })
    }
}

/// One alternative for one origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) src_alpn: Alpn,
    /// Without a trailing dot.
    pub(crate) src_host: String,
    pub(crate) src_port: u16,
    pub(crate) dst_alpn: Alpn,
    pub(crate) dst_host: String,
    pub(crate) dst_port: u16,
    /// Seconds since the epoch.
    expires: i64,
    persist: bool,
    prio: u32,
}

impl Entry {
    /// `-v`'s line for a request that goes to this entry's alternative, the origin's host as
    /// the URL spells it.
    pub(crate) fn connecting_note(&self, host: &str, port: u16) -> String {
        format!(
            "Alt-svc connecting from [{}]{host}:{port} to [{}]{}:{}",
            self.src_alpn, self.dst_alpn, self.dst_host, self.dst_port
        )
    }
}

/// The cache of one file (or of one transfer, without a file).
#[derive(Debug)]
pub(crate) struct AltSvc {
    /// The file; empty for none.
    path: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the file has been read.
    loaded: bool,
    entries: Vec<Entry>,
}

impl AltSvc {
    /// The cache of `path` (an empty path: no file), read when first used.
    pub(crate) fn new(path: &str) -> AltSvc {
        AltSvc {
            path: path.to_owned(),
            state: Mutex::new(State::default()),
        }
    }

    /// The file this cache is read from and written to; empty for none.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The entries, the file's read in on the first call. A file that cannot be read is an
    /// empty cache, as in curl.
    fn entries(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.loaded {
            state.loaded = true;
            if !self.path.is_empty() {
                let text = std::fs::read(&self.path).unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                state.entries = text
                    .lines()
                    .map(|line| line.trim_start_matches([' ', '\t']))
                    .filter(|line| !line.starts_with('#'))
                    .filter_map(parse_line)
                    .collect();
            }
        }
        state
    }

    /// Forgets every entry: a transfer without a file starts with an empty cache.
    pub(crate) fn clear(&self) {
        self.entries().entries.clear();
    }

    /// Takes in the `Alt-Svc` headers of a response from `uri` (over `https://` only) that
    /// came over `alpn`; returns, for each header in order, `-v`'s notes of what it added.
    pub(crate) fn store_from(
        &self,
        uri: &Uri,
        alpn: Alpn,
        headers: &HeaderMap,
    ) -> Vec<Vec<String>> {
        let (Some("https"), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return Vec::new();
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(443);
        let mut state = self.entries();
        headers
            .get_all("alt-svc")
            .iter()
            .map(|value| {
                let mut origin = Origin {
                    entries: &mut state.entries,
                    alpn,
                    host,
                    port,
                };
                origin.parse(value.as_bytes(), unix_now())
            })
            .collect()
    }

    /// The alternative a request to `host` (the URL's, without IPv6 brackets) on `port` goes
    /// to, if a fresh one is known: one learned over h2 first, then over HTTP/1. Expired
    /// entries are dropped on the way, up to the match, as curl drops them.
    pub(crate) fn lookup(&self, host: &str, port: u16) -> Option<Entry> {
        let now = unix_now();
        let mut state = self.entries();
        let entries = &mut state.entries;
        for src in [Alpn::H2, Alpn::H1] {
            let mut at = 0;
            while let Some(e) = entries.get(at) {
                if e.expires < now {
                    entries.remove(at);
                    continue;
                }
                if e.src_alpn == src
                    && same_host(host, &e.src_host)
                    && e.src_port == port
                    && e.dst_alpn != Alpn::H3
                {
                    return Some(e.clone());
                }
                at += 1;
            }
        }
        None
    }

    /// Writes the cache to its file (nothing without one). A failure is not reported, as
    /// curl reports none.
    pub(crate) fn save(&self) {
        if self.path.is_empty() {
            return;
        }
        let state = self.entries();
        let mut text = String::from("# Your alt-svc cache.\n# Written by poolcurl.\n");
        for e in &state.entries {
            text.push_str(&format!(
                "{} {} {} {} {} {} \"{}\" {} {}\n",
                e.src_alpn,
                e.src_host,
                e.src_port,
                e.dst_alpn,
                e.dst_host,
                e.dst_port,
                file_stamp(e.expires),
                u8::from(e.persist),
                e.prio
            ));
        }
        let _ = std::fs::write(&self.path, text);
    }
}

/// Whether `host` (perhaps with a trailing dot) is `check`, in any case.
fn same_host(host: &str, check: &str) -> bool {
    host.strip_suffix('.')
        .unwrap_or(host)
        .eq_ignore_ascii_case(check)
}

/// One line of the file, read as curl's `sscanf` reads it: nine fields, the date quoted.
fn parse_line(line: &str) -> Option<Entry> {
    let mut fields = line.split_ascii_whitespace();
    let mut word = |limit: usize| fields.next().filter(|w| w.len() <= limit);
    let src_alpn = word(10)?;
    let src_host = word(512)?;
    let src_port = word(10)?.parse::<u16>().ok()?;
    let dst_alpn = word(10)?;
    let dst_host = word(512)?.to_owned();
    let dst_port = word(10)?.parse::<u16>().ok()?;
    let rest = line.split_once('"')?.1;
    let (date, rest) = rest.split_once('"')?;
    let mut numbers = rest.split_ascii_whitespace().map(str::parse::<u32>);
    let persist = numbers.next()?.ok()?;
    let prio = numbers.next()?.ok()?;
    Some(Entry {
        src_alpn: Alpn::parse(src_alpn)?,
        src_host: src_host.strip_suffix('.').unwrap_or(src_host).to_owned(),
        src_port,
        dst_alpn: Alpn::parse(dst_alpn)?,
        dst_host,
        dst_port,
        // A date curl cannot read is already past.
        expires: getdate::parse(date).unwrap_or(-1),
        persist: persist != 0,
        prio,
    })
}

/// The origin a response came from, and the cache its alternatives go into.
struct Origin<'a> {
    entries: &'a mut Vec<Entry>,
    /// The protocol the response came over.
    alpn: Alpn,
    host: &'a str,
    port: u16,
}

impl Origin<'_> {
    /// Drops the alternatives this origin had (over the same protocol).
    fn flush(&mut self) {
        let (alpn, port, host) = (self.alpn, self.port, self.host);
        self.entries.retain(|e| {
            !(e.src_alpn == alpn && e.src_port == port && same_host(host, &e.src_host))
        });
    }

    /// Reads one `Alt-Svc` value as curl 7.88's `Curl_altsvc_parse` does; returns `-v`'s
    /// notes. curl reads the header's line with its CRLF, which a token at the end takes in:
    /// a bare `clear` is `clear\r\n` there and clears nothing (`clear; ...` does).
    fn parse(&mut self, value: &[u8], now: i64) -> Vec<String> {
        let value = &[value, b"\r\n"].concat();
        let mut notes = Vec::new();
        let mut p = Cursor { text: value, at: 0 };
        let Some(mut alpn) = p.token(10) else {
            notes.push("Excessive alt-svc header, ignoring.".to_owned());
            return notes;
        };
        if alpn.eq_ignore_ascii_case("clear") {
            self.flush();
            return notes;
        }
        // Outside the loop, as in curl: an alternative without a port takes the last one's.
        let mut dst_port = self.port;
        let mut added = 0;
        loop {
            if p.peek() != Some(b'=') {
                break;
            }
            p.at += 1;
            let dst_alpn = Alpn::parse(&alpn);
            if p.peek() != Some(b'"') {
                break;
            }
            p.at += 1;
            let mut valid = true;
            let mut dst_host = self.host.to_owned();
            if p.peek() != Some(b':') {
                let start = p.at;
                while p
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
                {
                    p.at += 1;
                }
                let len = p.at - start;
                if len == 0 || len >= 512 {
                    notes.push("Excessive alt-svc host name, ignoring.".to_owned());
                    valid = false;
                } else {
                    dst_host = String::from_utf8_lossy(&value[start..p.at]).into_owned();
                }
            }
            if p.peek() == Some(b':') {
                p.at += 1;
                // curl reads a number only where a digit is.
                let (port, end) = match p.peek() {
                    Some(c) if c.is_ascii_digit() => p.number(),
                    _ => (None, p.at),
                };
                match port.filter(|&n| (1..=u64::from(u16::MAX)).contains(&n)) {
                    Some(port) if value.get(end) == Some(&b'"') => {
                        dst_port = u16::try_from(port).unwrap_or(u16::MAX);
                        p.at = end;
                    }
                    _ => {
                        notes.push("Unknown alt-svc port number, ignoring.".to_owned());
                        valid = false;
                    }
                }
            }
            if p.peek() != Some(b'"') {
                break;
            }
            p.at += 1;
            let Some((max_age, persist)) = p.parameters() else {
                return notes;
            };
            if let (Some(dst_alpn), true) = (dst_alpn, valid) {
                if added == 0 {
                    self.flush();
                }
                added += 1;
                let expires = now.saturating_add(i64::try_from(max_age).unwrap_or(i64::MAX));
                notes.push(format!(
                    "Added alt-svc: {dst_host}:{dst_port} over {dst_alpn}"
                ));
                self.entries.push(Entry {
                    src_alpn: self.alpn,
                    src_host: self.host.strip_suffix('.').unwrap_or(self.host).to_owned(),
                    src_port: self.port,
                    dst_alpn,
                    dst_host,
                    dst_port,
                    expires,
                    persist,
                    prio: 0,
                });
            }
            if p.peek() == Some(b',') {
                p.at += 1;
                match p.token(10) {
                    Some(next) => alpn = next,
                    None => break,
                }
            }
            if matches!(p.peek(), None | Some(b';' | b'\n' | b'\r')) {
                break;
            }
        }
        notes
    }
}

/// A position in a header value.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied().filter(|&c| c != 0)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// curl's `getalnum`: blanks skipped, then up to a blank, `;` or `=`; `None` when empty
    /// or not shorter than `limit`.
    fn token(&mut self, limit: usize) -> Option<String> {
        self.skip_blanks();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| !matches!(c, b' ' | b'\t' | b';' | b'='))
        {
            self.at += 1;
        }
        let len = self.at - start;
        (len > 0 && len < limit).then(|| String::from_utf8_lossy(&self.text[start..self.at]).into())
    }

    /// `strtoul` from here: leading white space and a `+` skipped, then digits; the value (if
    /// any digit came) and where it ended. Does not move the cursor.
    fn number(&self) -> (Option<u64>, usize) {
        let mut at = self.at;
        while self.text.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if self.text.get(at) == Some(&b'+') {
            at += 1;
        }
        let start = at;
        let mut value: u64 = 0;
        while let Some(digit) = self.text.get(at).filter(|c| c.is_ascii_digit()) {
            value = value
                .saturating_mul(10)
                .saturating_add(u64::from(digit - b'0'));
            at += 1;
        }
        if at == start {
            (None, self.at)
        } else {
            (Some(value), at)
        }
    }

    /// The parameters after an alternative (`; ma=3600; persist=1`): its max age in seconds
    /// (24 hours unless given) and whether it persists; `None` where curl gives up on the
    /// whole header.
    fn parameters(&mut self) -> Option<(u64, bool)> {
        let mut max_age = 24 * 3600;
        let mut persist = false;
        // Once set, as in curl: a quoted value makes later ones read as quoted too.
        let mut quoted = false;
        loop {
            self.skip_blanks();
            if self.peek() != Some(b';') {
                break;
            }
            self.at += 1;
            if matches!(self.peek(), None | Some(b'\n' | b'\r')) {
                break;
            }
            let option = self.token(32).unwrap_or_default();
            self.skip_blanks();
            if self.peek() != Some(b'=') {
                return None;
            }
            self.at += 1;
            self.skip_blanks();
            self.peek()?;
            if self.peek() == Some(b'"') {
                self.at += 1;
                quoted = true;
            }
            let value = Cursor {
                text: self.text,
                at: self.at,
            };
            if quoted {
                while self.peek().is_some_and(|c| c != b'"') {
                    self.at += 1;
                }
                self.peek()?;
                self.at += 1;
            } else {
                while self
                    .peek()
                    .is_some_and(|c| !matches!(c, b' ' | b'\t' | b';' | b','))
                {
                    self.at += 1;
                }
            }
            if let (Some(number), _) = value.number() {
                if option.eq_ignore_ascii_case("ma") {
                    max_age = number;
                } else if option.eq_ignore_ascii_case("persist") && number == 1 {
                    persist = true;
                }
            }
        }
        Some((max_age, persist))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn origin_parse(entries: &mut Vec<Entry>, alpn: Alpn, value: &str) -> Vec<String> {
        Origin {
            entries,
            alpn,
            host: "example.com",
            port: 443,
        }
        .parse(value.as_bytes(), NOW)
    }

    fn dst(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| {
                format!(
                    "{}>{} {}:{} +{}{}",
                    e.src_alpn,
                    e.dst_alpn,
                    e.dst_host,
                    e.dst_port,
                    e.expires - NOW,
                    if e.persist { " persist" } else { "" }
                )
            })
            .collect()
    }

    #[test]
    fn headers_are_read_as_curl_reads_them() {
        let mut entries = Vec::new();
        let notes = origin_parse(
            &mut entries,
            Alpn::H1,
            r#"h2="alt.test:8443"; ma=60; persist=1, h3=":9443", http/1.1=":1", h1="b.test""#,
        );
        assert_eq!(
            dst(&entries),
            [
                "h1>h2 alt.test:8443 +60 persist",
                "h1>h3 example.com:9443 +86400",
                // No port: the previous alternative's, as in curl.
                "h1>h1 b.test:1 +86400",
            ]
        );
        assert_eq!(
            notes,
            [
                "Added alt-svc: alt.test:8443 over h2",
                "Added alt-svc: example.com:9443 over h3",
                "Added alt-svc: b.test:1 over h1",
            ]
        );
        // A new header replaces the origin's alternatives learned over the same protocol.
        origin_parse(&mut entries, Alpn::H2, r#"h2=":1""#);
        origin_parse(&mut entries, Alpn::H1, r#"h2=":2""#);
        assert_eq!(
            dst(&entries),
            ["h2>h2 example.com:1 +86400", "h1>h2 example.com:2 +86400"]
        );
        // A bare `clear` ends in the line's CRLF, and curl 7.88 reads no `clear` there.
        origin_parse(&mut entries, Alpn::H1, "clear");
        assert_eq!(dst(&entries).len(), 2);
        origin_parse(&mut entries, Alpn::H1, "clear; x=1");
        assert_eq!(dst(&entries), ["h2>h2 example.com:1 +86400"]);
        // A bad port ends the header; a parameter without a value drops the alternative.
        let mut entries = Vec::new();
        let notes = origin_parse(&mut entries, Alpn::H1, r#"h2=":99999", h2=":5""#);
        assert_eq!(notes, ["Unknown alt-svc port number, ignoring."]);
        assert!(entries.is_empty());
        origin_parse(&mut entries, Alpn::H1, r#"h2=":5"; ma"#);
        assert!(entries.is_empty());
        assert_eq!(
            origin_parse(&mut entries, Alpn::H1, "averyverylongprotocol=\":5\""),
            ["Excessive alt-svc header, ignoring."]
        );
        // A quoted max age, and an unknown parameter skipped.
        origin_parse(&mut entries, Alpn::H1, r#"h2=":5"; v="x"; ma="30""#);
        assert_eq!(dst(&entries), ["h1>h2 example.com:5 +30"]);
    }

    #[test]
    fn the_file_round_trips_and_lookups_prefer_h2_and_skip_h3() {
        let dir = crate::scratch::Scratch::new("altsvc");
        let path = dir.join("alt-svc.txt");
        std::fs::write(
            &path,
            "# comment\n\
             h1 a.test 443 h2 one.test 8443 \"20991231 00:00:00\" 0 0\n\
             h2 A.test. 443 h2 two.test 9443 \"20991231 00:00:00\" 1 0\n\
             h1 old.test 443 h2 x.test 1 \"20000101 00:00:00\" 0 0\n\
             h1 b.test 443 h3 y.test 1 \"20991231 00:00:00\" 0 0\n\
             h9 c.test 443 h2 z.test 1 \"20991231 00:00:00\" 0 0\n\
             h1 short line\n",
        )
        .unwrap();
        let cache = AltSvc::new(path.to_str().unwrap());
        let hit = cache.lookup("a.test.", 443).unwrap();
        assert_eq!((hit.dst_host.as_str(), hit.dst_port), ("two.test", 9443));
        assert_eq!(
            hit.connecting_note("a.test", 443),
            "Alt-svc connecting from [h2]a.test:443 to [h2]two.test:9443"
        );
        assert_eq!(cache.lookup("old.test", 443), None, "expired");
        assert_eq!(cache.lookup("b.test", 443), None, "h3 is never used");
        assert_eq!(cache.lookup("a.test", 80), None);
        let uri: Uri = "https://new.test:8443/".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("alt-svc", r#"h2=":9000""#.parse().unwrap());
        assert_eq!(
            cache.store_from(&uri, Alpn::H2, &headers),
            [["Added alt-svc: new.test:9000 over h2"]]
        );
        let http: Uri = "http://new.test:8443/".parse().unwrap();
        assert!(cache.store_from(&http, Alpn::H1, &headers).is_empty());
        cache.save();
        let saved = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = saved.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines[0],
            "h1 a.test 443 h2 one.test 8443 \"20991231 00:00:00\" 0 0"
        );
        assert_eq!(
            lines[1],
            "h2 A.test 443 h2 two.test 9443 \"20991231 00:00:00\" 1 0"
        );
        assert_eq!(
            lines[2],
            "h1 b.test 443 h3 y.test 1 \"20991231 00:00:00\" 0 0"
        );
        assert!(
            lines[3].starts_with("h2 new.test 8443 h2 new.test 9000 \"20"),
            "{saved}"
        );
        assert_eq!(lines.len(), 4, "the expired entry was dropped: {saved}");
    }
}
