//! `--pinnedpubkey` and `--proxy-pinnedpubkey`: the public keys a server (or an `https://`
//! proxy) may present, read as curl reads them, for the pool's [`pool::PublicKeyPin`]s.
//!
//! The argument is either `sha256//BASE64[;sha256//BASE64...]` (the SHA-256 digests of the
//! keys' DER SubjectPublicKeyInfo) or a file holding one public key, PEM (`-----BEGIN PUBLIC
//! KEY-----`) or DER. What curl cannot use pins nothing it could match: an entry that is not
//! the base64 of 32 bytes, an unreadable file, a file that is not a public key (a certificate,
//! say). So a bad argument is not an error of its own: every TLS handshake it applies to
//! fails with curl's exit 90, and `http://` URLs are not affected, as with curl.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject;

/// The pins `arg` names; when it names none that could match, one that nothing matches.
pub(crate) fn pins(arg: &str) -> Vec<pool::PublicKeyPin> {
    let pins: Vec<pool::PublicKeyPin> = match arg.strip_prefix("sha256//") {
        Some(_) => arg
            .split(';')
            .filter_map(|entry| entry.trim().strip_prefix("sha256//"))
            .filter_map(|digest| STANDARD.decode(digest).ok())
            .filter_map(|digest| <[u8; 32]>::try_from(digest).ok())
            .map(pool::PublicKeyPin::from_sha256)
            .collect(),
        None => from_file(Path::new(arg)).into_iter().collect(),
    };
    if pins.is_empty() {
        // The digest of no key anyone can make (finding one would break SHA-256): pinning
        // stays on, and every handshake fails as curl's does.
        return vec![pool::PublicKeyPin::from_sha256([0; 32])];
    }
    pins
}

/// The pin of the public key in the file at `path`, PEM or DER; `None` when it cannot be read
/// or is PEM of anything but a public key.
fn from_file(path: &Path) -> Option<pool::PublicKeyPin> {
    let bytes = std::fs::read(path).ok()?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Some(pool::PublicKeyPin::of_spki_der(&bytes));
    }
    let key = SubjectPublicKeyInfoDer::from_pem_slice(&bytes).ok()?;
    Some(pool::PublicKeyPin::of_spki_der(key.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_files_and_what_pins_nothing() {
        let digest = [7u8; 32];
        let encoded = STANDARD.encode(digest);
        let pin = pool::PublicKeyPin::from_sha256(digest);
        assert_eq!(pins(&format!("sha256//{encoded}")), [pin]);
        // Entries that are not 32 bytes of base64 are left out.
        assert_eq!(pins(&format!("sha256//x;sha256//{encoded};md5//y")), [pin]);
        let nothing = pool::PublicKeyPin::from_sha256([0; 32]);
        assert_eq!(pins("sha256//!!!"), [nothing]);
        assert_eq!(pins("/nonexistent/key.pem"), [nothing]);

        let dir = crate::scratch::Scratch::new("pins");
        let spki = b"\x30\x03\x02\x01\x00";
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(spki)
        );
        let (pem_path, der_path, cert_path) =
            (dir.join("k.pem"), dir.join("k.der"), dir.join("c.pem"));
        std::fs::write(&pem_path, pem).unwrap();
        std::fs::write(&der_path, spki).unwrap();
        std::fs::write(
            &cert_path,
            "-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let of_key = pool::PublicKeyPin::of_spki_der(spki);
        assert_eq!(pins(pem_path.to_str().unwrap()), [of_key]);
        assert_eq!(pins(der_path.to_str().unwrap()), [of_key]);
        assert_eq!(pins(cert_path.to_str().unwrap()), [nothing]);
    }
}
