//! How the proxy's credentials (`-U`) are presented ([`ProxyAuthArgs`]), shared by curl mode
//! and `poolcurl load`: Basic up front (the default), Digest (`--proxy-digest`,
//! `--proxy-anyauth`) once the proxy challenges, or NTLM (`--proxy-ntlm`: the negotiate message
//! up front, the challenge answered on the same connection). As in curl, the order on the
//! command line does not matter: `--proxy-anyauth` wins over `--proxy-ntlm`, which wins over
//! `--proxy-digest`, which wins over `--proxy-basic`.
//!
//! A tunnel's challenge is answered by the pool's connector; a forward proxy's `407` is
//! answered by curl mode's transfer (see [`crate::curl::transfer`]). `poolcurl load` does not
//! answer a forward proxy's `407`: such requests count as their status.

/// The proxy authentication scheme.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub(crate) struct ProxyAuthArgs {
    /// Send the proxy's credentials as Basic with every request, unasked (the default; --proxy-digest and --proxy-anyauth win over it)
    #[arg(long = "proxy-basic")]
    pub(crate) proxy_basic: bool,

    /// Answer the proxy's Digest challenge with -U's user and password (nothing is sent before it)
    #[arg(long = "proxy-digest")]
    pub(crate) proxy_digest: bool,

    /// Answer the proxy's challenge with Digest, or Basic when it offers only Basic (wins over --proxy-ntlm and --proxy-digest)
    #[arg(long = "proxy-anyauth")]
    pub(crate) proxy_anyauth: bool,

    /// Authenticate with the proxy by NTLM with -U's user (DOMAIN\USER allowed) and password (wins over --proxy-digest)
    #[arg(long = "proxy-ntlm")]
    pub(crate) proxy_ntlm: bool,
}

impl ProxyAuthArgs {
    /// The scheme the flags ask for.
    pub(crate) fn scheme(&self) -> pool::AuthScheme {
        if self.proxy_anyauth {
            pool::AuthScheme::Any
        } else if self.proxy_ntlm {
            pool::AuthScheme::Ntlm
        } else if self.proxy_digest {
            pool::AuthScheme::Digest
        } else {
            pool::AuthScheme::Basic
        }
    }
}
