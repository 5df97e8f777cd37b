//! The curl-mode connection flags that `poolcurl load` does not share ([`NetArgs`]): address
//! family, the happy-eyeballs delay, HTTP/1.0, client certificates and TLS versions.
//! [`crate::curl::setup`] turns them into pool settings.

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

    /// Client certificate chain (PEM) to present when a server asks; the key may be in the same file
    #[arg(short = 'E', long = "cert", value_name = "FILE")]
    pub(crate) cert: Option<PathBuf>,

    /// Private key (PEM) for --cert
    #[arg(long = "key", value_name = "FILE")]
    pub(crate) key: Option<PathBuf>,

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

    /// Use TLS 1.3 or later
    #[arg(long = "tlsv1.3")]
    pub(crate) tlsv1_3: bool,

    /// Use at most this TLS version (1.0, 1.1, 1.2, 1.3 or default); below 1.2 no TLS connection can be made (exit 35)
    #[arg(long = "tls-max", value_name = "VERSION", value_parser = ["1.0", "1.1", "1.2", "1.3", "default"])]
    pub(crate) tls_max: Option<String>,
}

impl NetArgs {
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
