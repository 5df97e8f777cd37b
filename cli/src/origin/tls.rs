//! The local origin's certificates: an ephemeral CA and a server leaf for `localhost`,
//! `127.0.0.1` and `::1`, made with rcgen when the origin starts and never written anywhere
//! except where `poolcurl serve` is told to (its `ca.pem`). `poolcurl load --local` trusts the
//! CA in memory, for its own pool only.
//!
//! The server configuration uses the ring provider explicitly (no process-wide default) and
//! offers ALPN `h2, http/1.1`, so the client's offer decides the protocol per connection.

use std::sync::Arc;

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names the leaf is valid for.
const NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The origin's certificates and TLS configuration.
#[derive(Debug, Clone)]
pub(crate) struct OriginPki {
    /// The CA certificate, PEM.
    pub(crate) ca_pem: String,
    /// The server configuration presenting the leaf.
    pub(crate) server_config: Arc<ServerConfig>,
}

impl OriginPki {
    /// Makes a CA, a leaf signed by it, and the server configuration.
    ///
    /// # Errors
    ///
    /// When key generation, signing or the rustls configuration fails.
    pub(crate) fn generate() -> anyhow::Result<OriginPki> {
        let mut ca = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
        ca.distinguished_name
            .push(DnType::CommonName, "poolcurl local origin CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().context("CA key")?)
            .context("self-signing the CA")?;

        let names: Vec<String> = NAMES.iter().map(|n| (*n).to_owned()).collect();
        let mut leaf = CertificateParams::new(names).context("leaf parameters")?;
        leaf.distinguished_name
            .push(DnType::CommonName, "poolcurl local origin");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let leaf_key = KeyPair::generate().context("leaf key")?;
        let leaf = leaf
            .signed_by(&leaf_key, &issuer)
            .context("signing the leaf")?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(leaf.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .context("server certificate")?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(OriginPki {
            ca_pem: issuer.pem(),
            server_config: Arc::new(config),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_pem_and_alpn_offers_both_protocols() {
        let pki = OriginPki::generate().unwrap();
        assert!(pki.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(
            pki.server_config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
