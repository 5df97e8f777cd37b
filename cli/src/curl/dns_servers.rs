//! `--dns-servers`, `--dns-ipv4-addr`, `--dns-ipv6-addr`: names resolved by chosen DNS servers,
//! or by the system's from a chosen local address, as a curl built with c-ares resolves them.
//!
//! curl passes these to c-ares; a curl built without it (Debian's 7.88) refuses them with "the
//! installed libcurl version doesn't support this", exit 2. poolcurl asks through the pool's
//! [`pool::HickoryResolver`]: over UDP, over TCP when an answer comes back truncated, the hosts
//! file first (c-ares reads it first too), and each answer kept for its TTL for the rest of the
//! run. It asks for `A` and `AAAA` records at once (only one of them under `-4`/`-6`), as curl
//! asks c-ares. `--resolve` entries are looked up before it and `--doh-url`, when given, is
//! asked instead of it, as in curl.
//!
//! The list is read as c-ares reads it: `HOST[:PORT]` separated by commas, where `HOST` is an
//! IPv4 or IPv6 address (in brackets when a port follows: `[::1]:5353`) and the port is 53 by
//! default. An empty list means the system's servers, as in curl. A list or local address that
//! does not parse is curl's exit 43 (c-ares's "bad string", which curl reports as "A libcurl
//! function was given a bad argument"), before any transfer.
//!
//! The local addresses bind the queries sent to servers of their family. `--dns-interface`
//! stays unsupported: hickory binds its sockets to an address, never to a device.

use std::net::{IpAddr, SocketAddr};

use pool::HickoryResolver;
use pool::hickory_resolver::TokioResolver;
use pool::hickory_resolver::config::{
    LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use pool::hickory_resolver::name_server::TokioConnectionProvider;
use pool::hickory_resolver::proto::xfer::Protocol;

use super::args::NetArgs;
use super::exit::CurlError;

/// The resolver the `--dns-*` flags ask for; `None` when they leave the system's in place.
///
/// # Errors
///
/// Exit 43 for a server list or local address that does not parse; exit 2 when the system's
/// DNS configuration, needed for local addresses without a list, cannot be read.
pub(crate) fn resolver(args: &NetArgs) -> Result<Option<HickoryResolver>, CurlError> {
    let servers = match args.dns_servers.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(list) => Some(parse_servers(list).ok_or_else(bad_argument)?),
    };
    let local_v4 = local_address(args.dns_ipv4_addr.as_deref(), false)?;
    let local_v6 = local_address(args.dns_ipv6_addr.as_deref(), true)?;
    if servers.is_none() && local_v4.is_none() && local_v6.is_none() {
        return Ok(None);
    }
    // The name servers asked, with the search domains of the system's configuration when
    // no list replaces it; each bound to the local address of its family, if one is given.
    let (domain, search, mut name_servers, mut options) = match servers {
        Some(servers) => {
            let both = servers.into_iter().flat_map(|server| {
                [Protocol::Udp, Protocol::Tcp].map(|proto| NameServerConfig::new(server, proto))
            });
            (None, Vec::new(), both.collect(), ResolverOpts::default())
        }
        None => {
            let (config, options) = pool::hickory_resolver::system_conf::read_system_conf()
                .map_err(|e| {
                    CurlError::new(
                        2,
                        format!("could not read the system's DNS configuration: {e}"),
                    )
                })?;
            let servers: Vec<NameServerConfig> = config.name_servers().to_vec();
            (
                config.domain().cloned(),
                config.search().to_vec(),
                servers,
                options,
            )
        }
    };
    for server in &mut name_servers {
        let local = if server.socket_addr.is_ipv6() {
            local_v6
        } else {
            local_v4
        };
        if let Some(ip) = local {
            server.bind_addr = Some(SocketAddr::new(ip, 0));
        }
    }
    let config = ResolverConfig::from_parts(domain, search, name_servers);
    options.use_hosts_file = ResolveHosts::Always;
    // curl asks c-ares for both families at once, or for the one `-4`/`-6` names (hickory's
    // default would ask for IPv6 only when IPv4 has no answer).
    options.ip_strategy = if args.ipv4 {
        LookupIpStrategy::Ipv4Only
    } else if args.ipv6 {
        LookupIpStrategy::Ipv6Only
    } else {
        LookupIpStrategy::Ipv4AndIpv6
    };
    let resolver = TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
        .with_options(options)
        .build();
    Ok(Some(HickoryResolver::from_resolver(resolver)))
}

/// c-ares's reading of a server list: `None` if any entry is not an address with an optional
/// port.
fn parse_servers(list: &str) -> Option<Vec<SocketAddr>> {
    list.split(',')
        .map(|entry| parse_server(entry.trim()))
        .collect()
}

/// `IP`, `IPv4:PORT` or `[IPv6]:PORT`; port 53 when none is given.
fn parse_server(entry: &str) -> Option<SocketAddr> {
    const DNS_PORT: u16 = 53;
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, DNS_PORT));
    }
    if let Some(rest) = entry.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let ip: std::net::Ipv6Addr = ip.parse().ok()?;
        let port = match after {
            "" => DNS_PORT,
            _ => port(after.strip_prefix(':')?)?,
        };
        return Some(SocketAddr::new(IpAddr::V6(ip), port));
    }
    let (ip, text) = entry.split_once(':')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    Some(SocketAddr::new(IpAddr::V4(ip), port(text)?))
}

/// A port number other than 0.
fn port(text: &str) -> Option<u16> {
    text.parse().ok().filter(|&port| port != 0)
}

/// `--dns-ipv4-addr` / `--dns-ipv6-addr`: an address of the family, or exit 43.
fn local_address(text: Option<&str>, ipv6: bool) -> Result<Option<IpAddr>, CurlError> {
    let Some(text) = text else {
        return Ok(None);
    };
    match text.trim().parse::<IpAddr>() {
        Ok(ip) if ip.is_ipv6() == ipv6 => Ok(Some(ip)),
        _ => Err(bad_argument()),
    }
}

/// curl's exit 43, which c-ares's refusals of a list or an address come to.
fn bad_argument() -> CurlError {
    CurlError::new(43, "A libcurl function was given a bad argument")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_lists_are_read_as_c_ares_reads_them() {
        let read = |list: &str| {
            parse_servers(list).map(|v| v.iter().map(ToString::to_string).collect::<Vec<_>>())
        };
        assert_eq!(read("127.0.0.1"), Some(vec!["127.0.0.1:53".to_owned()]));
        assert_eq!(
            read("10.0.0.1:5353, ::1,[::1]:5300,[fe80::1]"),
            Some(vec![
                "10.0.0.1:5353".to_owned(),
                "[::1]:53".to_owned(),
                "[::1]:5300".to_owned(),
                "[fe80::1]:53".to_owned(),
            ])
        );
        for bad in [
            "dns.example",
            "10.0.0.1:",
            "10.0.0.1:0",
            "10.0.0.1:70000",
            "[::1",
            "[::1]5",
            "1.2.3.4,",
            "::1:53x",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_local_address_must_be_of_its_family() {
        assert_eq!(
            local_address(Some("127.0.0.1"), false).unwrap(),
            Some("127.0.0.1".parse().unwrap())
        );
        assert_eq!(
            local_address(Some("::1"), true).unwrap(),
            Some("::1".parse().unwrap())
        );
        assert_eq!(local_address(Some("::1"), false).unwrap_err().code(), 43);
        assert_eq!(local_address(Some("eth0"), true).unwrap_err().code(), 43);
        assert_eq!(local_address(None, true).unwrap(), None);
    }
}
