//! Which proxy curl mode and `poolcurl load` go through ([`ProxyChoiceArgs`]): `-x` (any
//! scheme), `--proxy1.0` (an HTTP proxy whose tunnels are asked for with HTTP/1.0 `CONNECT`s)
//! and the SOCKS flags. They replace each other: the last one given wins, and
//! [`proxy_url`](ProxyChoiceArgs::proxy_url) names it.

/// The proxy flags, of which the last one given counts.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub(crate) struct ProxyChoiceArgs {
    /// Use this proxy, as http://USER:PASSWORD@HOST:PORT, https://..., socks5://..., socks5h://..., socks4://... or socks4a://... (scheme, credentials and port optional; "" for none, ignoring the environment)
    #[arg(
        short = 'x',
        long = "proxy",
        value_name = "URL",
        overrides_with_all = ["proxy10", "socks5", "socks5_hostname", "socks4", "socks4a"]
    )]
    pub(crate) proxy: Option<String>,

    /// Use this HTTP proxy, as -x does, opening tunnels with HTTP/1.0 CONNECT requests (for proxies that do not take HTTP/1.1's)
    #[arg(
        long = "proxy1.0",
        value_name = "HOST[:PORT]",
        overrides_with_all = ["proxy", "socks5", "socks5_hostname", "socks4", "socks4a"]
    )]
    pub(crate) proxy10: Option<String>,

    /// Use this SOCKS5 proxy (HOST or HOST:PORT, port 1080 by default), resolving names here; replaces -x
    #[arg(long = "socks5", value_name = "HOST[:PORT]", overrides_with_all = ["proxy", "proxy10", "socks5_hostname", "socks4", "socks4a"])]
    pub(crate) socks5: Option<String>,

    /// Use this SOCKS5 proxy, letting it resolve names; replaces -x
    #[arg(long = "socks5-hostname", value_name = "HOST[:PORT]", overrides_with_all = ["proxy", "proxy10", "socks5", "socks4", "socks4a"])]
    pub(crate) socks5_hostname: Option<String>,

    /// Use this SOCKS4 proxy, resolving names here (IPv4 only); replaces -x
    #[arg(long = "socks4", value_name = "HOST[:PORT]", overrides_with_all = ["proxy", "proxy10", "socks5", "socks5_hostname", "socks4a"])]
    pub(crate) socks4: Option<String>,

    /// Use this SOCKS4a proxy, letting it resolve names; replaces -x
    #[arg(long = "socks4a", value_name = "HOST[:PORT]", overrides_with_all = ["proxy", "proxy10", "socks5", "socks5_hostname", "socks4"])]
    pub(crate) socks4a: Option<String>,
}

impl ProxyChoiceArgs {
    /// The proxy URL of `-x`, `--proxy1.0`, `--socks5`, `--socks5-hostname`, `--socks4` or `--socks4a`,
    /// whichever came last (clap keeps only that one); a bare `HOST[:PORT]` of the SOCKS flags
    /// takes their scheme.
    pub(crate) fn proxy_url(&self) -> Option<String> {
        if let Some(url) = self.proxy.as_ref().or(self.proxy10.as_ref()) {
            return Some(url.clone());
        }
        let socks = [
            ("socks5", &self.socks5),
            ("socks5h", &self.socks5_hostname),
            ("socks4", &self.socks4),
            ("socks4a", &self.socks4a),
        ];
        let (scheme, value) = socks
            .into_iter()
            .find_map(|(scheme, value)| Some((scheme, value.as_deref()?)))?;
        Some(match value.contains("://") {
            true => value.to_owned(),
            false => format!("{scheme}://{value}"),
        })
    }

    /// `--proxy1.0`: tunnels are asked for with HTTP/1.0 `CONNECT`s.
    pub(crate) fn connect_http10(&self) -> bool {
        self.proxy10.is_some()
    }
}
