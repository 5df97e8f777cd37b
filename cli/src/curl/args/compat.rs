//! curl flags poolcurl takes and that change nothing ([`CompatArgs`]): what they ask for is
//! already how poolcurl works, or curl built with OpenSSL (the curl Linux distributions ship,
//! and the one the parity suite runs) ignores them too, as settings of other TLS libraries or
//! of TLS versions below 1.2. They are accepted so that a curl command line runs unchanged;
//! each one's help says why it has no effect. Flags poolcurl cannot honour are refused instead
//! ([`super::unsupported`]).

/// Accepted for compatibility; none changes what poolcurl does.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CompatArgs {
    /// SOCKS5 authentication by user and password only (no effect: poolcurl never offers GSSAPI)
    #[arg(long = "socks5-basic")]
    pub(crate) socks5_basic: bool,

    /// Permissions (octal) of files created remotely (no effect: curl sets them on SFTP, SCP and FILE uploads, never on an HTTP transfer's output file)
    #[arg(long = "create-file-mode", value_name = "MODE", value_parser = super::parse::parse_octal)]
    pub(crate) create_file_mode: Option<u32>,

    /// Set TCP_NODELAY (no effect: the pool always sets it)
    #[arg(long = "tcp-nodelay")]
    pub(crate) tcp_nodelay: bool,

    /// Do not offer NPN (no effect: only ALPN is ever offered)
    #[arg(long = "no-npn")]
    pub(crate) no_npn: bool,

    /// Style -I/-i output on a terminal (no effect: poolcurl prints plain text)
    #[arg(long = "styled-output")]
    pub(crate) styled_output: bool,

    /// With -Z, open connections rather than wait to reuse one (no effect: the pool decides)
    #[arg(long = "parallel-immediate")]
    pub(crate) parallel_immediate: bool,

    /// Use TLS False Start (no effect: rustls has none, and curl with OpenSSL ignores it)
    #[arg(long = "false-start")]
    pub(crate) false_start: bool,

    /// Turn the BEAST workaround off (no effect: it concerns TLS 1.0; poolcurl speaks 1.2+)
    #[arg(long = "ssl-allow-beast")]
    pub(crate) ssl_allow_beast: bool,

    /// As --ssl-allow-beast, for an HTTPS proxy (no effect, as --ssl-allow-beast)
    #[arg(long = "proxy-ssl-allow-beast")]
    pub(crate) proxy_ssl_allow_beast: bool,

    /// Windows (Schannel) client certificate lookup (no effect here, as in curl with OpenSSL)
    #[arg(long = "ssl-auto-client-cert")]
    pub(crate) ssl_auto_client_cert: bool,

    /// As --ssl-auto-client-cert, for an HTTPS proxy (no effect, as --ssl-auto-client-cert)
    #[arg(long = "proxy-ssl-auto-client-cert")]
    pub(crate) proxy_ssl_auto_client_cert: bool,

    /// Schannel: no revocation checks (no effect, as in curl with OpenSSL; --crlfile applies)
    #[arg(long = "ssl-no-revoke")]
    pub(crate) ssl_no_revoke: bool,

    /// Schannel: ignore unreachable revocation servers (no effect, as in curl with OpenSSL)
    #[arg(long = "ssl-revoke-best-effort")]
    pub(crate) ssl_revoke_best_effort: bool,

    /// An HTTPS proxy's TLS at 1.0 or later (no effect: proxies get TLS 1.2 or 1.3 anyway)
    #[arg(long = "proxy-tlsv1")]
    pub(crate) proxy_tlsv1: bool,

    /// Entropy daemon socket (no effect: deprecated, curl ignores it since 7.84)
    #[arg(long = "egd-file", value_name = "FILE")]
    pub(crate) egd_file: Option<String>,

    /// File to seed the random generator (no effect: deprecated, curl ignores it since 7.84)
    #[arg(long = "random-file", value_name = "FILE")]
    pub(crate) random_file: Option<String>,
}
