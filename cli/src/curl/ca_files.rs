//! The files that say whom to trust: `--cacert` and `--proxy-cacert` (one PEM bundle),
//! `--crlfile` (revocations) and `--capath` / `--proxy-capath` (directories of OpenSSL hash
//! links), read as curl reads them and with curl's exit codes for files that cannot be used.
//!
//! What this does not do: parse certificates (the pool does, when it is built; a bundle that
//! does not parse is exit 77 there, see [`super::setup::build_error`]).

use std::path::Path;

use rustls_pki_types::CertificateRevocationListDer;
use rustls_pki_types::pem::PemObject as _;

use super::exit::CurlError;

/// `--cacert FILE` (or `--proxy-cacert`), read.
///
/// # Errors
///
/// Exit 77 when the file cannot be read.
pub(super) fn read_ca_file(path: &Path) -> Result<Vec<u8>, CurlError> {
    std::fs::read(path).map_err(|e| CurlError::ca_file(&path.display().to_string(), e))
}

/// `--crlfile FILE`, read and checked here so that a bad file is its own exit code (82)
/// rather than one of the pool's TLS settings.
///
/// # Errors
///
/// Exit 82 when the file cannot be read or holds no CRL that parses.
pub(super) fn read_crl_file(path: &Path) -> Result<Vec<u8>, CurlError> {
    let shown = path.display().to_string();
    let pem = std::fs::read(path).map_err(|e| CurlError::crl_file(&shown, e))?;
    let crls = CertificateRevocationListDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CurlError::crl_file(&shown, e))?;
    if crls.is_empty() {
        return Err(CurlError::crl_file(&shown, "no CRL in the file"));
    }
    Ok(pem)
}

/// `--capath DIR[:DIR...]`: the PEM certificate files of each directory named as OpenSSL
/// looks them up, `HASH.N` (8 hex digits, a dot, a number: what `openssl rehash` and
/// `c_rehash` make), in name order; curl (OpenSSL) reads no other file there, so a
/// `cert.pem` beside them is not trusted. (The hash in the name is not checked against the
/// certificate's subject.) A directory that cannot be read adds nothing, as with curl, whose
/// handshake then fails verification (exit 60) if nothing else trusts the server; a file that
/// looks like PEM but does not parse is exit 77 when the pool is built (curl: 35 when its
/// handshake reaches it).
pub(super) fn ca_directories(dirs: &str) -> Vec<Vec<u8>> {
    let mut pems = Vec::new();
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_hash_name)
            })
            .collect();
        paths.sort();
        for path in paths {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if bytes
                .windows(CERTIFICATE_MARK.len())
                .any(|w| w == CERTIFICATE_MARK)
            {
                pems.push(bytes);
            }
        }
    }
    pems
}

/// Whether `name` is an OpenSSL hash link's (`5ed36f99.0`).
fn is_hash_name(name: &str) -> bool {
    name.split_once('.').is_some_and(|(hash, n)| {
        hash.len() == 8
            && hash.bytes().all(|b| b.is_ascii_hexdigit())
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// What a PEM certificate starts with.
const CERTIFICATE_MARK: &[u8] = b"-----BEGIN CERTIFICATE-----";
