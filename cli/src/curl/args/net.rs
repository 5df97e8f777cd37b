//! The curl-mode connection flags that `poolcurl load` does not share ([`NetArgs`]): address
//! family, the happy-eyeballs delay, HTTP/1.0, client certificates and minimum TLS versions. [`crate::curl::setup`]
//! turns them into pool settings.

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
}
