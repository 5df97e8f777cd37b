//! What a TLS client trusts, presents and offers ([`TlsOptions`]), and the protocol versions
//! it can speak ([`TlsVersion`]). Plain data: [`super::TlsConnector::new`] checks it.

use std::fmt;

use rustls::{CipherSuite, NamedGroup};

use crate::PublicKeyPin;

/// What the TLS client trusts and presents.
///
/// The default trusts the platform's native roots, adds nothing, presents no client
/// certificate and verifies every server certificate.
#[derive(Clone)]
pub struct TlsOptions {
    /// Trust the platform's native root certificates. Default `true`.
    pub native_roots: bool,
    /// PEM bundles of extra trust anchors (curl's `--cacert`). Each bundle must contain at
    /// least one certificate. A server may present one of them as its own certificate (a
    /// self-signed development certificate, made as a CA by `openssl req -x509` or not): it is
    /// trusted for the names it carries, within its validity period, as curl and Go trust it.
    pub extra_roots_pem: Vec<Vec<u8>>,
    /// A client certificate for servers that ask for one (curl's `--cert` / `--key`):
    /// `(certificate chain PEM, private key PEM)`, end-entity certificate first.
    pub client_identity_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// Accept any server certificate, trusted or not, for any name (curl's `-k`).
    ///
    /// Handshake signatures are still verified, but anyone on the path can impersonate the
    /// server. For testing only. The certificate is still checked after each handshake,
    /// against the roots that would have been trusted (so the platform's are loaded when
    /// `native_roots` is set), and what that found is reported (`TlsDetails::certificate`).
    pub danger_accept_invalid_certs: bool,
    /// The oldest TLS version offered (curl's `--tlsv1.3`). Default TLS 1.2.
    pub min_version: TlsVersion,
    /// The newest TLS version offered (curl's `--tls-max`). Default TLS 1.3.
    pub max_version: TlsVersion,
    /// PEM certificate revocation lists (curl's `--crlfile`): a server certificate they
    /// revoke is rejected
    /// ([`CertificateCheck::Revoked`](pool_core::CertificateCheck::Revoked)). Certificates
    /// their issuers do not cover are not checked for revocation. Each bundle must hold at
    /// least one CRL.
    pub crls_pem: Vec<Vec<u8>>,
    /// The public keys the server's certificate may carry (curl's `--pinnedpubkey`): when
    /// any are given, a handshake whose end-entity certificate carries none of them fails
    /// ([`ConnectError::is_pinned_key_mismatch`](crate::ConnectError::is_pinned_key_mismatch)),
    /// verified or not. Empty (no pinning) by default.
    pub pinned_public_keys: Vec<PublicKeyPin>,
    /// The cipher suites to offer, most preferred first (curl's `--ciphers` and
    /// `--tls13-ciphers`), TLS 1.2 and TLS 1.3 suites in one list. Empty (the default):
    /// every suite rustls's `ring` provider has, in its order. Each must be one of those
    /// ([`TlsConnector::new`](super::TlsConnector::new) says which is not); a version left
    /// without a suite is not offered, and a list that leaves every offered version without
    /// one is refused.
    pub cipher_suites: Vec<CipherSuite>,
    /// The key exchange groups to offer, most preferred first (curl's `--curves`). Empty (the
    /// default): the provider's (X25519, P-256, P-384). Each must be one the provider has.
    pub key_exchange_groups: Vec<NamedGroup>,
    /// Offer ALPN (default `true`). Without it (curl's `--no-alpn`) the handshake names no
    /// application protocol: the pool speaks HTTP/1.1 unless HTTP/2 is required, which is
    /// then spoken with prior knowledge, as curl does.
    pub alpn: bool,
    /// Resume earlier TLS sessions with the same server (default `true`, rustls's in-memory
    /// cache of 256 sessions shared by the connector's connections). Off (curl's
    /// `--no-sessionid`), every connection makes a full handshake.
    pub session_resumption: bool,
    /// Require the server to staple a good status for its certificate (OCSP stapling; curl's
    /// `--cert-status`). Default `false`. On, a handshake fails, as
    /// [`ConnectError::is_certificate_status`](crate::ConnectError::is_certificate_status),
    /// unless the server sends a current OCSP response, signed by its certificate's issuer,
    /// that says the certificate is good; session resumption is then off, so that every
    /// connection's certificate is checked. Checked also with `danger_accept_invalid_certs`,
    /// as curl checks it with `-k`.
    pub require_certificate_status: bool,
    /// Keep the certificates each server presented (DER, its own first) in
    /// [`TlsInfo::peer_chain`](crate::TlsInfo::peer_chain), for callers that show them (curl's
    /// `-v` prints the subject, dates and issuer). Default `false`: the chain costs a few KiB per
    /// connection, for as long as the connection lives.
    pub keep_peer_certificates: bool,
}

/// A TLS protocol version the client can offer: rustls speaks 1.2 and 1.3 (older versions are
/// insecure and not implemented).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TlsVersion {
    /// TLS 1.2 (RFC 5246).
    Tls12,
    /// TLS 1.3 (RFC 8446).
    Tls13,
}

impl TlsVersion {
    pub(super) fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        }
    }
}

impl Default for TlsOptions {
    fn default() -> TlsOptions {
        TlsOptions {
            native_roots: true,
            extra_roots_pem: Vec::new(),
            client_identity_pem: None,
            danger_accept_invalid_certs: false,
            min_version: TlsVersion::Tls12,
            max_version: TlsVersion::Tls13,
            crls_pem: Vec::new(),
            pinned_public_keys: Vec::new(),
            cipher_suites: Vec::new(),
            key_exchange_groups: Vec::new(),
            alpn: true,
            session_resumption: true,
            require_certificate_status: false,
            keep_peer_certificates: false,
        }
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material; sizes are enough to debug a configuration.
        let identity = self
            .client_identity_pem
            .as_ref()
            .map(|(cert, _key)| format!("{} byte certificate PEM, key redacted", cert.len()));
        f.debug_struct("TlsOptions")
            .field("native_roots", &self.native_roots)
            .field("extra_roots_pem", &self.extra_roots_pem.len())
            .field("client_identity_pem", &identity)
            .field(
                "danger_accept_invalid_certs",
                &self.danger_accept_invalid_certs,
            )
            .field("min_version", &self.min_version)
            .field("max_version", &self.max_version)
            .field("crls_pem", &self.crls_pem.len())
            .field("pinned_public_keys", &self.pinned_public_keys)
            .field("cipher_suites", &self.cipher_suites)
            .field("key_exchange_groups", &self.key_exchange_groups)
            .field("alpn", &self.alpn)
            .field("session_resumption", &self.session_resumption)
            .finish()
    }
}
