//! Stapled OCSP responses (RFC 6960) about a [`TestPki`]'s server certificate, for the
//! `--cert-status` / `Builder::tls_require_certificate_status` tests: good, revoked or unknown,
//! current or out of date, signed by the CA, by a responder it delegated to, or by a key that
//! may not sign for it.

use std::time::{Duration, SystemTime};

use const_oid::db::rfc5912::{ECDSA_WITH_SHA_256, ID_SHA_1};
use der::asn1::{BitString, GeneralizedTime, Null, OctetString};
use der::{Any, Decode, Encode};
use rcgen::ExtendedKeyUsagePurpose;
use sha1::Digest as _;
use x509_cert::Certificate;
use x509_cert::ext::pkix::CrlReason;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_ocsp::{
    BasicOcspResponse, CertId, CertStatus, OcspGeneralizedTime, OcspResponse, ResponderId,
    ResponseData, RevokedInfo, SingleResponse,
};

use crate::tls::TestPki;

/// What the response says about the certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The certificate is good.
    Good,
    /// Revoked for key compromise.
    Revoked,
    /// The responder does not know it.
    Unknown,
}

/// Who signs a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// The CA that issued the certificate.
    Ca,
    /// Another CA's key (the signature cannot verify with the issuer's).
    OtherCa,
    /// A responder certificate the CA issued for OCSP signing, sent in the response.
    Delegated,
    /// A certificate the CA issued for something else (server authentication), sent in the
    /// response: not a responder.
    NotAResponder,
}

/// One response to staple.
#[derive(Debug, Clone, Copy)]
pub struct Staple {
    /// What it says.
    pub status: Status,
    /// The response was current until this long ago (`None`: it is current, for a day).
    pub expired_ago: Option<Duration>,
    /// Who signs it.
    pub signer: Signer,
}

impl Staple {
    /// A current response signed by the CA.
    pub fn new(status: Status) -> Staple {
        Staple {
            status,
            expired_ago: None,
            signer: Signer::Ca,
        }
    }

    /// The response, DER, about `pki`'s server certificate.
    ///
    /// # Panics
    ///
    /// If the test PKI's certificates do not parse (they do).
    pub fn response(&self, pki: &TestPki) -> Vec<u8> {
        let ca = Certificate::from_der(&pki.ca_der()).expect("ca certificate");
        let leaf = Certificate::from_der(&pki.server_cert_der()).expect("server certificate");
        let issuer_name = ca.tbs_certificate.subject.to_der().expect("ca name");
        let issuer_key = ca
            .tbs_certificate
            .subject_public_key_info
            .subject_public_key
            .raw_bytes();
        let sha1 = |bytes: &[u8]| sha1::Sha1::digest(bytes).to_vec();
        let cert_id = CertId {
            hash_algorithm: AlgorithmIdentifierOwned {
                oid: ID_SHA_1,
                parameters: Some(Any::from(Null)),
            },
            issuer_name_hash: OctetString::new(sha1(&issuer_name)).expect("name hash"),
            issuer_key_hash: OctetString::new(sha1(issuer_key)).expect("key hash"),
            serial_number: leaf.tbs_certificate.serial_number.clone(),
        };
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let (this_update, next_update) = match self.expired_ago {
            None => (now - Duration::from_secs(60), now + day),
            Some(ago) => (now - ago - day, now - ago),
        };
        let time = |at: SystemTime| {
            let since_epoch = at.duration_since(SystemTime::UNIX_EPOCH).expect("time");
            // Whole seconds: DER's GeneralizedTime has none below.
            let seconds = Duration::from_secs(since_epoch.as_secs());
            OcspGeneralizedTime(GeneralizedTime::from_unix_duration(seconds).expect("time"))
        };
        let cert_status = match self.status {
            Status::Good => CertStatus::good(),
            Status::Unknown => CertStatus::unknown(),
            Status::Revoked => CertStatus::Revoked(RevokedInfo {
                revocation_time: time(now - day),
                revocation_reason: Some(CrlReason::KeyCompromise),
            }),
        };
        // A delegated responder's certificate and key; the response names its signer by key.
        let delegate = match self.signer {
            Signer::Delegated => Some(ExtendedKeyUsagePurpose::OcspSigning),
            Signer::NotAResponder => Some(ExtendedKeyUsagePurpose::ServerAuth),
            Signer::Ca | Signer::OtherCa => None,
        }
        .map(|usage| {
            let (cert, key) = pki.delegate(usage);
            (Certificate::from_der(&cert).expect("delegate"), key)
        });
        let responder_key = match &delegate {
            Some((cert, _)) => cert
                .tbs_certificate
                .subject_public_key_info
                .subject_public_key
                .raw_bytes()
                .to_vec(),
            None => issuer_key.to_vec(),
        };
        let data = ResponseData {
            version: Default::default(),
            responder_id: ResponderId::ByKey(
                OctetString::new(sha1(&responder_key)).expect("key id"),
            ),
            produced_at: time(now),
            responses: vec![SingleResponse {
                cert_id,
                cert_status,
                this_update: time(this_update),
                next_update: Some(time(next_update)),
                single_extensions: None,
            }],
            response_extensions: None,
        };
        let tbs = data.to_der().expect("response data");
        let signature = match &delegate {
            Some((_, key)) => rcgen::SigningKey::sign(key, &tbs).expect("signature"),
            None if self.signer == Signer::OtherCa => TestPki::new().ca_sign(&tbs),
            None => pki.ca_sign(&tbs),
        };
        // The signer's certificate goes with the response, as responders send it: a client
        // that looks for the signer among the response's and the server's certificates
        // (OpenSSL) finds it.
        let signer_cert = match delegate {
            Some((cert, _)) => cert,
            None => ca,
        };
        let basic = BasicOcspResponse {
            tbs_response_data: data,
            signature_algorithm: AlgorithmIdentifierOwned {
                oid: ECDSA_WITH_SHA_256,
                parameters: None,
            },
            signature: BitString::from_bytes(&signature).expect("signature"),
            certs: Some(vec![signer_cert]),
        };
        OcspResponse::successful(basic)
            .expect("response")
            .to_der()
            .expect("response encoding")
    }
}
