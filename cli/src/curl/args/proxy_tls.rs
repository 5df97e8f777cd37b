//! The TLS flags of an `https://` proxy ([`ProxyTlsArgs`]), shared by curl mode and
//! `poolcurl load`. As in curl they are the proxy's alone: `--cacert`, `-k` and their kin
//! never reach the proxy, and these never reach an origin. [`crate::curl::setup`] turns them
//! into the pool's `proxy_tls` settings when an `https://` proxy is configured.

use std::path::PathBuf;

/// TLS for the connection to an `https://` proxy.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub(crate) struct ProxyTlsArgs {
    /// Verify an https:// proxy against the CA certificates in this PEM file (instead of the system's)
    #[arg(long = "proxy-cacert", value_name = "FILE")]
    pub(crate) proxy_cacert: Option<PathBuf>,

    /// Also trust the PEM certificates in these directories for an https:// proxy (DIR[:DIR...])
    #[arg(long = "proxy-capath", value_name = "DIR")]
    pub(crate) proxy_capath: Option<String>,

    /// Reject https:// proxy certificates this PEM certificate revocation list revokes
    #[arg(long = "proxy-crlfile", value_name = "FILE")]
    pub(crate) proxy_crlfile: Option<PathBuf>,

    /// Accept any certificate from an https:// proxy (insecure)
    #[arg(long = "proxy-insecure")]
    pub(crate) proxy_insecure: bool,

    /// Client certificate chain (PEM) to present to an https:// proxy, and the key's passphrase
    /// after a colon; the key may be in the same file
    #[arg(long = "proxy-cert", value_name = "FILE[:PASSWORD]")]
    pub(crate) proxy_cert: Option<PathBuf>,

    /// Private key (PEM) for --proxy-cert ("" for none, as curl 8 allows)
    #[arg(long = "proxy-key", value_name = "FILE")]
    pub(crate) proxy_key: Option<String>,

    /// Passphrase of an encrypted --proxy-key (PKCS #8)
    #[arg(long = "proxy-pass", value_name = "PHRASE")]
    pub(crate) proxy_pass: Option<String>,

    /// The format of --proxy-cert's file: PEM (default) or DER
    #[arg(long = "proxy-cert-type", value_name = "TYPE")]
    pub(crate) proxy_cert_type: Option<String>,

    /// The format of --proxy-key's file: PEM (default) or DER
    #[arg(long = "proxy-key-type", value_name = "TYPE")]
    pub(crate) proxy_key_type: Option<String>,

    /// The public keys an https:// proxy may present, as --pinnedpubkey takes them
    #[arg(long = "proxy-pinnedpubkey", value_name = "HASHES|FILE")]
    pub(crate) proxy_pinnedpubkey: Option<String>,

    /// TLS 1.2 cipher suites for an https:// proxy, as --ciphers takes them
    #[arg(long = "proxy-ciphers", value_name = "LIST")]
    pub(crate) proxy_ciphers: Option<String>,

    /// TLS 1.3 cipher suites for an https:// proxy, as --tls13-ciphers takes them
    #[arg(long = "proxy-tls13-ciphers", value_name = "LIST")]
    pub(crate) proxy_tls13_ciphers: Option<String>,
}
