//! `--cert` / `--key` (and the proxy's) read from their files in the formats curl's
//! `--cert-type` and `--key-type` name: PEM (the default) or DER. The pool takes PEM, so a
//! DER certificate or key is wrapped in PEM armour here; the pool then checks that the key
//! matches the certificate. curl's other types (`P12`, `ENG`) need OpenSSL and are refused
//! with exit 58, as an unknown type is.

use std::path::Path;

use base64::Engine as _;
use rustls_pki_types::PrivateKeyDer;

use super::exit::CurlError;

/// The file formats of a client certificate or key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pem,
    Der,
}

/// `--cert` and its key, PEM: the key file, or the certificate's file when no key is named
/// (curl's "the key may be in the same file"), each read as its type says.
///
/// # Errors
///
/// Exit 58 when a file cannot be read, a type is not PEM or DER, or a DER file holds no
/// certificate or key.
pub(crate) fn read_identity(
    cert: &Path,
    key: Option<&Path>,
    (cert_type, key_type): (Option<&str>, Option<&str>),
) -> Result<(Vec<u8>, Vec<u8>), CurlError> {
    let cert_format = format(cert_type).ok_or_else(|| {
        unsupported(
            cert_type,
            &format!("'{}' for certificate", cert_type.unwrap_or_default()),
        )
    })?;
    let key_format = format(key_type).ok_or_else(|| unsupported(key_type, "for private key"))?;
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| {
            CurlError::new(
                58,
                format!(
                    "could not load PEM client certificate from {}: {e}",
                    path.display()
                ),
            )
        })
    };
    let cert_bytes = read(cert)?;
    let key_path = key.unwrap_or(cert);
    let key_bytes = match key {
        Some(key) => read(key)?,
        None => cert_bytes.clone(),
    };
    let chain = match cert_format {
        Format::Pem => cert_bytes,
        Format::Der => armour("CERTIFICATE", &cert_bytes),
    };
    let key = match key_format {
        Format::Pem => key_bytes,
        Format::Der => der_key(&key_bytes).ok_or_else(|| {
            CurlError::new(
                58,
                format!(
                    "unable to set private key file: '{}' type DER",
                    key_path.display()
                ),
            )
        })?,
    };
    Ok((chain, key))
}

/// A type's format; `None` for a type poolcurl does not read. Case does not matter, as in curl.
fn format(name: Option<&str>) -> Option<Format> {
    match name.map(str::to_ascii_uppercase).as_deref() {
        None | Some("PEM") => Some(Format::Pem),
        Some("DER") => Some(Format::Der),
        _ => None,
    }
}

/// Exit 58 for a type poolcurl does not read: curl's message for an unknown one, a reason for
/// the ones curl reads through OpenSSL.
fn unsupported(name: Option<&str>, what: &str) -> CurlError {
    let known = name.is_some_and(|n| ["P12", "ENG"].contains(&n.to_ascii_uppercase().as_str()));
    if known {
        CurlError::new(
            58,
            format!("not supported file type {what}: poolcurl reads PEM and DER only"),
        )
    } else {
        CurlError::new(58, format!("not supported file type {what}"))
    }
}

/// A DER private key (PKCS #8, PKCS #1 or SEC1) as PEM with the label its kind takes.
fn der_key(der: &[u8]) -> Option<Vec<u8>> {
    let label = match PrivateKeyDer::try_from(der).ok()? {
        PrivateKeyDer::Pkcs8(_) => "PRIVATE KEY",
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => return None,
    };
    Some(armour(label, der))
}

/// `der` in PEM armour: base64 in lines of 64 between the `label`'s BEGIN and END lines.
fn armour(label: &str, der: &[u8]) -> Vec<u8> {
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_is_armoured_and_other_types_are_refused() {
        let key = rcgen::KeyPair::generate().unwrap();
        let pem = der_key(&key.serialize_der()).unwrap();
        assert_eq!(String::from_utf8(pem).unwrap(), key.serialize_pem());
        assert_eq!(der_key(b"not a key"), None);
        assert_eq!(format(Some("der")), Some(Format::Der));
        assert_eq!(format(None), Some(Format::Pem));
        let path = Path::new("/nonexistent");
        let error = read_identity(path, None, (Some("XYZ"), None)).unwrap_err();
        assert_eq!(
            (error.code(), error.message()),
            (58, "not supported file type 'XYZ' for certificate")
        );
        let error = read_identity(path, None, (None, Some("ENG"))).unwrap_err();
        assert!(
            error.message().contains("PEM and DER only"),
            "{}",
            error.message()
        );
    }
}
