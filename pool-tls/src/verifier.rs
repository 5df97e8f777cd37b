//! The certificate verifier behind `danger_accept_invalid_certs` (curl's `-k`), and the check
//! that says, after such a handshake, what verification would have found ([`check`]).
//!
//! The type is named for what it is so that it cannot be mistaken for anything else in a
//! review or a stack trace. It skips *certificate* validation only: the handshake signatures
//! are still checked with the crypto provider's algorithms, so the peer must hold the private
//! key of the certificate it presents, and the rest of TLS (key exchange, record protection)
//! is untouched. That defeats passive eavesdropping but not an active attacker presenting
//! their own certificate.

use pool_core::CertificateCheck;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{
    CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature,
};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// Accepts any server certificate, valid or not, for any name.
#[derive(Debug)]
pub(crate) struct DangerousAcceptAnyServerCert {
    /// The provider's signature algorithms, used for the handshake signatures.
    algorithms: WebPkiSupportedAlgorithms,
}

impl DangerousAcceptAnyServerCert {
    pub(crate) fn new(provider: &CryptoProvider) -> DangerousAcceptAnyServerCert {
        DangerousAcceptAnyServerCert {
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for DangerousAcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Verifies `chain` (the server's certificate first) for `server_name` with `checker`, the
/// verifier a handshake would have used (`None`: no trusted root at all), as of now.
pub(crate) fn check(
    checker: Option<&WebPkiServerVerifier>,
    chain: &[CertificateDer<'_>],
    server_name: &ServerName<'_>,
) -> CertificateCheck {
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return CertificateCheck::Other;
    };
    let Some(checker) = checker else {
        return CertificateCheck::UnknownIssuer;
    };
    match checker.verify_server_cert(end_entity, intermediates, server_name, &[], UnixTime::now()) {
        Ok(_) => CertificateCheck::Valid,
        Err(error) => classify(&error),
    }
}

/// The [`CertificateCheck`] a verification error means.
pub(crate) fn classify(error: &Error) -> CertificateCheck {
    use CertificateError as C;
    let Error::InvalidCertificate(problem) = error else {
        return CertificateCheck::Other;
    };
    match problem {
        C::UnknownIssuer => CertificateCheck::UnknownIssuer,
        C::Expired | C::ExpiredContext { .. } => CertificateCheck::Expired,
        C::NotValidYet | C::NotValidYetContext { .. } => CertificateCheck::NotYetValid,
        C::NotValidForName | C::NotValidForNameContext { .. } => CertificateCheck::WrongName,
        C::Revoked => CertificateCheck::Revoked,
        C::BadSignature => CertificateCheck::BadSignature,
        _ => CertificateCheck::Other,
    }
}
