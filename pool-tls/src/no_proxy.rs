//! The bypass list of a [`ProxyConfig`](crate::ProxyConfig): which hosts are reached directly
//! (`no_proxy` and curl's `--noproxy`), matched by name, IP address, CIDR block and port.
//!
//! What this module does not do: resolve names (a CIDR block matches IP-literal hosts only),
//! or choose a proxy.

use std::net::IpAddr;

use crate::resolve::unbracket;

/// A bypass list in `no_proxy` syntax: hosts that must be reached directly.
///
/// Comma-separated entries, case-insensitive, surrounding whitespace and empty entries ignored:
///
/// * `*` anywhere in the list bypasses every host.
/// * A host name (`example.com`, `.example.com` or `*.example.com`, all equivalent) matches that
///   host and its subdomains (`a.example.com`), but not `badexample.com`.
/// * An IP literal (`10.1.2.3`, `::1`, `[::1]`) matches that address.
/// * A CIDR block (`10.0.0.0/8`, `fd00::/8`) matches IP-literal hosts inside it; names are not
///   resolved.
/// * `host:port` or `[v6]:port` matches only that port (a bare IPv6 literal never has a port).
///
/// Entries that fit none of these, such as `10.0.0.0/99`, are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoProxy {
    all: bool,
    rules: Vec<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Rule {
    /// A host name without leading or trailing dots, lower-case.
    Domain(String, Option<u16>),
    Ip(IpAddr, Option<u16>),
    Cidr(IpAddr, u8),
}

impl NoProxy {
    /// Parses a comma-separated bypass list. Never fails: unusable entries are skipped.
    pub fn parse(list: &str) -> NoProxy {
        let mut no_proxy = NoProxy::default();
        for entry in list.split(',').map(|e| e.trim().to_ascii_lowercase()) {
            match entry.as_str() {
                "" => {}
                "*" => no_proxy.all = true,
                entry => no_proxy.rules.extend(parse_rule(entry)),
            }
        }
        no_proxy
    }

    /// Whether the list bypasses nothing.
    pub fn is_empty(&self) -> bool {
        !self.all && self.rules.is_empty()
    }

    /// Whether a request to `host:port` bypasses the proxy.
    ///
    /// `host` should be canonical (lower-case, IPv6 without brackets); brackets, upper case and
    /// a trailing dot are tolerated anyway.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let host = unbracket(host);
        let host = host.strip_suffix('.').unwrap_or(host);
        let ip = host.parse::<IpAddr>().ok();
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        self.rules.iter().any(|rule| match (rule, ip) {
            (Rule::Domain(name, p), None) => port_ok(p) && in_domain(host, name),
            (Rule::Ip(addr, p), Some(ip)) => *addr == ip && port_ok(p),
            (Rule::Cidr(net, bits), Some(ip)) => in_cidr(*net, *bits, ip),
            _ => false,
        })
    }
}

fn parse_rule(entry: &str) -> Option<Rule> {
    if let Some((addr, bits)) = entry.split_once('/') {
        let addr: IpAddr = unbracket(addr).parse().ok()?;
        let bits: u8 = bits.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        return (bits <= max).then_some(Rule::Cidr(addr, bits));
    }
    if let Ok(ip) = unbracket(entry).parse::<IpAddr>() {
        return Some(Rule::Ip(ip, None));
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((host, port)) => (host, Some(port.parse::<u16>().ok()?)),
        None => (entry, None),
    };
    if let Ok(ip) = unbracket(host).parse::<IpAddr>() {
        return Some(Rule::Ip(ip, port));
    }
    let name = host.strip_prefix("*.").unwrap_or(host).trim_matches('.');
    (!name.is_empty() && !name.contains([':', '[', ']', '/', '*']))
        .then(|| Rule::Domain(name.to_owned(), port))
}

/// Whether `host` is `name` or one of its subdomains, ignoring ASCII case.
fn in_domain(host: &str, name: &str) -> bool {
    let Some(split) = host.len().checked_sub(name.len()) else {
        return false;
    };
    let (head, tail) = host.as_bytes().split_at(split);
    tail.eq_ignore_ascii_case(name.as_bytes()) && (head.is_empty() || head.ends_with(b"."))
}

fn in_cidr(net: IpAddr, bits: u8, ip: IpAddr) -> bool {
    let (net, ip, width) = match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => (u128::from(n.to_bits()), u128::from(i.to_bits()), 32),
        (IpAddr::V6(n), IpAddr::V6(i)) => (n.to_bits(), i.to_bits(), 128),
        _ => return false,
    };
    let shift = width - u32::from(bits);
    shift >= width || (net >> shift) == (ip >> shift)
}
