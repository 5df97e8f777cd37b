//! IPv6 zone ids in URLs (`http://[fe80::1%25eth0]:8080/`), read and dialed as curl 7.88 does.
//!
//! A link-local address means something only on one interface, which the URL names after `%`
//! (written `%25`, the percent sign encoded, or `%` alone): curl takes the zone out of the host,
//! so `Host` carries the address alone (`%{url_effective}` shows the zone as `%25ZONE`), and
//! connects with the
//! interface's index as the address's scope. Here [`split`] takes the zone out before the URL
//! is parsed, the session adds a `--connect-to`-style rule that sends the address's connections
//! to `ADDRESS%ZONE`, and [`Zones`], in front of curl mode's resolvers, answers that name with
//! the address and its scope: a number is the index itself, a name is looked up among the
//! interfaces (an unknown one is scope 0, with which curl goes on too).
//!
//! The zone is curl's: hex digits, `:` and `.` for the address, then one to fifteen characters
//! up to the `]`. What this does not do: a zone in a redirect's `Location` (its address is
//! dialed without one), or two zones for one address in one command line (the first wins).

use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::sync::Arc;

use pool::{Resolve, ResolveFuture};

/// A URL's zone, taken out: the URL without it, the bracketed address as the URL's host now
/// reads, and `ADDRESS%ZONE`, the name the connections to it are sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Zoned {
    pub(crate) url: String,
    pub(crate) host: String,
    pub(crate) target: String,
    /// The host as curl shows it in `%{url_effective}`: `[ADDRESS%25ZONE]`.
    pub(crate) shown: String,
}

/// `text` with its IPv6 zone id taken out, if its host has one as curl reads it.
pub(crate) fn split(text: &str) -> Option<Zoned> {
    let authority = text.find("://").map_or(0, |at| at + 3);
    let end = text[authority..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |at| authority + at);
    let open = authority + text[authority..end].find('[')?;
    let close = open + text[open..end].find(']')?;
    let inside = &text[open + 1..close];
    let address_len = inside
        .bytes()
        .take_while(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.')
        .count();
    let zone = inside[address_len..].strip_prefix('%')?;
    // `%25` is an encoded percent sign, unless the zone would be left empty.
    let zone = match zone.strip_prefix("25") {
        Some(rest) if !rest.is_empty() => rest,
        _ => zone,
    };
    if zone.is_empty() || zone.len() > 15 {
        return None;
    }
    let address = &inside[..address_len];
    address.parse::<Ipv6Addr>().ok()?;
    Some(Zoned {
        url: format!(
            "{}{}{}",
            &text[..open + 1 + address_len],
            "]",
            &text[close + 1..]
        ),
        host: format!("[{address}]"),
        target: format!("{address}%{zone}"),
        shown: format!("[{address}%25{zone}]"),
    })
}

/// Answers `ADDRESS%ZONE` with the address and the zone's scope, and asks `inner` for every
/// other name.
pub(crate) struct Zones {
    /// The resolver every other name goes to.
    pub(crate) inner: Arc<dyn Resolve>,
}

impl std::fmt::Debug for Zones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zones").finish_non_exhaustive()
    }
}

impl Resolve for Zones {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let zoned = host
            .split_once('%')
            .and_then(|(address, zone)| Some((address.parse::<Ipv6Addr>().ok()?, zone)));
        let Some((address, zone)) = zoned else {
            return self.inner.resolve(host, port);
        };
        let scope = scope_of(zone);
        let addr = SocketAddr::V6(SocketAddrV6::new(address, port, 0, scope));
        Box::pin(async move { Ok(vec![addr]) })
    }
}

/// The scope of a zone: a number as it is, an interface's name as its index (0 for none).
fn scope_of(zone: &str) -> u32 {
    if let Ok(index) = zone.parse::<u32>() {
        return index;
    }
    std::net::UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0))
        .or_else(|_| std::net::UdpSocket::bind(("0.0.0.0", 0)))
        .ok()
        .and_then(|socket| rustix::net::netdevice::name_to_index(&socket, zone).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_come_out_of_the_host_as_curl_reads_them() {
        let zoned = split("http://[fe80::1%25eth0]:8080/x?q=[1]").unwrap();
        assert_eq!(zoned.url, "http://[fe80::1]:8080/x?q=[1]");
        assert_eq!(zoned.host, "[fe80::1]");
        assert_eq!(zoned.target, "fe80::1%eth0");
        assert_eq!(zoned.shown, "[fe80::1%25eth0]");
        // A bare `%`, and `%25` that would leave nothing is the zone itself.
        assert_eq!(split("[::1%lo]/").unwrap().url, "[::1]/");
        assert_eq!(split("http://[::1%25]/").unwrap().target, "::1%25");
        for plain in [
            "http://[::1]/",
            "http://host/%25x",
            "http://[::1%]/",
            "http://[::1%0123456789abcdef]/",
            "http://[nothex%1]/",
        ] {
            assert_eq!(split(plain), None, "{plain}");
        }
    }

    #[tokio::test]
    async fn a_zoned_name_is_the_address_with_its_scope() {
        struct Unasked;
        impl Resolve for Unasked {
            fn resolve(&self, host: &str, _: u16) -> ResolveFuture {
                let host = host.to_owned();
                Box::pin(async move { Err(std::io::Error::other(host)) })
            }
        }
        let zones = Zones {
            inner: Arc::new(Unasked),
        };
        let found = zones.resolve("fe80::1%7", 80).await.unwrap();
        assert_eq!(
            found,
            [SocketAddr::V6(SocketAddrV6::new(
                "fe80::1".parse().unwrap(),
                80,
                0,
                7
            ))]
        );
        // The loopback interface has an index; an unknown name is scope 0.
        let lo = zones.resolve("::1%lo", 80).await.unwrap();
        assert!(
            matches!(lo[0], SocketAddr::V6(a) if a.scope_id() > 0),
            "{lo:?}"
        );
        let unknown = zones.resolve("::1%nosuchif0", 80).await.unwrap();
        assert!(matches!(unknown[0], SocketAddr::V6(a) if a.scope_id() == 0));
        assert!(zones.resolve("a.test", 80).await.is_err());
    }
}
