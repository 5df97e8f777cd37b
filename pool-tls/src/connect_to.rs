//! Dialing another host and port than an origin's own (curl's `--connect-to`).
//!
//! A [`ConnectTo`] is an ordered list of rules. The first rule matching an origin's host and
//! port says where the connector dials instead; everything above the socket keeps the origin:
//! TLS sends the origin's name (SNI) and checks the certificate against it, requests carry the
//! origin's `Host` / `:authority`, and the pool keys the connection by the origin. The dial
//! host goes through the connector's resolver (so `--resolve` overrides apply to it), unless it
//! is an IP literal.
//!
//! Through a proxy, a `CONNECT` tunnel asks the proxy for the dial target; a forward proxy
//! (absolute-form requests) gets the origin, as curl does.
//!
//! What this does not do: rewrite URLs or requests, or choose among several targets. Rules
//! are fixed when the connector is built, so one origin always dials the same place and the
//! pool's reuse by origin stays sound.

use std::fmt;
use std::net::IpAddr;

use crate::resolve::{normalize_host, unbracket};

/// Rules that send connections for chosen origins to another host and port.
///
/// ```
/// use pool_tls::ConnectTo;
///
/// // Requests for api.example.com:443 connect to 10.0.0.7:8443; TLS still verifies
/// // api.example.com. Any host on port 80 connects to port 8080 of that same host.
/// let rules = ConnectTo::new()
///     .rule(Some("api.example.com"), Some(443), Some("10.0.0.7"), Some(8443))
///     .rule(None, Some(80), None, Some(8080));
/// let target = rules.dial_target("api.example.com", 443);
/// assert_eq!((target.host(), target.port()), ("10.0.0.7", 8443));
/// let target = rules.dial_target("other.test", 80);
/// assert_eq!((target.host(), target.port()), ("other.test", 8080));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConnectTo {
    rules: Vec<Rule>,
}

#[derive(Clone, Debug)]
struct Rule {
    /// The normalized host a request must have; any host when `None`.
    host: Option<Box<str>>,
    /// The port a request must have; any port when `None`.
    port: Option<u16>,
    /// The host to dial (brackets stripped); the origin's own when `None`.
    to_host: Option<Box<str>>,
    /// `to_host` when it is an IP literal.
    to_ip: Option<IpAddr>,
    /// The port to dial; the origin's own when `None`.
    to_port: Option<u16>,
}

/// Where a connection for an origin is dialed: the host to resolve (or the IP literal) and
/// the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DialTarget<'a> {
    host: &'a str,
    ip: Option<IpAddr>,
    port: u16,
}

impl<'a> DialTarget<'a> {
    /// The host name or IP literal to dial, without IPv6 brackets.
    pub fn host(&self) -> &'a str {
        self.host
    }

    /// The host as an IP address, when it is a literal (no resolution happens then).
    pub fn ip(&self) -> Option<IpAddr> {
        self.ip
    }

    /// The port to dial.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// `host:port`, an IPv6 literal in brackets: the authority a `CONNECT` tunnel asks for.
impl fmt::Display for DialTarget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            Some(IpAddr::V6(_)) => write!(f, "[{}]:{}", self.host, self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

impl ConnectTo {
    /// No rules: every origin dials its own host and port.
    pub fn new() -> ConnectTo {
        ConnectTo::default()
    }

    /// Adds a rule after the existing ones: a connection for `host` (any host when `None`;
    /// compared case-insensitively, IPv6 with or without brackets) on `port` (any port when
    /// `None`) dials `to_host` (the origin's own host when `None`; an IPv6 literal with or
    /// without brackets) on `to_port` (the origin's own port when `None`). The first matching
    /// rule wins.
    #[must_use]
    pub fn rule(
        mut self,
        host: Option<&str>,
        port: Option<u16>,
        to_host: Option<&str>,
        to_port: Option<u16>,
    ) -> ConnectTo {
        let to_host = to_host.map(unbracket);
        self.rules.push(Rule {
            host: host.map(normalize_host),
            port,
            to_host: to_host.map(Box::from),
            to_ip: to_host.and_then(|h| h.parse().ok()),
            to_port,
        });
        self
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The position (in the order added, from 0) of the first rule matching `host` (with or
    /// without IPv6 brackets) and `port`, if any: the rule [`dial_target`](Self::dial_target)
    /// applies.
    pub fn matching_rule(&self, host: &str, port: u16) -> Option<usize> {
        if self.rules.is_empty() {
            return None;
        }
        let key = normalize_host(host);
        self.rules.iter().position(|rule| {
            rule.host.as_ref().is_none_or(|h| *h == key) && rule.port.is_none_or(|p| p == port)
        })
    }

    /// Where a connection for `host` (an origin's host, with or without IPv6 brackets) and
    /// `port` is dialed: the first matching rule's target, or `host` and `port` themselves.
    pub fn dial_target<'a>(&'a self, host: &'a str, port: u16) -> DialTarget<'a> {
        let host = unbracket(host);
        let own = DialTarget {
            host,
            ip: host.parse().ok(),
            port,
        };
        let Some(rule) = self.matching_rule(host, port).map(|at| &self.rules[at]) else {
            return own;
        };
        let (host, ip) = match &rule.to_host {
            Some(to) => (&**to, rule.to_ip),
            None => (own.host, own.ip),
        };
        DialTarget {
            host,
            ip,
            port: rule.to_port.unwrap_or(port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(rules: &ConnectTo, host: &str, port: u16) -> (String, Option<IpAddr>, u16) {
        let t = rules.dial_target(host, port);
        (t.host().to_owned(), t.ip(), t.port())
    }

    #[test]
    fn without_a_matching_rule_the_origin_dials_itself() {
        let rules = ConnectTo::new().rule(Some("a.test"), Some(443), Some("127.0.0.1"), Some(1));
        assert_eq!(target(&rules, "b.test", 443), ("b.test".into(), None, 443));
        assert_eq!(target(&rules, "a.test", 80), ("a.test".into(), None, 80));
        let ip = "::1".parse().ok();
        assert_eq!(
            target(&ConnectTo::new(), "[::1]", 80),
            ("::1".into(), ip, 80)
        );
    }

    #[test]
    fn the_first_matching_rule_wins_and_empty_parts_keep_the_origins() {
        let rules = ConnectTo::new()
            .rule(Some("A.Test"), Some(80), Some("[::1]"), Some(8080))
            .rule(Some("a.test"), Some(80), Some("127.0.0.1"), Some(9))
            .rule(None, Some(81), None, Some(8181))
            .rule(Some("c.test"), None, Some("d.test"), None);
        let v6 = "::1".parse().ok();
        assert_eq!(target(&rules, "a.test", 80), ("::1".into(), v6, 8080));
        assert_eq!(rules.matching_rule("a.test", 80), Some(0));
        assert_eq!(rules.matching_rule("c.test", 80), Some(3));
        assert_eq!(rules.matching_rule("e.test", 80), None);
        assert_eq!(
            target(&rules, "any.test", 81),
            ("any.test".into(), None, 8181)
        );
        assert_eq!(target(&rules, "c.test", 7), ("d.test".into(), None, 7));
    }

    #[test]
    fn ipv6_hosts_match_in_any_spelling() {
        let rules = ConnectTo::new().rule(Some("[0::1]"), None, Some("127.0.0.1"), None);
        let v4 = "127.0.0.1".parse().ok();
        assert_eq!(target(&rules, "[::1]", 80), ("127.0.0.1".into(), v4, 80));
        assert_eq!(target(&rules, "::1", 80), ("127.0.0.1".into(), v4, 80));
        assert_eq!(rules.dial_target("::1", 80).to_string(), "127.0.0.1:80");
        let to_v6 = ConnectTo::new().rule(None, None, Some("[::1]"), Some(8));
        assert_eq!(to_v6.dial_target("a.test", 1).to_string(), "[::1]:8");
    }
}
