//! curl flags poolcurl takes and that change nothing, because what they ask for is already
//! how poolcurl works ([`CompatArgs`]). They are accepted so that a curl command line runs
//! unchanged; each one's help says why it has no effect. Flags poolcurl cannot honour are
//! refused instead ([`super::unsupported`]).

use std::time::Duration;

use super::parse::parse_seconds;

/// Accepted for compatibility; none changes what poolcurl does.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CompatArgs {
    /// SOCKS5 authentication by user and password only (no effect: poolcurl never offers GSSAPI)
    #[arg(long = "socks5-basic")]
    pub(crate) socks5_basic: bool,

    /// Set TCP_NODELAY (no effect: the pool always sets it)
    #[arg(long = "tcp-nodelay")]
    pub(crate) tcp_nodelay: bool,

    /// Do not offer NPN (no effect: only ALPN is ever offered)
    #[arg(long = "no-npn")]
    pub(crate) no_npn: bool,

    /// Style -I/-i output on a terminal (no effect: poolcurl prints plain text)
    #[arg(long = "styled-output")]
    pub(crate) styled_output: bool,

    /// How long to wait for 100 Continue (no effect: poolcurl sends no Expect: 100-continue)
    #[arg(long = "expect100-timeout", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) expect100_timeout: Option<Duration>,

    /// With -Z, open connections rather than wait to reuse one (no effect: the pool decides)
    #[arg(long = "parallel-immediate")]
    pub(crate) parallel_immediate: bool,
}
