//! `--cert` / `--key` (and the proxy's) read from their files in the formats curl's
//! `--cert-type` and `--key-type` name: PEM (the default) or DER. The pool takes PEM, so a
//! DER certificate or key is wrapped in PEM armour here; the pool then checks that the key
//! matches the certificate. curl's other types (`P12`, `ENG`) need OpenSSL and are refused
//! with exit 58, as an unknown type is.
//!
//! A PEM key encrypted with a passphrase (`ENCRYPTED PRIVATE KEY`, PKCS #8 with PBES2: PBKDF2
//! or scrypt, AES-CBC or triple DES, what `openssl pkcs8 -topk8` and `genpkey`/`req` write) is
//! decrypted here with `--pass`, or with the password `--cert FILE:PASSWORD` gives (curl's
//! split: `\:` and `\\` stand for `:` and `\` in the file name), through the `pkcs8` crate. A
//! missing or wrong passphrase is exit 58, as in curl once OpenSSL's prompt gets nothing. What
//! this module does not do: the traditional OpenSSL encryption (`Proc-Type: 4,ENCRYPTED`
//! headers, MD5-derived keys) and PKCS #8's older PBES1 and PKCS #12 schemes (`-v1
//! PBE-SHA1-3DES`), which curl reads through OpenSSL; such a key is exit 58 with a note. A
//! passphrase given for a key that is not encrypted is ignored, as curl ignores it.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use rustls_pki_types::PrivateKeyDer;

use super::exit::CurlError;

/// The file formats of a client certificate or key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pem,
    Der,
}

/// What the command line says about one client identity (the origin's or the proxy's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdentityFiles<'a> {
    /// `--cert` as given: a file name, with `:PASSWORD` after it when curl's split finds one.
    pub(crate) cert: &'a Path,
    /// `--key`; the certificate's file when absent.
    pub(crate) key: Option<&'a Path>,
    /// `--cert-type`.
    pub(crate) cert_type: Option<&'a str>,
    /// `--key-type`.
    pub(crate) key_type: Option<&'a str>,
    /// `--pass`: the key's passphrase (the one in `--cert` wins when both are given).
    pub(crate) pass: Option<&'a str>,
}

/// `--cert` and its key, PEM: the key file, or the certificate's file when no key is named
/// (curl's "the key may be in the same file"), each read as its type says, the key decrypted
/// when it is an encrypted PKCS #8 one.
///
/// # Errors
///
/// Exit 58 when a file cannot be read, a type is not PEM or DER, a DER file holds no
/// certificate or key, or an encrypted key cannot be decrypted.
pub(crate) fn read_identity(files: &IdentityFiles<'_>) -> Result<(Vec<u8>, Vec<u8>), CurlError> {
    let (cert, cert_pass) = split_cert_argument(files.cert);
    let pass = cert_pass.as_deref().or(files.pass);
    let (cert_type, key_type) = (files.cert_type, files.key_type);
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
    let cert_bytes = read(&cert)?;
    let key_path = files.key.unwrap_or(&cert);
    let key_bytes = match files.key {
        Some(key) => read(key)?,
        None => cert_bytes.clone(),
    };
    let chain = match cert_format {
        Format::Pem => cert_bytes,
        Format::Der => armour("CERTIFICATE", &cert_bytes),
    };
    let key_error = |kind: &str, note: &str| {
        CurlError::new(
            58,
            format!(
                "unable to set private key file: '{}' type {kind}{note}",
                key_path.display()
            ),
        )
    };
    let key = match key_format {
        Format::Pem => match decrypt_pem_key(&key_bytes, pass) {
            Ok(Some(decrypted)) => decrypted,
            Ok(None) => key_bytes,
            Err(note) => return Err(key_error("PEM", note)),
        },
        Format::Der => der_key(&key_bytes).ok_or_else(|| key_error("DER", ""))?,
    };
    Ok((chain, key))
}

/// Exit 58 for an identity the pool found unusable (`part` of it; `error` says why), in
/// curl's words: the certificate could not be loaded, or the private key file could not be
/// set, which is what OpenSSL says of a key that does not match its certificate too.
pub(crate) fn unusable(
    files: &IdentityFiles<'_>,
    part: pool::IdentityPart,
    error: &dyn std::fmt::Display,
) -> CurlError {
    let (cert, _) = split_cert_argument(files.cert);
    match part {
        pool::IdentityPart::Certificate => CurlError::new(
            58,
            format!(
                "could not load PEM client certificate from {}: {error}",
                cert.display()
            ),
        ),
        pool::IdentityPart::Key => {
            let key = files.key.map_or(cert, Path::to_path_buf);
            let kind = files.key_type.unwrap_or("PEM").to_ascii_uppercase();
            CurlError::new(
                58,
                format!(
                    "unable to set private key file: '{}' type {kind}",
                    key.display()
                ),
            )
        }
    }
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

/// curl's split of `--cert`'s argument into a file name and a password: the first `:` that no
/// `\` escapes ends the name; `\:` and `\\` stand for `:` and `\`, and any other `\` is
/// kept. A `pkcs11:` URI, or a name that is not UTF-8, is taken whole.
fn split_cert_argument(arg: &Path) -> (PathBuf, Option<String>) {
    let Some(text) = arg.to_str() else {
        return (arg.to_path_buf(), None);
    };
    if text
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("pkcs11:"))
    {
        return (arg.to_path_buf(), None);
    }
    let mut name = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.clone().next() {
                Some(next @ ('\\' | ':')) => {
                    name.push(next);
                    chars.next();
                }
                _ => name.push('\\'),
            },
            ':' => {
                let password: String = chars.collect();
                return (
                    PathBuf::from(name),
                    Some(password).filter(|p| !p.is_empty()),
                );
            }
            c => name.push(c),
        }
    }
    (PathBuf::from(name), None)
}

/// The key PEM decrypted when it holds an encrypted PKCS #8 block: `Ok(None)` when it holds
/// none (the PEM is used as it is), else the key as a `PRIVATE KEY` PEM, or why it cannot be.
fn decrypt_pem_key(pem: &[u8], pass: Option<&str>) -> Result<Option<Vec<u8>>, &'static str> {
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let text = String::from_utf8_lossy(pem);
    let Some(start) = text.find(BEGIN) else {
        if text.contains("Proc-Type: 4,ENCRYPTED") {
            return Err(
                " (a key in OpenSSL's traditional encrypted format: poolcurl decrypts \
                        PKCS #8 keys; `openssl pkcs8 -topk8` converts it)",
            );
        }
        return Ok(None);
    };
    let end = text[start..]
        .find(END)
        .map(|at| start + at + END.len())
        .ok_or(" (an encrypted key without its END line)")?;
    let (_, der) = pkcs8::der::pem::decode_vec(text[start..end].as_bytes())
        .map_err(|_| " (an encrypted key that is not valid PEM)")?;
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()).map_err(|_| {
        " (a PKCS #8 key encrypted by a scheme poolcurl does not read: it reads PBES2, with \
             PBKDF2 or scrypt, and AES-CBC or triple DES)"
    })?;
    let pass = pass.ok_or(" (the key is encrypted: give its passphrase with --pass)")?;
    let key = encrypted
        .decrypt(pass)
        .map_err(|_| " (the passphrase does not decrypt the key)")?;
    Ok(Some(armour("PRIVATE KEY", key.as_bytes())))
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
        let files = |cert_type, key_type| IdentityFiles {
            cert: path,
            key: None,
            cert_type,
            key_type,
            pass: None,
        };
        let error = read_identity(&files(Some("XYZ"), None)).unwrap_err();
        assert_eq!(
            (error.code(), error.message()),
            (58, "not supported file type 'XYZ' for certificate")
        );
        let error = read_identity(&files(None, Some("ENG"))).unwrap_err();
        assert!(
            error.message().contains("PEM and DER only"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn cert_arguments_split_as_curl_splits_them() {
        let split = |arg: &str| {
            let (name, password) = split_cert_argument(Path::new(arg));
            (name.to_string_lossy().into_owned(), password)
        };
        let some = |p: &str| Some(p.to_owned());
        assert_eq!(split("c.pem"), ("c.pem".into(), None));
        assert_eq!(split("c.pem:s3cret"), ("c.pem".into(), some("s3cret")));
        assert_eq!(split("c.pem:a:b"), ("c.pem".into(), some("a:b")));
        assert_eq!(split("c.pem:"), ("c.pem".into(), None));
        assert_eq!(split(r"dir\:x.pem:pw"), ("dir:x.pem".into(), some("pw")));
        assert_eq!(split(r"a\\b.pem"), (r"a\b.pem".into(), None));
        assert_eq!(split(r"a\b.pem\"), (r"a\b.pem\".into(), None));
        assert_eq!(split("pkcs11:token=x"), ("pkcs11:token=x".into(), None));
    }

    #[test]
    fn encrypted_pkcs8_keys_open_with_their_passphrase_only() {
        let key = rcgen::KeyPair::generate().unwrap();
        let der = key.serialize_der();
        let info = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).unwrap();
        let iv = [7u8; 16];
        let params =
            pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(1000, b"saltsalt", &iv)
                .unwrap();
        let encrypted = info.encrypt_with_params(params, "s3cret").unwrap();
        let pem = format!(
            "junk before\n{}",
            String::from_utf8(armour("ENCRYPTED PRIVATE KEY", encrypted.as_bytes())).unwrap()
        );
        let opened = decrypt_pem_key(pem.as_bytes(), Some("s3cret"))
            .unwrap()
            .unwrap();
        assert_eq!(String::from_utf8(opened).unwrap(), key.serialize_pem());
        let wrong = decrypt_pem_key(pem.as_bytes(), Some("wrong")).unwrap_err();
        assert!(wrong.contains("does not decrypt"), "{wrong}");
        let missing = decrypt_pem_key(pem.as_bytes(), None).unwrap_err();
        assert!(missing.contains("--pass"), "{missing}");
        // A key that is not encrypted goes as it is, a passphrase or not.
        let plain = key.serialize_pem();
        assert_eq!(decrypt_pem_key(plain.as_bytes(), Some("x")), Ok(None));
        let traditional = "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n";
        let refused = decrypt_pem_key(traditional.as_bytes(), Some("x")).unwrap_err();
        assert!(refused.contains("pkcs8 -topk8"), "{refused}");
    }
}
