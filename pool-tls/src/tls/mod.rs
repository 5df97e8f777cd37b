//! TLS client configuration: trust anchors, client identity, ALPN lists, and the cached
//! rustls [`ClientConfig`]s built from them.
//!
//! [`TlsConnector::new`] validates its inputs (PEM, key/certificate match) and opens nothing.
//! The expensive part, reading the platform's trust store, happens once per process in
//! [`TlsConnector::preflight`], which the first TLS connection calls lazily and which callers
//! may call earlier to fail fast and keep the cost off the first request.
//!
//! The crypto provider is always rustls's `ring` provider, passed explicitly; this crate never
//! installs a process-wide default provider, so it cannot conflict with an application that
//! does.
//!
//! What this layer does not do: perform handshakes (the connector does), resume sessions
//! across connectors, or check revocation. Certificate verification is never off unless
//! [`TlsOptions::danger_accept_invalid_certs`] says so in as many words.

use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, OnceLock};

use pool_core::CertificateCheck;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateRevocationListDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::roots::{self, Identity};
use crate::verifier::{DangerousAcceptAnyServerCert, NamingUntrusted};
use crate::{AlpnOffer, ConnectError, PublicKeyPin};

mod crypto;
mod options;
mod status;

pub use options::{TlsOptions, TlsVersion};
pub use status::CertificateStatusError;
pub(crate) use status::status_error;

/// Builds and caches the rustls client configurations for one set of [`TlsOptions`].
///
/// Cheap to clone: clones share the parsed inputs and the cached configurations.
#[derive(Clone)]
pub struct TlsConnector {
    inner: Arc<Inner>,
}

struct Inner {
    /// The crypto provider every configuration is built with (rustls's `ring`).
    provider: Arc<CryptoProvider>,
    /// Whether to add the process-wide native roots.
    native_roots: bool,
    /// Trust anchors parsed from `TlsOptions::extra_roots_pem`.
    extra_roots: RootCertStore,
    /// Parsed and checked client identity, if any.
    identity: Option<Identity>,
    /// Skip certificate verification (see `DangerousAcceptAnyServerCert`).
    danger_accept_invalid_certs: bool,
    /// The protocol versions offered, newest first (from `min_version` to `max_version`).
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
    /// Parsed `TlsOptions::crls_pem`.
    crls: Vec<CertificateRevocationListDer<'static>>,
    /// `TlsOptions::pinned_public_keys`.
    pins: Vec<PublicKeyPin>,
    /// `TlsOptions::alpn`.
    alpn: bool,
    /// `TlsOptions::session_resumption`.
    session_resumption: bool,
    /// `TlsOptions::require_certificate_status`.
    require_status: bool,
    /// `TlsOptions::keep_peer_certificates`.
    keep_peer_certificates: bool,
    /// One configuration per ALPN offer, built by the first successful `preflight`.
    configs: OnceLock<Configs>,
}

/// The client configurations, identical except for their ALPN lists (all empty when ALPN is
/// off).
struct Configs {
    http1_only: Arc<ClientConfig>,
    http2_only: Arc<ClientConfig>,
    both: Arc<ClientConfig>,
    /// With `danger_accept_invalid_certs`: the verifier the handshakes would otherwise have
    /// used, to say what verification would have found.
    checker: Option<NamingUntrusted>,
}

impl Configs {
    fn get(&self, alpn: AlpnOffer) -> &Arc<ClientConfig> {
        match alpn {
            AlpnOffer::Http1Only => &self.http1_only,
            AlpnOffer::Http2Only => &self.http2_only,
            AlpnOffer::Both => &self.both,
        }
    }
}

impl TlsConnector {
    /// Validates `options` and prepares a connector.
    ///
    /// PEM inputs are parsed here, and a client key is checked against its certificate, so
    /// configuration mistakes surface before any connection is attempted. No native roots are
    /// loaded and nothing is opened; see [`preflight`](Self::preflight).
    ///
    /// # Errors
    ///
    /// Malformed PEM, an extra-roots bundle with no certificate, a client certificate PEM with
    /// no certificate, a missing or unusable private key, or a key that does not match the
    /// certificate.
    pub fn new(options: TlsOptions) -> Result<TlsConnector, TlsConfigError> {
        if options.min_version > options.max_version {
            return Err(TlsConfigError::new(format!(
                "the minimum TLS version ({:?}) is above the maximum ({:?})",
                options.min_version, options.max_version
            )));
        }
        let versions: Vec<_> = [TlsVersion::Tls13, TlsVersion::Tls12]
            .into_iter()
            .filter(|v| (options.min_version..=options.max_version).contains(v))
            .map(TlsVersion::rustls)
            .collect();
        let provider = Arc::new(crypto::provider(&options, &versions)?);
        let extra_roots = roots::parse_extra_roots(&options.extra_roots_pem)?;
        let crls = roots::parse_crls(&options.crls_pem)?;
        let identity = match &options.client_identity_pem {
            Some((cert_pem, key_pem)) => Some(roots::parse_identity(cert_pem, key_pem, &provider)?),
            None => None,
        };
        Ok(TlsConnector {
            inner: Arc::new(Inner {
                provider,
                native_roots: options.native_roots,
                extra_roots,
                identity,
                danger_accept_invalid_certs: options.danger_accept_invalid_certs,
                versions,
                crls,
                pins: options.pinned_public_keys,
                alpn: options.alpn,
                session_resumption: options.session_resumption,
                require_status: options.require_certificate_status,
                keep_peer_certificates: options.keep_peer_certificates,
                configs: OnceLock::new(),
            }),
        })
    }

    /// Loads the native roots (once per process, shared by all connectors) and builds the
    /// client configuration for each [`AlpnOffer`] (once per connector).
    ///
    /// Idempotent: after the first success this returns immediately. The first TLS connection
    /// calls it lazily, on tokio's blocking pool; call it yourself at startup to report
    /// configuration problems early and to keep the one-time cost of reading the platform's
    /// trust store off the first request. A machine with no native roots yields an empty store
    /// and a warning (through `tracing`), not an error.
    ///
    /// This call blocks while the trust store is read; do not call it on an async worker
    /// thread in latency-sensitive code.
    ///
    /// # Errors
    ///
    /// Fails only if rustls rejects the assembled configuration, which input validation in
    /// [`new`](Self::new) is meant to rule out.
    ///
    /// # Concurrency
    ///
    /// Two threads racing through the first call may both build configurations; one set is
    /// kept and the other discarded, so every caller sees the same configurations afterwards.
    pub fn preflight(&self) -> Result<(), TlsConfigError> {
        self.configs().map(drop)
    }

    /// The client configuration offering `alpn`'s protocols, building it first if needed
    /// (see [`preflight`](Self::preflight)).
    ///
    /// # Errors
    ///
    /// As for [`preflight`](Self::preflight).
    pub fn client_config(&self, alpn: AlpnOffer) -> Result<Arc<ClientConfig>, TlsConfigError> {
        Ok(self.configs()?.get(alpn).clone())
    }

    /// The configuration for `alpn` if [`preflight`](Self::preflight) already succeeded; never
    /// blocks.
    pub(crate) fn cached_config(&self, alpn: AlpnOffer) -> Option<Arc<ClientConfig>> {
        self.inner
            .configs
            .get()
            .map(|configs| configs.get(alpn).clone())
    }

    /// Whether handshakes verify the server's certificate (unless
    /// `danger_accept_invalid_certs`): a finished handshake's certificate is then
    /// [`CertificateCheck::Valid`] without [`certificate_check`](Self::certificate_check).
    pub(crate) fn verifies_certificates(&self) -> bool {
        !self.inner.danger_accept_invalid_certs
    }

    /// Whether finished handshakes keep the server's certificates
    /// (`TlsOptions::keep_peer_certificates`).
    pub(crate) fn keeps_peer_certificates(&self) -> bool {
        self.inner.keep_peer_certificates
    }

    /// What verifying the server certificate of `session`, a finished handshake with
    /// `server_name`, against the roots the connector would have trusted finds now: the
    /// check behind an unverified handshake (see
    /// [`verifies_certificates`](Self::verifies_certificates)).
    pub(crate) fn certificate_check(
        &self,
        session: &ClientConnection,
        server_name: &ServerName<'_>,
    ) -> CertificateCheck {
        let checker = self.inner.configs.get().and_then(|c| c.checker.as_ref());
        let chain = session.peer_certificates().unwrap_or_default();
        let algorithms = self.inner.provider.signature_verification_algorithms.all;
        crate::verifier::check(checker, chain, server_name, algorithms)
    }

    /// Whether the server certificate of `session`, a finished handshake, carries a pinned
    /// key (always, without pins).
    pub(crate) fn check_pins(&self, session: &ClientConnection) -> Result<(), ConnectError> {
        crate::pin::check(&self.inner.pins, session)
    }

    fn configs(&self) -> Result<&Configs, TlsConfigError> {
        if let Some(configs) = self.inner.configs.get() {
            return Ok(configs);
        }
        let built = self.inner.build()?;
        // A concurrent first call may have won; either set is equivalent.
        Ok(self.inner.configs.get_or_init(|| built))
    }
}

impl Inner {
    /// rustls's verifier for `trusted`, with the CRLs if there are any (revocation is
    /// checked only where a CRL covers the certificate's issuer: rustls's "unknown status
    /// allowed", as curl's `--crlfile` does), wrapped in [`NamingUntrusted`].
    fn webpki_verifier(
        &self,
        trusted: RootCertStore,
    ) -> Result<NamingUntrusted, rustls::client::VerifierBuilderError> {
        let trusted = Arc::new(trusted);
        let verifier =
            WebPkiServerVerifier::builder_with_provider(trusted.clone(), self.provider.clone())
                .with_crls(self.crls.iter().cloned())
                .allow_unknown_revocation_status()
                .build()?;
        let algorithms = self.provider.signature_verification_algorithms.all;
        Ok(NamingUntrusted::new(verifier, trusted, algorithms))
    }

    fn build(&self) -> Result<Configs, TlsConfigError> {
        let rejected = |e| TlsConfigError::with_source("invalid TLS client configuration", e);
        let builder = ClientConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&self.versions)
            .map_err(rejected)?;
        let mut trusted = if self.native_roots {
            roots::native_roots().clone()
        } else {
            RootCertStore::empty()
        };
        trusted.roots.extend(self.extra_roots.roots.iter().cloned());
        let mut checker = None;
        let algorithms = self.provider.signature_verification_algorithms.all;
        // With the status required, every verifier below is wrapped in the status check.
        let status = self
            .require_status
            .then(|| status::StatusCheck::new(&trusted, algorithms));
        let with_status = |verifier: Arc<dyn ServerCertVerifier>| -> Arc<dyn ServerCertVerifier> {
            match &status {
                Some(check) => Arc::new(status::StatusVerifier {
                    inner: verifier,
                    check: check.clone(),
                }),
                None => verifier,
            }
        };
        let builder = if self.danger_accept_invalid_certs {
            tracing::warn!(
                "TLS certificate verification is disabled (danger_accept_invalid_certs)"
            );
            // What verification would have found, checked after each handshake (see
            // `certificate_check`). No root at all: nothing can be verified, which
            // `verifier::check` reports as untrusted.
            checker = self.webpki_verifier(trusted).ok();
            let verifier = DangerousAcceptAnyServerCert::new(&self.provider);
            builder
                .dangerous()
                .with_custom_certificate_verifier(with_status(Arc::new(verifier)))
        } else if self.crls.is_empty() && trusted.is_empty() {
            // No root at all: rustls's verifier cannot be built on an empty store on its own,
            // and every certificate is untrusted anyway.
            builder.with_root_certificates(trusted)
        } else {
            let verifier = self.webpki_verifier(trusted).map_err(|e| {
                TlsConfigError::with_source("invalid certificate revocation lists", e)
            })?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(with_status(Arc::new(verifier)))
        };
        let mut base = match &self.identity {
            Some(identity) => builder
                .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
                .map_err(rejected)?,
            None => builder.with_no_client_auth(),
        };
        // A resumed session verifies no certificate, so it would skip the status check.
        if !self.session_resumption || self.require_status {
            base.resumption = rustls::client::Resumption::disabled();
        }

        let with_alpn = |offer: AlpnOffer| {
            let mut config = base.clone();
            if self.alpn {
                config.alpn_protocols = offer.protocols().iter().map(|p| p.to_vec()).collect();
            }
            Arc::new(config)
        };
        Ok(Configs {
            http1_only: with_alpn(AlpnOffer::Http1Only),
            http2_only: with_alpn(AlpnOffer::Http2Only),
            both: with_alpn(AlpnOffer::Both),
            checker,
        })
    }
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("TlsConnector")
            .field("native_roots", &inner.native_roots)
            .field("extra_roots", &inner.extra_roots.len())
            .field("client_identity", &inner.identity.is_some())
            .field(
                "danger_accept_invalid_certs",
                &inner.danger_accept_invalid_certs,
            )
            .field("ready", &inner.configs.get().is_some())
            .finish()
    }
}

/// Why a [`TlsConnector`] could not be configured: says which input was wrong (for example
/// `no certificate found in --cacert PEM`).
#[derive(Debug)]
pub struct TlsConfigError {
    /// What was wrong, for people.
    message: String,
    /// The parser or rustls error behind it, if any.
    source: Option<Box<dyn StdError + Send + Sync>>,
    /// The part of the client identity at fault, when it was the identity.
    identity: Option<IdentityPart>,
}

/// The part of a client identity (certificate chain and private key) that could not be used
/// ([`TlsConfigError::client_identity_part`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentityPart {
    /// The certificate PEM held no certificate, or did not parse.
    Certificate,
    /// The key PEM held no private key, did not parse, or does not match the certificate (as
    /// OpenSSL, and so curl, blames the key file for a mismatch).
    Key,
}

impl TlsConfigError {
    pub(crate) fn new(message: impl Into<String>) -> TlsConfigError {
        TlsConfigError {
            message: message.into(),
            source: None,
            identity: None,
        }
    }

    pub(crate) fn with_source(
        message: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> TlsConfigError {
        TlsConfigError {
            message: message.into(),
            source: Some(source.into()),
            identity: None,
        }
    }

    /// This error, blaming `part` of the client identity.
    pub(crate) fn of_identity(mut self, part: IdentityPart) -> TlsConfigError {
        self.identity = Some(part);
        self
    }

    /// Which part of the client identity was unusable, when the identity was the problem (not
    /// the roots, the revocation lists or the TLS versions).
    pub fn client_identity_part(&self) -> Option<IdentityPart> {
        self.identity
    }
}

/// This level's message; the cause is `source()`'s, and `{:#}` appends the whole chain.
impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        crate::error::write_causes(f, self.source())
    }
}

impl StdError for TlsConfigError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_ref()
            .map(|e| &**e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rcgen::{CertificateParams, KeyPair};

    fn self_signed() -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn offline() -> TlsOptions {
        TlsOptions {
            native_roots: false,
            ..TlsOptions::default()
        }
    }

    #[test]
    fn default_options_trust_native_roots_and_verify() {
        let options = TlsOptions::default();
        assert!(options.native_roots);
        assert!(!options.danger_accept_invalid_certs);
        assert!(options.extra_roots_pem.is_empty() && options.client_identity_pem.is_none());
    }

    #[test]
    fn garbage_pem_is_a_config_error() {
        let options = TlsOptions {
            extra_roots_pem: vec![b"not a pem".to_vec()],
            ..offline()
        };
        let err = TlsConnector::new(options).unwrap_err();
        assert_eq!(err.to_string(), "no certificate found in --cacert PEM");

        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        let options = TlsOptions {
            extra_roots_pem: vec![broken.to_vec()],
            ..offline()
        };
        let err = TlsConnector::new(options).unwrap_err();
        assert!(
            err.to_string().starts_with("malformed --cacert PEM"),
            "{err}"
        );
        assert!(err.source().is_some());
    }

    #[test]
    fn second_bundle_is_named_when_it_is_the_bad_one() {
        let (cert, _) = self_signed();
        let options = TlsOptions {
            extra_roots_pem: vec![cert.into_bytes(), b"nothing here".to_vec()],
            ..offline()
        };
        let err = TlsConnector::new(options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no certificate found in --cacert PEM bundle #2"
        );
    }

    #[test]
    fn client_identity_errors_say_what_is_missing_or_wrong() {
        let (cert, key) = self_signed();
        let (_, other_key) = self_signed();
        let cases = [
            (
                (b"".to_vec(), key.clone().into_bytes()),
                "no certificate found in client",
                IdentityPart::Certificate,
            ),
            (
                (cert.clone().into_bytes(), b"".to_vec()),
                "no private key found in client key",
                IdentityPart::Key,
            ),
            (
                (cert.clone().into_bytes(), other_key.into_bytes()),
                "client certificate and private key",
                IdentityPart::Key,
            ),
        ];
        for (identity, expected, part) in cases {
            let options = TlsOptions {
                client_identity_pem: Some(identity),
                ..offline()
            };
            let err = TlsConnector::new(options).unwrap_err();
            assert!(err.to_string().starts_with(expected), "{err}");
            assert_eq!(err.client_identity_part(), Some(part), "{err}");
        }
        // Roots that do not parse are not the identity's fault.
        let options = TlsOptions {
            extra_roots_pem: vec![b"no pem here".to_vec()],
            ..offline()
        };
        let err = TlsConnector::new(options).unwrap_err();
        assert_eq!(err.client_identity_part(), None, "{err}");
    }

    #[test]
    fn new_builds_nothing_and_preflight_twice_is_fine() {
        let (cert, key) = self_signed();
        let options = TlsOptions {
            extra_roots_pem: vec![cert.clone().into_bytes()],
            client_identity_pem: Some((cert.into_bytes(), key.into_bytes())),
            ..offline()
        };
        let connector = TlsConnector::new(options).unwrap();
        assert!(connector.cached_config(AlpnOffer::Both).is_none());

        connector.preflight().unwrap();
        let first = connector.client_config(AlpnOffer::Both).unwrap();
        connector.preflight().unwrap();
        let clone = connector.clone();
        assert!(Arc::ptr_eq(
            &first,
            &clone.client_config(AlpnOffer::Both).unwrap()
        ));
        assert!(first.client_auth_cert_resolver.has_certs());
    }

    #[test]
    fn preflight_loading_native_roots_succeeds_twice() {
        // Succeeds whether or not this machine has a trust store: none is a warning.
        let connector = TlsConnector::new(TlsOptions::default()).unwrap();
        connector.preflight().unwrap();
        connector.preflight().unwrap();
    }

    #[test]
    fn each_offer_gets_its_alpn_list() {
        let connector = TlsConnector::new(offline()).unwrap();
        let alpn = |offer| {
            connector
                .client_config(offer)
                .unwrap()
                .alpn_protocols
                .clone()
        };
        assert_eq!(alpn(AlpnOffer::Http1Only), vec![b"http/1.1".to_vec()]);
        assert_eq!(alpn(AlpnOffer::Http2Only), vec![b"h2".to_vec()]);
        assert_eq!(
            alpn(AlpnOffer::Both),
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn debug_output_redacts_the_private_key() {
        let (cert, key) = self_signed();
        let options = TlsOptions {
            client_identity_pem: Some((cert.into_bytes(), key.clone().into_bytes())),
            ..offline()
        };
        let printed = format!("{options:?}");
        assert!(printed.contains("key redacted"), "{printed}");
        assert!(!printed.contains("PRIVATE KEY"), "{printed}");
    }
}
