//! The server certificate's stapled status (OCSP stapling, RFC 6960 and RFC 6066's
//! `status_request`): what [`TlsOptions::require_certificate_status`] checks, as curl's
//! `--cert-status` does through OpenSSL.
//!
//! rustls asks every server for a stapled OCSP response and hands it to the certificate
//! verifier; [`StatusVerifier`] runs the usual verifier first and then [`StatusCheck`], which
//! fails the handshake unless the staple is a successful basic response, signed by the
//! certificate's issuer (a certificate the server sent, or a trust anchor) or by a responder
//! the issuer delegated to (`id-kp-OCSPSigning`, sent in the response), the one its responder
//! ID names, naming the certificate (its issuer's name and key hashed with SHA-1 or SHA-256,
//! and its serial), current within five minutes of either end of its window, and saying "good".
//! The signatures are checked with the crypto provider's algorithms, as the handshake's are.
//!
//! What this module does not do: fetch a response from the responder itself (a server that
//! staples nothing fails), check the status of intermediate certificates, or check a staple on
//! a resumed session (rustls verifies no certificate there, so the connector turns resumption
//! off when the status is required).
//!
//! [`TlsOptions::require_certificate_status`]: crate::TlsOptions::require_certificate_status

use std::fmt;
use std::sync::Arc;

use der::{Decode, Encode, Header, Reader, SliceReader};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, SignatureVerificationAlgorithm, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use sha2::Digest as _;
use x509_cert::Certificate;
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use x509_ocsp::{
    BasicOcspResponse, CertStatus, OcspResponse, OcspResponseStatus, ResponderId, SingleResponse,
};

/// How far either end of a response's validity window may be off (OpenSSL's and curl's five
/// minutes).
const LEEWAY_SECS: u64 = 300;

/// Why the server's stapled certificate status did not show its certificate as good; the
/// source of a [`ConnectError`](crate::ConnectError) that is
/// [`is_certificate_status`](crate::ConnectError::is_certificate_status). Its `Display` is
/// curl's message for the same case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateStatusError {
    kind: StatusKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum StatusKind {
    /// The server stapled nothing.
    Missing,
    /// The staple is not an OCSP response, or not a basic one.
    Malformed,
    /// The responder answered with an error status (`tryLater`, ...).
    Unsuccessful(&'static str, u8),
    /// The response is not signed by the issuer or a responder it delegated to.
    Unverified,
    /// The response says nothing about this certificate.
    NotListed,
    /// The response is outside its validity window.
    Expired,
    /// The certificate is revoked, for this reason (OpenSSL's name and the reason's code, -1
    /// for none).
    Revoked(&'static str, i8),
    /// The responder does not know the certificate.
    Unknown,
}

impl CertificateStatusError {
    fn new(kind: StatusKind) -> CertificateStatusError {
        CertificateStatusError { kind }
    }

    /// Whether the server stapled no status at all (it does not do OCSP stapling).
    pub fn is_missing(&self) -> bool {
        self.kind == StatusKind::Missing
    }

    /// Whether the status says the certificate is revoked.
    pub fn is_revoked(&self) -> bool {
        matches!(self.kind, StatusKind::Revoked(..))
    }
}

impl fmt::Display for CertificateStatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StatusKind::Missing => f.write_str("No OCSP response received"),
            StatusKind::Malformed => f.write_str("Invalid OCSP response"),
            StatusKind::Unsuccessful(name, code) => {
                write!(f, "Invalid OCSP response status: {name} ({code})")
            }
            StatusKind::Unverified => f.write_str("OCSP response verification failed"),
            StatusKind::NotListed => f.write_str("Could not find certificate ID in OCSP response"),
            StatusKind::Expired => f.write_str("OCSP response has expired"),
            StatusKind::Revoked(reason, code) => {
                write!(f, "SSL certificate revocation reason: {reason} ({code})")
            }
            StatusKind::Unknown => f.write_str("SSL server certificate status verification FAILED"),
        }
    }
}

impl std::error::Error for CertificateStatusError {}

/// A certificate that may have issued the server's: its subject and key, both DER.
#[derive(Debug, Clone)]
struct Issuer {
    name: Vec<u8>,
    key: SubjectPublicKeyInfoOwned,
}

/// The check of a stapled response against the certificate it should vouch for.
#[derive(Debug, Clone)]
pub(crate) struct StatusCheck {
    /// The trust anchors, which may have issued the server's certificate themselves.
    anchors: Vec<Issuer>,
    /// The provider's signature algorithms.
    algorithms: &'static [&'static dyn SignatureVerificationAlgorithm],
}

impl StatusCheck {
    pub(crate) fn new(
        roots: &RootCertStore,
        algorithms: &'static [&'static dyn SignatureVerificationAlgorithm],
    ) -> StatusCheck {
        // A trust anchor keeps its subject and key without their outer SEQUENCE headers.
        let anchors = roots
            .roots
            .iter()
            .filter_map(|anchor| {
                let key = sequence(anchor.subject_public_key_info.as_ref())?;
                Some(Issuer {
                    name: sequence(anchor.subject.as_ref())?,
                    key: SubjectPublicKeyInfoOwned::from_der(&key).ok()?,
                })
            })
            .collect();
        StatusCheck {
            anchors,
            algorithms,
        }
    }

    /// Whether `ocsp`, stapled with `end_entity` and `intermediates`, shows the certificate
    /// as good at `now`.
    pub(crate) fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<(), CertificateStatusError> {
        use StatusKind::*;
        if ocsp.is_empty() {
            return Err(CertificateStatusError::new(Missing));
        }
        let fail = |kind| CertificateStatusError::new(kind);
        let response = OcspResponse::from_der(ocsp).map_err(|_| fail(Malformed))?;
        if response.response_status != OcspResponseStatus::Successful {
            let (name, code) = status_name(response.response_status);
            return Err(fail(Unsuccessful(name, code)));
        }
        let bytes = response.response_bytes.ok_or_else(|| fail(Malformed))?;
        if bytes.response_type != const_oid::db::rfc6960::ID_PKIX_OCSP_BASIC {
            return Err(fail(Malformed));
        }
        let basic_der = bytes.response.as_bytes();
        let basic = BasicOcspResponse::from_der(basic_der).map_err(|_| fail(Malformed))?;
        // The signature covers the bytes as sent, whatever a re-encoding would give.
        let signed = signed_bytes(basic_der).map_err(|_| fail(Malformed))?;
        let leaf = Certificate::from_der(end_entity).map_err(|_| fail(Unverified))?;
        let issuer = self
            .issuer_of(&leaf, intermediates)
            .ok_or_else(|| fail(Unverified))?;
        let signature = basic.signature.as_bytes().ok_or_else(|| fail(Malformed))?;
        // The signer is the certificate the response names (by subject or key hash), whose
        // key verifies the signature.
        let named = |name: &[u8], key: &SubjectPublicKeyInfoOwned| match &basic
            .tbs_response_data
            .responder_id
        {
            ResponderId::ByName(by) => by.to_der().is_ok_and(|by| by == name),
            ResponderId::ByKey(hash) => {
                hash.as_bytes() == sha1::Sha1::digest(key.subject_public_key.raw_bytes()).as_slice()
            }
        };
        let signed_by = |name: &[u8], key: &SubjectPublicKeyInfoOwned| {
            named(name, key) && self.verifies(key, &basic.signature_algorithm, signed, signature)
        };
        let delegated = || {
            basic.certs.iter().flatten().any(|responder| {
                let tbs = &responder.tbs_certificate;
                let name = tbs.subject.to_der().unwrap_or_default();
                self.delegated_by(&issuer, responder)
                    && signed_by(&name, &tbs.subject_public_key_info)
            })
        };
        if !signed_by(&issuer.name, &issuer.key) && !delegated() {
            return Err(fail(Unverified));
        }
        let single = basic
            .tbs_response_data
            .responses
            .iter()
            .find(|single| names(single, &leaf, &issuer))
            .ok_or_else(|| fail(NotListed))?;
        let now = now.as_secs();
        let this_update = single.this_update.0.to_unix_duration().as_secs();
        let next_update = single
            .next_update
            .map(|next| next.0.to_unix_duration().as_secs());
        if this_update > now + LEEWAY_SECS
            || next_update.is_some_and(|next| next + LEEWAY_SECS < now)
        {
            return Err(fail(Expired));
        }
        match &single.cert_status {
            CertStatus::Good(_) => Ok(()),
            CertStatus::Revoked(info) => {
                let (name, code) = reason_name(info.revocation_reason);
                Err(fail(Revoked(name, code)))
            }
            CertStatus::Unknown(_) => Err(fail(Unknown)),
        }
    }

    /// The certificate that issued `leaf`: one the server sent, else a trust anchor.
    fn issuer_of(
        &self,
        leaf: &Certificate,
        intermediates: &[CertificateDer<'_>],
    ) -> Option<Issuer> {
        let name = leaf.tbs_certificate.issuer.to_der().ok()?;
        let sent = intermediates.iter().find_map(|der| {
            let cert = Certificate::from_der(der).ok()?;
            let subject = cert.tbs_certificate.subject.to_der().ok()?;
            (subject == name).then_some(Issuer {
                name: subject,
                key: cert.tbs_certificate.subject_public_key_info,
            })
        });
        sent.or_else(|| self.anchors.iter().find(|a| a.name == name).cloned())
    }

    /// Whether `responder` is a certificate `issuer` signed for signing OCSP responses.
    fn delegated_by(&self, issuer: &Issuer, responder: &Certificate) -> bool {
        let Ok(tbs) = responder.tbs_certificate.to_der() else {
            return false;
        };
        let Ok(issuer_name) = responder.tbs_certificate.issuer.to_der() else {
            return false;
        };
        let signature = responder.signature.as_bytes().unwrap_or_default();
        let ocsp_signing = responder
            .tbs_certificate
            .get::<x509_cert::ext::pkix::ExtendedKeyUsage>()
            .ok()
            .flatten()
            .is_some_and(|(_, usage)| {
                usage
                    .0
                    .contains(&const_oid::db::rfc5280::ID_KP_OCSP_SIGNING)
            });
        issuer_name == issuer.name
            && ocsp_signing
            && self.verifies(&issuer.key, &responder.signature_algorithm, &tbs, signature)
    }

    /// Whether `signature` over `message` verifies with `key` by the algorithm named
    /// `algorithm`, among the provider's.
    fn verifies(
        &self,
        key: &SubjectPublicKeyInfoOwned,
        algorithm: &AlgorithmIdentifierOwned,
        message: &[u8],
        signature: &[u8],
    ) -> bool {
        let (Some(key_algorithm), Some(signature_algorithm)) =
            (contents_of(&key.algorithm), contents_of(algorithm))
        else {
            return false;
        };
        let Some(public_key) = key.subject_public_key.as_bytes() else {
            return false;
        };
        self.algorithms.iter().any(|candidate| {
            candidate.public_key_alg_id().as_ref() == key_algorithm.as_slice()
                && candidate.signature_alg_id().as_ref() == signature_algorithm.as_slice()
                && candidate
                    .verify_signature(public_key, message, signature)
                    .is_ok()
        })
    }
}

/// Whether `single` is about `leaf`: the same serial, and its issuer's name and key hashed as
/// the response says (SHA-1 or SHA-256).
fn names(single: &SingleResponse, leaf: &Certificate, issuer: &Issuer) -> bool {
    let id = &single.cert_id;
    if id.serial_number != leaf.tbs_certificate.serial_number {
        return false;
    }
    let key = issuer.key.subject_public_key.raw_bytes();
    let (name_hash, key_hash): (Vec<u8>, Vec<u8>) = match id.hash_algorithm.oid {
        const_oid::db::rfc5912::ID_SHA_1 => (
            sha1::Sha1::digest(&issuer.name).to_vec(),
            sha1::Sha1::digest(key).to_vec(),
        ),
        const_oid::db::rfc5912::ID_SHA_256 => (
            sha2::Sha256::digest(&issuer.name).to_vec(),
            sha2::Sha256::digest(key).to_vec(),
        ),
        _ => return false,
    };
    id.issuer_name_hash.as_bytes() == name_hash && id.issuer_key_hash.as_bytes() == key_hash
}

/// The bytes a basic response's signature covers: its first element, `tbsResponseData`, as
/// it stands in `basic`.
fn signed_bytes(basic: &[u8]) -> der::Result<&[u8]> {
    let mut reader = SliceReader::new(basic)?;
    Header::decode(&mut reader)?;
    reader.tlv_bytes()
}

/// `contents` (a DER value without its header) under a SEQUENCE header.
fn sequence(contents: &[u8]) -> Option<Vec<u8>> {
    let header = Header::new(der::Tag::Sequence, contents.len()).ok()?;
    let mut out = Vec::with_capacity(contents.len() + 6);
    header.encode_to_vec(&mut out).ok()?;
    out.extend_from_slice(contents);
    Some(out)
}

/// An algorithm identifier's DER without its SEQUENCE header, as rustls's algorithms name
/// theirs.
fn contents_of(algorithm: &AlgorithmIdentifierOwned) -> Option<Vec<u8>> {
    let der = algorithm.to_der().ok()?;
    let mut reader = SliceReader::new(&der).ok()?;
    let header = Header::decode(&mut reader).ok()?;
    let start = usize::try_from(reader.position()).ok()?;
    let length = usize::try_from(header.length).ok()?;
    der.get(start..start + length).map(<[u8]>::to_vec)
}

/// OpenSSL's name and number for a response status.
fn status_name(status: OcspResponseStatus) -> (&'static str, u8) {
    match status {
        OcspResponseStatus::Successful => ("successful", 0),
        OcspResponseStatus::MalformedRequest => ("malformedrequest", 1),
        OcspResponseStatus::InternalError => ("internalerror", 2),
        OcspResponseStatus::TryLater => ("trylater", 3),
        OcspResponseStatus::SigRequired => ("sigrequired", 5),
        OcspResponseStatus::Unauthorized => ("unauthorized", 6),
    }
}

/// OpenSSL's name and code for a revocation reason (`(UNKNOWN)` and -1 when the response
/// gives none).
fn reason_name(reason: Option<x509_cert::ext::pkix::CrlReason>) -> (&'static str, i8) {
    use x509_cert::ext::pkix::CrlReason::*;
    let Some(reason) = reason else {
        return ("(UNKNOWN)", -1);
    };
    let name = match reason {
        Unspecified => "unspecified",
        KeyCompromise => "keyCompromise",
        CaCompromise => "cACompromise",
        AffiliationChanged => "affiliationChanged",
        Superseded => "superseded",
        CessationOfOperation => "cessationOfOperation",
        CertificateHold => "certificateHold",
        RemoveFromCRL => "removeFromCRL",
        PrivilegeWithdrawn => "privilegeWithdrawn",
        AaCompromise => "aACompromise",
    };
    (name, reason as i8)
}

/// The verifier the connector would use, then [`StatusCheck`].
#[derive(Debug)]
pub(crate) struct StatusVerifier {
    pub(crate) inner: Arc<dyn ServerCertVerifier>,
    pub(crate) check: StatusCheck,
}

impl ServerCertVerifier for StatusVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        self.check
            .check(end_entity, intermediates, ocsp_response, now)
            .map_err(|e| {
                rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(e))))
            })?;
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

/// The status error a rustls error carries, if it carries one.
pub(crate) fn status_error(error: &rustls::Error) -> Option<&CertificateStatusError> {
    match error {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(inner))) => {
            inner.downcast_ref::<CertificateStatusError>()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_staple_and_junk_are_named_as_curl_names_them() {
        let algorithms = rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .all;
        let check = StatusCheck::new(&RootCertStore::empty(), algorithms);
        let leaf = CertificateDer::from(vec![0x30, 0x00]);
        let now = UnixTime::now();
        let missing = check.check(&leaf, &[], &[], now).unwrap_err();
        assert!(missing.is_missing() && !missing.is_revoked());
        assert_eq!(missing.to_string(), "No OCSP response received");
        let junk = check.check(&leaf, &[], b"junk", now).unwrap_err();
        assert_eq!(junk.to_string(), "Invalid OCSP response");
        // `tryLater`: a successful parse, an unsuccessful answer.
        let try_later = [0x30, 0x03, 0x0a, 0x01, 0x03];
        let error = check.check(&leaf, &[], &try_later, now).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Invalid OCSP response status: trylater (3)"
        );
    }

    #[test]
    fn headers_come_and_go_around_contents() {
        let wrapped = sequence(&[0x05, 0x00]).unwrap();
        assert_eq!(wrapped, [0x30, 0x02, 0x05, 0x00]);
        let sha1 = AlgorithmIdentifierOwned {
            oid: const_oid::db::rfc5912::ID_SHA_1,
            parameters: None,
        };
        let contents = contents_of(&sha1).unwrap();
        assert_eq!(contents, [0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a]);
    }
}
