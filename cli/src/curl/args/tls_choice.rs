//! What curl mode's TLS handshakes offer ([`TlsChoiceArgs`]): cipher suites, key exchange
//! groups, ALPN and session resumption, and whether they require a stapled certificate status. The lists are read by [`crate::curl::ciphers`]; a list
//! that picks nothing fails `https://` transfers (exit 59), not the command line.

/// The handshake's offers.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub(crate) struct TlsChoiceArgs {
    /// TLS 1.2 cipher suites, as an OpenSSL cipher string (names, aliases such as HIGH or ECDHE, !, -, +)
    #[arg(long = "ciphers", value_name = "LIST")]
    pub(crate) ciphers: Option<String>,

    /// TLS 1.3 cipher suites (TLS_AES_128_GCM_SHA256:...)
    #[arg(long = "tls13-ciphers", value_name = "LIST")]
    pub(crate) tls13_ciphers: Option<String>,

    /// Key exchange groups, most preferred first (X25519:P-256:P-384)
    #[arg(long = "curves", value_name = "LIST")]
    pub(crate) curves: Option<String>,

    /// Offer no ALPN: HTTP/1.1 over TLS (HTTP/2 with prior knowledge under --http2-prior-knowledge)
    #[arg(long = "no-alpn")]
    pub(crate) no_alpn: bool,

    /// Make a full TLS handshake on every connection (no session resumption)
    #[arg(long = "no-sessionid")]
    pub(crate) no_sessionid: bool,

    /// Require the server to staple a good OCSP status for its certificate (exit 91 otherwise)
    #[arg(long = "cert-status")]
    pub(crate) cert_status: bool,
}

/// The handshake's offers, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TlsChoices {
    /// The cipher suites (empty: the pool's default).
    pub(crate) suites: Vec<pool::CipherSuite>,
    /// The key exchange groups (empty: the pool's default).
    pub(crate) groups: Vec<pool::NamedGroup>,
}

impl TlsChoiceArgs {
    /// The lists, read.
    ///
    /// # Errors
    ///
    /// Exit 59 for a list that picks nothing poolcurl's TLS has.
    pub(crate) fn choices(&self) -> Result<TlsChoices, crate::curl::exit::CurlError> {
        let suites =
            crate::curl::ciphers::suites(self.ciphers.as_deref(), self.tls13_ciphers.as_deref())?;
        let groups = match &self.curves {
            Some(list) => crate::curl::ciphers::curves(list)?,
            None => Vec::new(),
        };
        Ok(TlsChoices { suites, groups })
    }
}
