//! The curl-mode connection flags that `poolcurl load` does not share ([`NetArgs`]): address
//! family, the happy-eyeballs delay, HTTP/1.0, client certificates, TLS versions and what the
//! handshake offers ([`super::TlsChoiceArgs`]).
//! [`crate::curl::setup`] turns them into pool settings.

use std::ops::RangeInclusive;
use std::path::PathBuf;

/// Address family, HTTP/1.0 and TLS details of curl mode.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub(crate) struct NetArgs {
    /// Resolve names to IPv4 addresses only
    #[arg(short = '4', long = "ipv4", overrides_with = "ipv6")]
    pub(crate) ipv4: bool,

    /// Resolve names to IPv6 addresses only
    #[arg(short = '6', long = "ipv6", overrides_with = "ipv4")]
    pub(crate) ipv6: bool,

    /// Resolve host names by DNS-over-HTTPS at this https:// URL (A and AAAA queries by POST)
    #[arg(long = "doh-url", value_name = "URL")]
    pub(crate) doh_url: Option<String>,

    /// Ask these DNS servers (ADDRESS or ADDRESS:PORT, comma-separated) instead of the system's
    #[arg(long = "dns-servers", value_name = "ADDRESSES", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) dns_servers: Option<String>,

    /// Send DNS queries from this local IPv4 address
    #[arg(long = "dns-ipv4-addr", value_name = "ADDRESS")]
    pub(crate) dns_ipv4_addr: Option<String>,

    /// Send DNS queries from this local IPv6 address
    #[arg(long = "dns-ipv6-addr", value_name = "ADDRESS")]
    pub(crate) dns_ipv6_addr: Option<String>,

    /// Do not verify the DoH server's certificate
    #[arg(long = "doh-insecure")]
    pub(crate) doh_insecure: bool,

    /// Require a good stapled OCSP response from the DoH server
    #[arg(long = "doh-cert-status")]
    pub(crate) doh_cert_status: bool,

    /// Wait MS milliseconds for a connection attempt before racing the next address (RFC 8305)
    #[arg(long = "happy-eyeballs-timeout-ms", value_name = "MS")]
    pub(crate) happy_eyeballs_timeout_ms: Option<u64>,

    /// Send HTTP/1.0 requests (over HTTP/1 connections)
    #[arg(
        short = '0',
        long = "http1.0",
        overrides_with_all = ["http1_1", "http2", "http2_prior_knowledge"]
    )]
    pub(crate) http1_0: bool,

    /// Accept an HTTP/0.9 reply (a body without a status line or headers), read to the close
    #[arg(long = "http0.9")]
    pub(crate) http0_9: bool,

    /// Bind connections to a local port of this range (NUM or FROM-TO), the first that is free; 0 (or 0-TO) lets the OS pick, as curl
    #[arg(long = "local-port", value_name = "RANGE", value_parser = parse_local_port)]
    local_port: Option<RangeInclusive<u16>>,

    /// Client certificate chain (PEM) to present when a server asks, and the key's passphrase
    /// after a colon; the key may be in the same file
    #[arg(short = 'E', long = "cert", value_name = "FILE[:PASSWORD]")]
    pub(crate) cert: Option<PathBuf>,

    /// Private key (PEM) for --cert
    #[arg(long = "key", value_name = "FILE")]
    pub(crate) key: Option<PathBuf>,

    /// Passphrase of an encrypted --key (PKCS #8)
    #[arg(long = "pass", value_name = "PHRASE")]
    pub(crate) pass: Option<String>,

    /// The format of --cert's file: PEM (default) or DER
    #[arg(long = "cert-type", value_name = "TYPE")]
    pub(crate) cert_type: Option<String>,

    /// The format of --key's file: PEM (default) or DER
    #[arg(long = "key-type", value_name = "TYPE")]
    pub(crate) key_type: Option<String>,

    /// The public keys the server may present: sha256//BASE64[;sha256//BASE64...] or a PEM or DER public key file (a mismatch is exit 90)
    #[arg(long = "pinnedpubkey", value_name = "HASHES|FILE")]
    pub(crate) pinnedpubkey: Option<String>,

    /// Use TLS 1.0 or later (always true: poolcurl speaks TLS 1.2 and 1.3)
    #[arg(short = '1', long = "tlsv1")]
    pub(crate) tlsv1: bool,

    /// Use TLS 1.0 or later (always true: poolcurl speaks TLS 1.2 and 1.3)
    #[arg(long = "tlsv1.0")]
    pub(crate) tlsv1_0: bool,

    /// Use TLS 1.1 or later (always true: poolcurl speaks TLS 1.2 and 1.3)
    #[arg(long = "tlsv1.1")]
    pub(crate) tlsv1_1: bool,

    /// Use TLS 1.2 or later (always true: poolcurl speaks TLS 1.2 and 1.3)
    #[arg(long = "tlsv1.2")]
    pub(crate) tlsv1_2: bool,

    /// Idle SECONDS before TCP keepalive probes start (default 60, as curl)
    #[arg(long = "keepalive-time", value_name = "SECONDS")]
    pub(crate) keepalive_time: Option<u64>,

    /// Send HAProxy's PROXY protocol line (v1) first on each connection, for servers behind a load balancer
    #[arg(long = "haproxy-protocol")]
    pub(crate) haproxy_protocol: bool,

    /// Send no TCP keepalive probes
    #[arg(long = "no-keepalive")]
    pub(crate) no_keepalive: bool,

    /// Use TLS 1.3 or later
    #[arg(long = "tlsv1.3")]
    pub(crate) tlsv1_3: bool,

    /// Use at most this TLS version (1.0, 1.1, 1.2, 1.3 or default); below 1.2 no TLS connection can be made (exit 35)
    #[arg(long = "tls-max", value_name = "VERSION", value_parser = ["1.0", "1.1", "1.2", "1.3", "default"])]
    pub(crate) tls_max: Option<String>,

    /// Cipher suites, groups, ALPN and session resumption (`--ciphers`, `--no-alpn`, ...).
    #[command(flatten)]
    pub(crate) tls: super::TlsChoiceArgs,
}

/// curl's TCP keepalive idle time when `--keepalive-time` is not given.
const DEFAULT_KEEPALIVE: u64 = 60;

/// The longest keepalive idle time and interval Linux takes, in seconds. curl passes a longer
/// `--keepalive-time` on, the kernel refuses it and curl goes on without it (probes at the
/// OS's times); the pool refuses such a value at build, so a longer time is sent as this one:
/// the transfer runs, as curl's does, with probes as rare as the kernel allows.
const MAX_KEEPALIVE: u64 = 32_767;

impl NetArgs {
    /// The local ports to bind to (`--local-port`): none when the range starts at port 0,
    /// which curl takes as "let the OS pick" (its `CURLOPT_LOCALPORT` of 0).
    pub(crate) fn local_ports(&self) -> Option<RangeInclusive<u16>> {
        self.local_port.clone().filter(|ports| *ports.start() > 0)
    }

    /// The TCP keepalive idle time: curl sends probes after 60 s of silence unless told
    /// otherwise (`--keepalive-time`), or not at all (`--no-keepalive`, or a time of 0). curl
    /// also spaces the probes by this time (`TCP_KEEPINTVL`). Over 32767 s, 32767 s (see
    /// [`MAX_KEEPALIVE`]).
    pub(crate) fn tcp_keepalive(&self) -> Option<std::time::Duration> {
        let seconds = self.keepalive_time.unwrap_or(DEFAULT_KEEPALIVE);
        (!self.no_keepalive && seconds > 0)
            .then(|| std::time::Duration::from_secs(seconds.min(MAX_KEEPALIVE)))
    }

    /// Why no TLS connection can be made with these flags, if so: TLS versions no TLS can meet
    /// (exit 35) or a cipher or curve list that picks nothing (exit 59). As curl, it fails the
    /// `https://` transfers only, while `http://` ones still run.
    pub(crate) fn tls_refusal(&self) -> Option<crate::curl::exit::CurlError> {
        if let Err(message) = self.tls_versions() {
            return Some(crate::curl::exit::CurlError::new(35, message));
        }
        self.tls.choices().err()
    }

    /// The TLS versions the flags allow, oldest and newest; or why no TLS connection can be
    /// made with them (curl's exit 35 for an `https://` URL, while `http://` URLs still work).
    pub(crate) fn tls_versions(&self) -> Result<(pool::TlsVersion, pool::TlsVersion), String> {
        use pool::TlsVersion::{Tls12, Tls13};
        let min = if self.tlsv1_3 { Tls13 } else { Tls12 };
        let max = match self.tls_max.as_deref() {
            Some(old @ ("1.0" | "1.1")) => {
                return Err(format!(
                    "TLS connect error: --tls-max {old}: poolcurl speaks TLS 1.2 and 1.3 only"
                ));
            }
            Some("1.2") => Tls12,
            _ => Tls13,
        };
        if min > max {
            return Err("TLS connect error: --tls-max 1.2 is below --tlsv1.3".to_owned());
        }
        Ok((min, max))
    }
}

/// `--local-port NUM` or `FROM-TO`: ports 1 to 65535, the range not reversed (curl refuses
/// anything else as badly used).
/// A port of 0 is allowed here: curl takes `--local-port 0` (and `0-TO`) as no local port
/// (see [`NetArgs::local_ports`]).
fn parse_local_port(text: &str) -> Result<RangeInclusive<u16>, String> {
    let port = |part: &str| {
        part.trim()
            .parse::<u16>()
            .ok()
            .ok_or_else(|| format!("{text:?} is not a port or FROM-TO range"))
    };
    let (first, last) = match text.split_once('-') {
        Some((first, last)) => (port(first)?, port(last)?),
        None => {
            let only = port(text)?;
            (only, only)
        }
    };
    if first > last {
        return Err(format!("{text:?} is a reversed range"));
    }
    Ok(first..=last)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::curl::args::parse_test_args;

    #[test]
    fn tcp_keepalive_follows_curl() {
        let keepalive = |argv: &[&str]| parse_test_args(argv).0.net.tcp_keepalive();
        assert_eq!(keepalive(&["http://a/"]), Some(Duration::from_secs(60)));
        let five = keepalive(&["--keepalive-time", "5", "http://a/"]);
        assert_eq!(five, Some(Duration::from_secs(5)));
        assert_eq!(keepalive(&["--no-keepalive", "http://a/"]), None);
        assert_eq!(keepalive(&["--keepalive-time", "0", "http://a/"]), None);
        // The kernel takes at most 32767 s; curl's transfer runs past a longer one.
        let long = keepalive(&["--keepalive-time", "100000", "http://a/"]);
        assert_eq!(long, Some(Duration::from_secs(32_767)));
    }

    #[test]
    fn local_ports_are_a_port_or_a_range() {
        assert_eq!(super::parse_local_port("41000"), Ok(41000..=41000));
        assert_eq!(super::parse_local_port("41000-41010"), Ok(41000..=41010));
        for bad in ["abc", "70000", "5-3", "5-0", "1-", "-2", ""] {
            assert!(super::parse_local_port(bad).is_err(), "{bad}");
        }
        // Port 0 is curl's "no local port", with or without a range after it.
        let ports = |argv: &[&str]| parse_test_args(argv).0.net.local_ports();
        assert_eq!(ports(&["--local-port", "0", "http://a/"]), None);
        assert_eq!(ports(&["--local-port", "0-10", "http://a/"]), None);
        assert_eq!(
            ports(&["--local-port", "41000-41010", "http://a/"]),
            Some(41000..=41010)
        );
    }

    #[test]
    fn tls_versions_follow_curl() {
        use pool::TlsVersion::{Tls12, Tls13};
        let versions = |argv: &[&str]| parse_test_args(argv).0.net.tls_versions();
        assert_eq!(versions(&["http://a/"]), Ok((Tls12, Tls13)));
        assert_eq!(versions(&["--tlsv1.3", "http://a/"]), Ok((Tls13, Tls13)));
        assert_eq!(
            versions(&["--tls-max", "1.2", "http://a/"]),
            Ok((Tls12, Tls12))
        );
        assert!(versions(&["--tls-max", "1.1", "http://a/"]).is_err());
        assert!(versions(&["--tlsv1.3", "--tls-max", "1.2", "http://a/"]).is_err());
    }
}
