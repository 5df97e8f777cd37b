//! The certificate verifier behind `danger_accept_invalid_certs` (curl's `-k`), the check
//! that says, after such a handshake, what verification would have found ([`check`]), and
//! [`NamingUntrusted`], rustls's own verifier that says when an untrusted certificate is
//! self-signed or comes with a self-signed root, as curl's messages do, instead of only
//! "unknown issuer", and that takes a server certificate which is itself one of the trust
//! anchors (see [`anchor_as_leaf`]).
//!
//! The type is named for what it is so that it cannot be mistaken for anything else in a
//! review or a stack trace. It skips *certificate* validation only: the handshake signatures
//! are still checked with the crypto provider's algorithms, so the peer must hold the private
//! key of the certificate it presents, and the rest of TLS (key exchange, record protection)
//! is untouched. That defeats passive eavesdropping but not an active attacker presenting
//! their own certificate.

use pool_core::CertificateCheck;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_name};
use rustls::crypto::{
    CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature,
};
use rustls::pki_types::SignatureVerificationAlgorithm;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore, SignatureScheme,
};
use std::sync::Arc;

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
    checker: Option<&NamingUntrusted>,
    chain: &[CertificateDer<'_>],
    server_name: &ServerName<'_>,
    algorithms: Algorithms,
) -> CertificateCheck {
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return CertificateCheck::Other;
    };
    let Some(checker) = checker else {
        return untrusted(chain, algorithms);
    };
    match checker.verify(end_entity, intermediates, server_name, &[], UnixTime::now()) {
        Ok(_) => CertificateCheck::Valid,
        Err(error) => {
            named_untrusted(&error, chain, algorithms).unwrap_or_else(|| classify(&error))
        }
    }
}

/// The signature algorithms a self-signed certificate's own signature is checked with (the
/// crypto provider's).
pub(crate) type Algorithms = &'static [&'static dyn SignatureVerificationAlgorithm];

/// What an untrusted chain is ([`untrusted`]), when `error` says it is untrusted: rustls's
/// unknown issuer, or webpki's "CA used as end entity", which a self-signed certificate made
/// as a CA (`openssl req -x509` makes them so) gets instead.
fn named_untrusted(
    error: &Error,
    chain: &[CertificateDer<'_>],
    algorithms: Algorithms,
) -> Option<CertificateCheck> {
    let Error::InvalidCertificate(problem) = error else {
        return None;
    };
    let unknown_issuer = matches!(problem, CertificateError::UnknownIssuer);
    let ca_as_leaf = is_ca_as_leaf(problem);
    match untrusted(chain, algorithms) {
        CertificateCheck::UnknownIssuer if unknown_issuer => Some(CertificateCheck::UnknownIssuer),
        named @ (CertificateCheck::SelfSigned | CertificateCheck::SelfSignedInChain)
            if unknown_issuer || ca_as_leaf =>
        {
            Some(named)
        }
        _ => None,
    }
}

/// Whether `problem` is webpki's "CA used as end entity".
fn is_ca_as_leaf(problem: &CertificateError) -> bool {
    matches!(problem, CertificateError::Other(OtherError(other))
        if other.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity))
}

/// When `end_entity`, which webpki refused with `error`, is one of `anchors` (the same subject
/// and public key): whether it names `server_name`, as rustls would say it. Two cases:
///
/// * a self-signed certificate made as a CA (`openssl req -x509` makes them so) that the
///   caller trusts as a root, served as the server's own: webpki refuses any CA certificate
///   as a server's ("CA used as end entity");
/// * the server's own certificate, issued by a CA the caller does not trust, given as a root
///   itself (`--cacert server.pem`): webpki looks for its issuer among the roots and finds
///   none ("unknown issuer").
///
/// OpenSSL (so curl, which asks for partial chains) and Go accept both, since trusting a
/// certificate is trusting its key, and the handshake still proves the server holds that key.
/// webpki raises both errors after checking the certificate's validity period, so an expired
/// anchor is still refused as expired. The extended key usage is not checked (webpki reads it
/// after the basic constraints), as OpenSSL does not check it on a trusted certificate.
fn anchor_as_leaf(
    error: &Error,
    end_entity: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    anchors: &RootCertStore,
) -> Option<Result<ServerCertVerified, Error>> {
    let Error::InvalidCertificate(problem) = error else {
        return None;
    };
    if !is_ca_as_leaf(problem) && !matches!(problem, CertificateError::UnknownIssuer) {
        return None;
    }
    let itself = webpki::anchor_from_trusted_cert(end_entity).ok()?;
    let trusted = anchors.roots.iter().any(|anchor| {
        anchor.subject == itself.subject
            && anchor.subject_public_key_info == itself.subject_public_key_info
    });
    if !trusted {
        return None;
    }
    let parsed = ParsedCertificate::try_from(end_entity).ok()?;
    Some(verify_server_name(&parsed, server_name).map(|()| ServerCertVerified::assertion()))
}

/// What a chain (the server's certificate first) that no trusted root issued is: its
/// certificate is self-signed, or a certificate after it is (a root the server sent along),
/// or neither.
fn untrusted(chain: &[CertificateDer<'_>], algorithms: Algorithms) -> CertificateCheck {
    let self_signed = |der: &CertificateDer<'_>| is_self_signed(der, algorithms);
    match chain.split_first() {
        Some((leaf, _)) if self_signed(leaf) => CertificateCheck::SelfSigned,
        Some((_, rest)) if rest.iter().any(self_signed) => CertificateCheck::SelfSignedInChain,
        _ => CertificateCheck::UnknownIssuer,
    }
}

/// Whether `der` is self-signed: it names itself as its issuer, and its own key verifies its
/// signature (checked by trusting it alone and verifying it as a server certificate). A
/// certificate made as a CA that names itself is a root, self-signed by definition; webpki
/// refuses to verify one as a server certificate, so the name is enough for it. A name alone
/// is not: two certificates can share a name (a CA and its leaf made with one default name).
fn is_self_signed(der: &CertificateDer<'_>, algorithms: Algorithms) -> bool {
    let Ok(cert) = webpki::EndEntityCert::try_from(der) else {
        return false;
    };
    if cert.issuer() != cert.subject() {
        return false;
    }
    let Ok(itself) = webpki::anchor_from_trusted_cert(der) else {
        return false;
    };
    let anchors = [itself];
    let verified = cert.verify_for_usage(
        algorithms,
        &anchors,
        &[],
        UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    );
    matches!(verified, Ok(_) | Err(webpki::Error::CaUsedAsEndEntity))
}

/// rustls's own verifier, whose "unknown issuer" (or webpki's "CA used as end entity") says
/// when the certificate is self-signed or the chain ends in a self-signed root
/// ([`Untrusted`], an error rustls carries as `CertificateError::Other`, sent to the server
/// as `certificate_unknown` instead of `unknown_ca`), and which takes a server certificate
/// that is itself a trust anchor ([`anchor_as_leaf`]). Everything else is rustls's.
#[derive(Debug)]
pub(crate) struct NamingUntrusted {
    inner: Arc<WebPkiServerVerifier>,
    /// The roots `inner` trusts.
    anchors: Arc<RootCertStore>,
    algorithms: Algorithms,
}

impl NamingUntrusted {
    pub(crate) fn new(
        inner: Arc<WebPkiServerVerifier>,
        anchors: Arc<RootCertStore>,
        algorithms: Algorithms,
    ) -> NamingUntrusted {
        NamingUntrusted {
            inner,
            anchors,
            algorithms,
        }
    }

    /// rustls's verdict, but for a certificate that is itself a trust anchor.
    fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(error) => {
                anchor_as_leaf(&error, end_entity, server_name, &self.anchors).unwrap_or(Err(error))
            }
            verified => verified,
        }
    }
}

impl ServerCertVerifier for NamingUntrusted {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verified = self.verify(end_entity, intermediates, server_name, ocsp_response, now);
        let Err(error) = verified else {
            return verified;
        };
        let chain: Vec<CertificateDer<'_>> = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|der| CertificateDer::from(der.as_ref()))
            .collect();
        match named_untrusted(&error, &chain, self.algorithms) {
            Some(named @ (CertificateCheck::SelfSigned | CertificateCheck::SelfSignedInChain)) => {
                let named = OtherError(Arc::new(Untrusted(named)));
                Err(Error::InvalidCertificate(CertificateError::Other(named)))
            }
            _ => Err(error),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// An untrusted certificate [`NamingUntrusted`] named: [`CertificateCheck::SelfSigned`] or
/// [`CertificateCheck::SelfSignedInChain`].
#[derive(Clone, Copy, Debug)]
struct Untrusted(CertificateCheck);

/// `error` itself, or the [`Untrusted`] it carries when it is the rustls error
/// [`NamingUntrusted`] made.
pub(crate) fn unwrap_untrusted(
    error: Box<dyn std::error::Error + Send + Sync>,
) -> Box<dyn std::error::Error + Send + Sync> {
    let named = match error.downcast_ref::<Error>() {
        Some(Error::InvalidCertificate(CertificateError::Other(OtherError(other)))) => {
            other.downcast_ref::<Untrusted>().copied()
        }
        _ => None,
    };
    match named {
        Some(named) => Box::new(named),
        None => error,
    }
}

/// The [`CertificateCheck`] a handshake's failure means: a rustls error's, or an
/// [`Untrusted`]'s.
pub(crate) fn classify_source(
    error: &(dyn std::error::Error + Send + Sync + 'static),
) -> CertificateCheck {
    if let Some(named) = error.downcast_ref::<Untrusted>() {
        return named.0;
    }
    error
        .downcast_ref::<Error>()
        .map_or(CertificateCheck::Other, classify)
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            CertificateCheck::SelfSigned => "self-signed certificate",
            _ => "self-signed certificate in certificate chain",
        })
    }
}

impl std::error::Error for Untrusted {}

/// The [`CertificateCheck`] a verification error means.
pub(crate) fn classify(error: &Error) -> CertificateCheck {
    use CertificateError as C;
    let Error::InvalidCertificate(problem) = error else {
        return CertificateCheck::Other;
    };
    match problem {
        C::UnknownIssuer => CertificateCheck::UnknownIssuer,
        C::Other(OtherError(other)) => other
            .downcast_ref::<Untrusted>()
            .map_or(CertificateCheck::Other, |named| named.0),
        C::Expired | C::ExpiredContext { .. } => CertificateCheck::Expired,
        C::NotValidYet | C::NotValidYetContext { .. } => CertificateCheck::NotYetValid,
        C::NotValidForName | C::NotValidForNameContext { .. } => CertificateCheck::WrongName,
        C::Revoked => CertificateCheck::Revoked,
        C::BadSignature => CertificateCheck::BadSignature,
        _ => CertificateCheck::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    /// A self-signed certificate for `localhost` named `name`, made as a CA (`openssl req
    /// -x509`'s kind) or not, valid now or only in 2000.
    fn self_signed(name: &str, as_ca: bool, expired: bool) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        if as_ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    /// The verifier a connector builds for `roots`.
    fn trusting(roots: &[&CertificateDer<'static>]) -> NamingUntrusted {
        let mut store = RootCertStore::empty();
        for root in roots {
            store.add((*root).clone()).unwrap();
        }
        let store = Arc::new(store);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let algorithms = provider.signature_verification_algorithms.all;
        let inner = WebPkiServerVerifier::builder_with_provider(store.clone(), provider)
            .build()
            .unwrap();
        NamingUntrusted::new(inner, store, algorithms)
    }

    fn verify(
        verifier: &NamingUntrusted,
        cert: &CertificateDer<'_>,
        name: &str,
    ) -> Result<(), Error> {
        let name = ServerName::try_from(name.to_owned()).unwrap();
        verifier
            .verify_server_cert(cert, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn a_trusted_self_signed_ca_certificate_serves_as_its_own_chain() {
        let cert = self_signed("dev server", true, false);
        let verifier = trusting(&[&cert]);
        assert_eq!(verify(&verifier, &cert, "localhost"), Ok(()));
        let algorithms = verifier.algorithms;
        let localhost = ServerName::try_from("localhost").unwrap();
        let chain = [cert.clone()];
        assert_eq!(
            check(Some(&verifier), &chain, &localhost, algorithms),
            CertificateCheck::Valid,
            "-k's account agrees with the handshake"
        );
    }

    #[test]
    fn a_trusted_self_signed_certificate_still_needs_the_name() {
        let cert = self_signed("dev server", true, false);
        let error = verify(&trusting(&[&cert]), &cert, "other.test").unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
            ),
            "{error:?}"
        );
    }

    #[test]
    fn an_expired_trusted_self_signed_certificate_is_refused_as_expired() {
        let cert = self_signed("dev server", true, true);
        let error = verify(&trusting(&[&cert]), &cert, "localhost").unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
            ),
            "{error:?}"
        );
    }

    #[test]
    fn a_self_signed_ca_certificate_that_is_not_trusted_is_named_self_signed() {
        let cert = self_signed("dev server", true, false);
        // Another root of the same name: the subject alone does not make it trusted.
        let other = self_signed("dev server", true, false);
        let error = verify(&trusting(&[&other]), &cert, "localhost").unwrap_err();
        let Error::InvalidCertificate(CertificateError::Other(OtherError(named))) = &error else {
            panic!("{error:?}");
        };
        assert_eq!(named.to_string(), "self-signed certificate");
    }

    /// A certificate for `localhost` issued by a CA of its own, which nobody trusts.
    fn issued_by_an_untrusted_ca(expired: bool) -> CertificateDer<'static> {
        let mut ca = CertificateParams::new(Vec::new()).unwrap();
        ca.distinguished_name = rcgen::DistinguishedName::new();
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "an untrusted CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        params.signed_by(&key, &ca).unwrap().der().clone()
    }

    /// `--cacert server.pem`: the server's certificate trusted alone, its issuer not.
    #[test]
    fn a_server_certificate_trusted_itself_needs_no_trusted_issuer() {
        let cert = issued_by_an_untrusted_ca(false);
        let verifier = trusting(&[&cert]);
        assert_eq!(verify(&verifier, &cert, "localhost"), Ok(()));
        let error = verify(&verifier, &cert, "other.test").unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
            ),
            "{error:?}"
        );
        let expired = issued_by_an_untrusted_ca(true);
        let error = verify(&trusting(&[&expired]), &expired, "localhost").unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
            ),
            "{error:?}"
        );
        // Not trusted itself: its issuer is unknown, as before.
        let other = issued_by_an_untrusted_ca(false);
        let error = verify(&trusting(&[&other]), &cert, "localhost").unwrap_err();
        assert_eq!(
            error,
            Error::InvalidCertificate(CertificateError::UnknownIssuer)
        );
    }

    #[test]
    fn a_trusted_self_signed_leaf_verifies_as_before() {
        // Not made as a CA: webpki itself takes it, through its own anchor.
        let cert = self_signed("dev server", false, false);
        assert_eq!(verify(&trusting(&[&cert]), &cert, "localhost"), Ok(()));
    }
}
