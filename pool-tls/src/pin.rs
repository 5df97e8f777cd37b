//! Public key pinning (curl's `--pinnedpubkey`): a handshake succeeds only when the server's
//! end-entity certificate carries one of the pinned keys.
//!
//! A pin is the SHA-256 digest of a SubjectPublicKeyInfo in DER (RFC 7469's `pin-sha256`, the
//! `sha256//BASE64` form curl takes). It is checked after every handshake the pins apply to,
//! whether certificates are verified or not (`danger_accept_invalid_certs`), as curl checks
//! them; a mismatch is [`ConnectError::is_pinned_key_mismatch`]. The key comes from the
//! certificate as `rustls-webpki` reads it, and the digest from the `sha2` crate.
//!
//! What this module does not do: pin intermediate or root keys (only the end-entity
//! certificate's key is compared, as curl compares it), or report which pin was expected.

use std::fmt;

use rustls::ClientConnection;
use sha2::{Digest, Sha256};

use crate::ConnectError;

/// The SHA-256 digest of a public key's DER SubjectPublicKeyInfo.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKeyPin([u8; 32]);

impl PublicKeyPin {
    /// The pin whose digest is `sha256` (what `sha256//BASE64` decodes to).
    pub fn from_sha256(sha256: [u8; 32]) -> PublicKeyPin {
        PublicKeyPin(sha256)
    }

    /// The pin of a public key given as its DER SubjectPublicKeyInfo (a PEM `PUBLIC KEY`
    /// block's bytes).
    pub fn of_spki_der(spki: &[u8]) -> PublicKeyPin {
        PublicKeyPin(Sha256::digest(spki).into())
    }

    /// The pin of the key in a DER certificate; `None` when it does not parse.
    pub fn of_certificate_der(certificate: &[u8]) -> Option<PublicKeyPin> {
        let der = rustls::pki_types::CertificateDer::from(certificate);
        let parsed = webpki::EndEntityCert::try_from(&der).ok()?;
        Some(PublicKeyPin::of_spki_der(
            parsed.subject_public_key_info().as_ref(),
        ))
    }

    /// The digest.
    pub fn sha256(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for PublicKeyPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PublicKeyPin(sha256//{})",
            crate::auth::base64_encode(&self.0)
        )
    }
}

/// Whether the end-entity certificate of `session`, a finished handshake, carries one of
/// `pins` (always, when `pins` is empty).
pub(crate) fn check(pins: &[PublicKeyPin], session: &ClientConnection) -> Result<(), ConnectError> {
    if pins.is_empty() {
        return Ok(());
    }
    let presented = session
        .peer_certificates()
        .and_then(<[_]>::first)
        .and_then(|leaf| PublicKeyPin::of_certificate_der(leaf));
    match presented {
        Some(pin) if pins.contains(&pin) => Ok(()),
        _ => Err(ConnectError::pinned_key_mismatch()),
    }
}
