//! `--connect-to HOST1:PORT1:HOST2:PORT2`, read the way curl reads it.
//!
//! * A request for HOST1 on PORT1 connects to HOST2 on PORT2; TLS, `Host` and the pool's
//!   reuse keep the URL's host (the pool's [`pool::ConnectTo`] does the dialing).
//! * An empty HOST1 or PORT1 matches any; an empty HOST2 or PORT2 keeps the URL's.
//! * The first entry that matches wins.
//! * An entry curl could never match is ignored, as curl ignores it: no second colon, or a
//!   PORT1 that is not a number.
//! * A matching entry whose PORT2 is not a port fails that transfer with exit 49 ("No valid
//!   port number in connect to host string"), when the transfer starts, not at startup: curl
//!   checks an entry only when a URL matches it.
//!
//! The pool is given every entry curl could match, in order; one with a bad PORT2 is given as
//! "dial the origin itself" and never reached, because [`ConnectToArgs::check`] fails every
//! request it matches before the request is sent.

use pool::ConnectTo;

use super::exit::CurlError;

/// The `--connect-to` entries of a command line.
#[derive(Debug, Default)]
pub(crate) struct ConnectToArgs {
    /// The rules the pool dials by.
    rules: ConnectTo,
    /// For each rule, in the same order: whether it names HOST2 and PORT2 (what `-v` reports,
    /// as curl does), or the exit-49 message when its PORT2 is not a port.
    targets: Vec<Result<(bool, bool), String>>,
}

/// Where a request's connection goes, as messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dial {
    /// The host dialed (the URL's unless an entry changed it), without IPv6 brackets.
    pub(crate) host: String,
    /// The port dialed.
    pub(crate) port: u16,
    /// `host:port` as a `CONNECT` tunnel asks for it (an IPv6 literal in brackets).
    pub(crate) authority: String,
    /// Whether the matching entry names a host to connect to (even the URL's own).
    pub(crate) names_host: bool,
    /// Whether the matching entry names a port to connect to.
    pub(crate) names_port: bool,
    /// `-v`'s line when an `--alt-svc` alternative sends the connection here.
    pub(crate) alt_svc: Option<String>,
}

impl ConnectToArgs {
    /// Reads the entries in the order given.
    pub(crate) fn parse(entries: &[String]) -> ConnectToArgs {
        ConnectToArgs::default().with(entries)
    }

    /// A rule that sends `host` on `port` to `to_host` on `to_port` (an `--alt-svc`
    /// alternative), then `entries`. The rule goes first: curl follows an alternative only where
    /// no entry names a host or port for the origin, and an entry that names neither would
    /// otherwise match first and hide it.
    pub(crate) fn behind(
        (host, port): (&str, u16),
        (to_host, to_port): (&str, u16),
        entries: &[String],
    ) -> ConnectToArgs {
        ConnectToArgs {
            rules: ConnectTo::new().rule(Some(host), Some(port), Some(to_host), Some(to_port)),
            targets: vec![Ok((true, true))],
        }
        .with(entries)
    }

    /// These entries with a rule after them for each IPv6 address a URL gave a zone
    /// ([`super::zone`]): its connections go to `ADDRESS%ZONE`, which curl mode's resolver
    /// answers with the address and its scope. `-v` says nothing of them.
    pub(crate) fn with_zones(mut self, zones: &[super::zone::Zoned]) -> ConnectToArgs {
        for zoned in zones {
            self.rules = std::mem::take(&mut self.rules).rule(
                Some(&zoned.host),
                None,
                Some(&zoned.target),
                None,
            );
            self.targets.push(Ok((false, false)));
        }
        self
    }

    /// These entries with `entries` after them.
    fn with(mut self, entries: &[String]) -> ConnectToArgs {
        for text in entries {
            let Some(entry) = Entry::parse(text) else {
                continue;
            };
            let (to_host, to_port) = match &entry.to_port {
                Ok(port) => (entry.to_host, *port),
                Err(_) => (None, None),
            };
            self.rules =
                std::mem::take(&mut self.rules).rule(entry.host, entry.port, to_host, to_port);
            self.targets.push(
                entry
                    .to_port
                    .map(|port| (to_host.is_some(), port.is_some())),
            );
        }
        self
    }

    /// The rules for the pool's connector.
    pub(crate) fn rules(&self) -> &ConnectTo {
        &self.rules
    }

    /// Where a request for `host` (without IPv6 brackets) on `port` connects.
    ///
    /// # Errors
    ///
    /// Exit 49 when the first entry matching is one whose PORT2 is not a port.
    pub(crate) fn check(&self, host: &str, port: u16) -> Result<Dial, CurlError> {
        let (names_host, names_port) = match self.rules.matching_rule(host, port) {
            Some(at) => self.targets[at]
                .clone()
                .map_err(|message| CurlError::new(49, message))?,
            None => (false, false),
        };
        let to = self.rules.dial_target(host, port);
        Ok(Dial {
            host: to.host().to_owned(),
            port: to.port(),
            authority: to.to_string(),
            names_host,
            names_port,
            alt_svc: None,
        })
    }
}

/// One entry as written.
#[derive(Debug, PartialEq, Eq)]
struct Entry<'a> {
    host: Option<&'a str>,
    port: Option<u16>,
    to_host: Option<&'a str>,
    /// PORT2, `None` when empty or absent; the exit-49 message when it is not a port.
    to_port: Result<Option<u16>, String>,
}

impl<'a> Entry<'a> {
    /// The entry, or `None` when curl could never match it.
    fn parse(text: &'a str) -> Option<Entry<'a>> {
        // HOST1 (an IPv6 literal in brackets, which may hold colons) up to the first colon.
        let host_end = match text.strip_prefix('[') {
            Some(rest) => rest.find(']')? + 2,
            None => text.find(':')?,
        };
        let (host, rest) = text.split_at(host_end);
        let rest = rest.strip_prefix(':')?;
        let (port, target) = rest.split_once(':')?;
        let port = match port {
            "" => None,
            digits => Some(strtol_port(digits)?),
        };
        let (to_host, to_port) = split_target(target);
        Some(Entry {
            host: (!host.is_empty()).then_some(host),
            port,
            to_host: (!to_host.is_empty()).then_some(to_host),
            to_port: match to_port {
                None | Some("") => Ok(None),
                Some(digits) => strtol_port(digits).map(Some).ok_or_else(|| {
                    format!("No valid port number in connect to host string ({digits})")
                }),
            },
        })
    }
}

/// HOST2 (brackets kept, anything between `]` and the colon dropped, as curl does) and the
/// text after its colon, if there is one.
fn split_target(target: &str) -> (&str, Option<&str>) {
    if target.starts_with('[') {
        if let Some(close) = target.find(']') {
            let host = &target[..=close];
            let port = target[close..].split_once(':').map(|(_, port)| port);
            return (host, port);
        }
    }
    match target.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (target, None),
    }
}

/// A port as C's `strtol` reads one for curl: leading blanks and one sign allowed, then
/// digits to the end, from 0 to 65535.
fn strtol_port(text: &str) -> Option<u16> {
    let text = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_curl_reads_them() {
        let e = Entry::parse("a.test:80:127.0.0.1:8080").unwrap();
        assert_eq!(
            e,
            Entry {
                host: Some("a.test"),
                port: Some(80),
                to_host: Some("127.0.0.1"),
                to_port: Ok(Some(8080)),
            }
        );
        let e = Entry::parse("::[::1]:").unwrap();
        assert_eq!((e.host, e.port, e.to_host), (None, None, Some("[::1]")));
        assert_eq!(e.to_port, Ok(None));
        let e = Entry::parse("[::1]:443:b.test").unwrap();
        assert_eq!(
            (e.host, e.port, e.to_host),
            (Some("[::1]"), Some(443), Some("b.test"))
        );
        assert_eq!(e.to_port, Ok(None));
        assert_eq!(Entry::parse("a.test:80:: 9").unwrap().to_port, Ok(Some(9)));
        // Never matched by curl: ignored.
        assert_eq!(Entry::parse("a.test"), None);
        assert_eq!(Entry::parse("a.test:80"), None);
        assert_eq!(Entry::parse("a.test:http:b.test:80"), None);
        // Matched, with a bad PORT2: exit 49 when used.
        for bad in ["abc", "99999", "-5", "8080:extra"] {
            let e = Entry::parse(&format!("a.test:80:b.test:{bad}")).map(|e| e.to_port);
            let message = format!("No valid port number in connect to host string ({bad})");
            assert_eq!(e, Some(Err(message)), "{bad}");
        }
    }

    #[test]
    fn the_first_match_decides_and_a_bad_port_fails_only_its_matches() {
        let args = ConnectToArgs::parse(&[
            "junk".to_owned(),
            "a.test:80:127.0.0.1:abc".to_owned(),
            "a.test::127.0.0.2:9".to_owned(),
            ":81::8181".to_owned(),
        ]);
        let error = args.check("a.test", 80).unwrap_err();
        assert_eq!(error.code(), 49);
        let dial = args.check("a.test", 443).unwrap();
        assert_eq!((dial.host.as_str(), dial.port), ("127.0.0.2", 9));
        assert!(dial.names_host && dial.names_port);
        let dial = args.check("b.test", 81).unwrap();
        assert_eq!((dial.host.as_str(), dial.port), ("b.test", 8181));
        assert!(!dial.names_host && dial.names_port);
        let dial = args.check("b.test", 80).unwrap();
        assert!(!dial.names_host && !dial.names_port);
    }
}
