//! Stapled OCSP responses (RFC 6960) about a [`TestPki`]'s server certificate, for the
//! `--cert-status` / `Builder::tls_require_certificate_status` tests: good, revoked or unknown,
//! current or out of date, signed by the CA or by a key that is not the CA's.

use std::time::{Duration, SystemTime};

use const_oid::db::rfc5912::{ECDSA_WITH_SHA_256, ID_SHA_1};
use der::asn1::{BitString, GeneralizedTime, Null, OctetString};
use der::{Any, Decode, Encode};
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

/// One response to staple.
#[derive(Debug, Clone, Copy)]
pub struct Staple {
    /// What it says.
    pub status: Status,
    /// The response was current until this long ago (`None`: it is current, for a day).
    pub expired_ago: Option<Duration>,
    /// Signed by another CA's key (the signature cannot verify with the issuer's).
    pub foreign_signature: bool,
}

impl Staple {
    /// A current response signed by the CA.
    pub fn new(status: Status) -> Staple {
        Staple {
            status,
            expired_ago: None,
            foreign_signature: false,
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
        let data = ResponseData {
            version: Default::default(),
            responder_id: ResponderId::ByKey(OctetString::new(sha1(issuer_key)).expect("key id")),
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
        let signature = match self.foreign_signature {
            false => pki.ca_sign(&tbs),
            true => TestPki::new().ca_sign(&tbs),
        };
        let basic = BasicOcspResponse {
            tbs_response_data: data,
            signature_algorithm: AlgorithmIdentifierOwned {
                oid: ECDSA_WITH_SHA_256,
                parameters: None,
            },
            signature: BitString::from_bytes(&signature).expect("signature"),
            // The signer's certificate, as responders send it: a client that looks for the
            // signer among the response's and the server's certificates (OpenSSL) finds it.
            certs: Some(vec![ca]),
        };
        OcspResponse::successful(basic)
            .expect("response")
            .to_der()
            .expect("response encoding")
    }
}
