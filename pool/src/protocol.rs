//! Which HTTP versions the pool speaks, per origin.

use pool_core::OriginKey;
use pool_core::cell::EstablishMode;
use pool_tls::AlpnOffer;

/// The pool's HTTP version policy.
///
/// | policy                | `https://` origins                 | `http://` origins            |
/// |-----------------------|------------------------------------|------------------------------|
/// | `Auto` (default)      | ALPN offers `h2, http/1.1`         | HTTP/1.1                     |
/// | `Http1Only`           | ALPN offers `http/1.1`             | HTTP/1.1                     |
/// | `Http2Only`           | ALPN offers `h2`; anything else is an unsupported-version error | h2c with prior knowledge |
/// | `Http2PriorKnowledge` | as `Auto`                          | h2c with prior knowledge     |
///
/// With ALPN turned off ([`Builder::tls_alpn`](crate::Builder::tls_alpn)), `https://` origins
/// get HTTP/1.1, and HTTP/2 with prior knowledge under `Http2Only`.
///
/// Independently, a request whose version is `HTTP/2.0` can only be served by an HTTP/2
/// connection; other versions may be served by either protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProtocolPolicy {
    /// Let ALPN decide over TLS; HTTP/1.1 over cleartext.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1Only,
    /// HTTP/2 only: ALPN `h2` over TLS, h2c with prior knowledge over cleartext.
    Http2Only,
    /// Like `Auto` over TLS; h2c with prior knowledge over cleartext (curl's
    /// `--http2-prior-knowledge`).
    Http2PriorKnowledge,
}

impl ProtocolPolicy {
    /// How a cell for `origin` establishes connections.
    pub(crate) fn mode_for(self, origin: &OriginKey) -> EstablishMode {
        match (self, origin.is_tls()) {
            (ProtocolPolicy::Http1Only, _) => EstablishMode::Http1,
            (ProtocolPolicy::Http2Only, _) => EstablishMode::Http2,
            (ProtocolPolicy::Auto, true) | (ProtocolPolicy::Http2PriorKnowledge, true) => {
                EstablishMode::Auto
            }
            (ProtocolPolicy::Auto, false) => EstablishMode::Http1,
            (ProtocolPolicy::Http2PriorKnowledge, false) => EstablishMode::Http2,
        }
    }
}

/// The ALPN list a TLS connection of a cell in `mode` offers.
pub(crate) fn alpn_for(mode: EstablishMode) -> AlpnOffer {
    match mode {
        EstablishMode::Http1 => AlpnOffer::Http1Only,
        EstablishMode::Http2 => AlpnOffer::Http2Only,
        EstablishMode::Auto => AlpnOffer::Both,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_follow_the_table() {
        let https = OriginKey::from_uri(&"https://a.test".parse().unwrap()).unwrap();
        let http = OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        use EstablishMode::*;
        assert_eq!(ProtocolPolicy::Auto.mode_for(&https), Auto);
        assert_eq!(ProtocolPolicy::Auto.mode_for(&http), Http1);
        assert_eq!(ProtocolPolicy::Http1Only.mode_for(&https), Http1);
        assert_eq!(ProtocolPolicy::Http2Only.mode_for(&https), Http2);
        assert_eq!(ProtocolPolicy::Http2Only.mode_for(&http), Http2);
        assert_eq!(ProtocolPolicy::Http2PriorKnowledge.mode_for(&https), Auto);
        assert_eq!(ProtocolPolicy::Http2PriorKnowledge.mode_for(&http), Http2);
        assert_eq!(alpn_for(Auto), AlpnOffer::Both);
    }
}
