//! Trust anchors and client identity: the platform's native roots, loaded once per process,
//! and the PEM inputs of [`TlsOptions`](crate::TlsOptions), parsed eagerly.
//!
//! What this module does not do: watch the certificate store for changes (roots are read once
//! and kept for the life of the process) or check revocation.

use std::sync::OnceLock;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use crate::{IdentityPart, TlsConfigError};

/// The platform's trust anchors, shared by every connector in the process.
///
/// The first call reads the platform store (files on Linux, keychain or system store
/// elsewhere), which blocks; later calls return the same store. A machine without usable
/// native roots gets an empty store and a warning, not an error: extra roots may still make
/// TLS work, and when they do not, the handshake reports the certificate as untrusted.
pub(crate) fn native_roots() -> &'static RootCertStore {
    static NATIVE_ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    NATIVE_ROOTS.get_or_init(load_native_roots)
}

fn load_native_roots() -> RootCertStore {
    let loaded = rustls_native_certs::load_native_certs();
    for error in &loaded.errors {
        tracing::warn!(%error, "failed to load some native root certificates");
    }
    let mut store = RootCertStore::empty();
    let (added, ignored) = store.add_parsable_certificates(loaded.certs);
    if ignored > 0 {
        tracing::debug!(ignored, "ignored unparsable native root certificates");
    }
    if added == 0 {
        tracing::warn!("no native root certificates found; only extra roots will be trusted");
    } else {
        tracing::debug!(added, "loaded native root certificates");
    }
    store
}

/// Parses the extra trust anchors: every bundle must hold at least one certificate, and every
/// certificate must be usable as a trust anchor.
pub(crate) fn parse_extra_roots(bundles: &[Vec<u8>]) -> Result<RootCertStore, TlsConfigError> {
    let mut store = RootCertStore::empty();
    for (index, bundle) in bundles.iter().enumerate() {
        let which = || bundle_name(index, bundles.len());
        let certs = parse_certificates(bundle)
            .map_err(|e| TlsConfigError::with_source(format!("malformed {}", which()), e))?;
        if certs.is_empty() {
            return Err(TlsConfigError::new(format!(
                "no certificate found in {}",
                which()
            )));
        }
        for cert in certs {
            store.add(cert).map_err(|e| {
                TlsConfigError::with_source(format!("unusable trust anchor in {}", which()), e)
            })?;
        }
    }
    Ok(store)
}

/// Parses the certificate revocation lists of `bundles` (PEM, curl's `--crlfile`); each must
/// hold at least one.
pub(crate) fn parse_crls(
    bundles: &[Vec<u8>],
) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsConfigError> {
    let mut crls = Vec::new();
    for bundle in bundles {
        let found: Vec<_> = CertificateRevocationListDer::pem_slice_iter(bundle)
            .collect::<Result<_, _>>()
            .map_err(|e| TlsConfigError::with_source("malformed CRL PEM", e))?;
        if found.is_empty() {
            return Err(TlsConfigError::new("no CRL found in the CRL PEM"));
        }
        crls.extend(found);
    }
    Ok(crls)
}

/// Names an extra-roots bundle in messages; the index only matters when there are several.
fn bundle_name(index: usize, count: usize) -> String {
    if count == 1 {
        "--cacert PEM".to_owned()
    } else {
        format!("--cacert PEM bundle #{}", index + 1)
    }
}

/// A client certificate chain and its private key, checked against each other.
#[derive(Debug)]
pub(crate) struct Identity {
    /// End-entity certificate first, then intermediates, as they appeared in the PEM.
    pub(crate) chain: Vec<CertificateDer<'static>>,
    /// The private key matching the end-entity certificate.
    pub(crate) key: PrivateKeyDer<'static>,
}

/// Parses a client identity and checks, with `provider`, that the key is usable and matches
/// the certificate, so a mistake surfaces when the connector is built, not at the first
/// handshake.
pub(crate) fn parse_identity(
    cert_pem: &[u8],
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<Identity, TlsConfigError> {
    let chain = parse_certificates(cert_pem).map_err(|e| {
        TlsConfigError::with_source("malformed client certificate PEM", e)
            .of_identity(IdentityPart::Certificate)
    })?;
    if chain.is_empty() {
        return Err(
            TlsConfigError::new("no certificate found in client certificate PEM")
                .of_identity(IdentityPart::Certificate),
        );
    }
    let key = match PrivateKeyDer::from_pem_slice(key_pem) {
        Ok(key) => key,
        Err(pem::Error::NoItemsFound) => {
            return Err(
                TlsConfigError::new("no private key found in client key PEM")
                    .of_identity(IdentityPart::Key),
            );
        }
        Err(e) => {
            return Err(TlsConfigError::with_source("malformed client key PEM", e)
                .of_identity(IdentityPart::Key));
        }
    };
    CertifiedKey::from_der(chain.clone(), key.clone_key(), provider).map_err(|e| {
        TlsConfigError::with_source("client certificate and private key are not usable", e)
            .of_identity(IdentityPart::Key)
    })?;
    Ok(Identity { chain, key })
}

fn parse_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, pem::Error> {
    CertificateDer::pem_slice_iter(pem).collect()
}
