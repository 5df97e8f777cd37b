//! `-V` / `--version`: what poolcurl is and can do, in the four lines curl prints, so that a
//! script that reads `curl -V` (`grep -q HTTP2`, the `Protocols:` line) reads poolcurl's too.
//!
//! ```text
//! poolcurl 0.1.0 (x86_64-linux) pool/0.1.0 hyper rustls h2
//! Release-Date: [unreleased]
//! Protocols: http https
//! Features: alt-svc AsynchDNS brotli HSTS HTTP2 HTTPS-proxy IPv6 Largefile libz NTLM SSL threadsafe UnixSockets zstd
//! ```
//!
//! The features are curl's names for what poolcurl does, in curl's order (alphabetical, case
//! aside); curl's that it does not (`GSS-API`, `IDN`, `Kerberos`, `NTLM_WB`, `PSL`, `SPNEGO`,
//! `TLS-SRP`) are left out, as curl leaves out what its build lacks. `Release-Date` is what
//! curl prints for a build that is not a release.

use std::sync::OnceLock;

/// What poolcurl does, by curl's feature names.
const FEATURES: &[&str] = &[
    "alt-svc",
    "AsynchDNS",
    "brotli",
    "HSTS",
    "HTTP2",
    "HTTPS-proxy",
    "IPv6",
    "Largefile",
    "libz",
    "NTLM",
    "SSL",
    "threadsafe",
    "UnixSockets",
    "zstd",
];

/// The text after `poolcurl ` that `-V` prints (clap puts the name first).
pub(crate) fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let version = env!("CARGO_PKG_VERSION");
        let platform = format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS);
        format!(
            "{version} ({platform}) pool/{version} hyper rustls h2\n\
             Release-Date: [unreleased]\n\
             Protocols: http https\n\
             Features: {}",
            FEATURES.join(" ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_in_curls_order() {
        let mut sorted = FEATURES.to_vec();
        sorted.sort_by_key(|name| name.to_ascii_lowercase());
        assert_eq!(sorted, FEATURES);
        let text = text();
        assert!(
            text.starts_with(concat!(env!("CARGO_PKG_VERSION"), " (")),
            "{text}"
        );
        assert_eq!(text.lines().count(), 4);
    }
}
