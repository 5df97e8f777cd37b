//! `-w '%{certs}'`: the certificates the server sent on a connection the transfer opened, as
//! text, the way curl 7.88 built on OpenSSL writes them (its `CURLINFO_CERTINFO`, with the
//! `Cert:` label left off the PEM block, as `-w` leaves it off).
//!
//! ```text
//! Subject:CN = localhost
//! Issuer:CN = pool-tests CA 1
//! Version:2
//! Serial Number:6f2e3aa8af38c343924fe3e67297a2bb9fb3e759
//! Signature Algorithm:ecdsa-with-SHA256
//! Public Key Algorithm:id-ecPublicKey
//! X509v3 Subject Alternative Name:DNS:localhost, IP Address:127.0.0.1
//! Start date:Dec  4 02:07:32 2026 GMT
//! Expire date:Dec  6 02:07:32 2026 GMT
//! Signature:30:45:02:21:...
//! -----BEGIN CERTIFICATE-----
//! ...
//! -----END CERTIFICATE-----
//! ```
//!
//! One block per certificate, leaf first. Names are OpenSSL's one-line form (`CN = x, O = y`);
//! the algorithms OpenSSL's long names; an RSA key adds its size, modulus and exponent (other
//! keys nothing, as with curl). Extensions are printed as OpenSSL prints these: subject and
//! authority key identifiers, basic constraints, key usage, extended key usage, subject
//! alternative names, authority information access and CRL distribution points. Any other
//! extension is printed as OpenSSL prints one it has no printer for (its bytes, `.` for those
//! that are not printable), which differs from curl for the few OpenSSL knows and this does
//! not (certificate policies, name constraints, SCTs).

use der::asn1::{Ia5StringRef, UintRef};
use der::{Decode, Reader, SliceReader};
use x509_cert::Certificate;
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityInfoAccessSyntax, AuthorityKeyIdentifier, BasicConstraints, CertificatePolicies,
    CrlDistributionPoints, ExtendedKeyUsage, KeyUsage, SubjectAltName, SubjectKeyIdentifier,
};
use x509_cert::name::Name;

use super::server_cert::{ONELINE_NAME, date, name_line, short_name};

/// The text of every certificate of `chain` (DER, leaf first), one block after another.
pub(crate) fn chain_text<C: AsRef<[u8]>>(chain: &[C]) -> String {
    let mut text = String::new();
    for der in chain {
        if let Ok(cert) = Certificate::from_der(der.as_ref()) {
            for (label, value) in fields(&cert, der.as_ref()) {
                match label {
                    Some(label) => text.push_str(&format!("{label}:{value}")),
                    None => text.push_str(&value),
                }
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
    }
    text
}

/// The labelled values of one certificate, in curl's order; the PEM block has no label.
fn fields(cert: &Certificate, der: &[u8]) -> Vec<(Option<String>, String)> {
    let tbs = &cert.tbs_certificate;
    let mut out: Vec<(Option<String>, String)> = Vec::new();
    let mut push = |label: &str, value: String| out.push((Some(label.to_owned()), value));
    push("Subject", name_line(&tbs.subject, ONELINE_NAME));
    push("Issuer", name_line(&tbs.issuer, ONELINE_NAME));
    push("Version", format!("{:x}", tbs.version as u8));
    push("Serial Number", serial(tbs.serial_number.as_bytes()));
    push(
        "Signature Algorithm",
        long_name(&cert.signature_algorithm.oid.to_string()),
    );
    let key = &tbs.subject_public_key_info;
    push(
        "Public Key Algorithm",
        long_name(&key.algorithm.oid.to_string()),
    );
    for ext in tbs.extensions.iter().flatten() {
        push(
            &extension_name(&ext.extn_id.to_string()),
            extension_text(ext),
        );
    }
    push(
        "Start date",
        date(tbs.validity.not_before.to_unix_duration()),
    );
    push(
        "Expire date",
        date(tbs.validity.not_after.to_unix_duration()),
    );
    if key.algorithm.oid.to_string() == "1.2.840.113549.1.1.1" {
        if let Some((n, e)) = key.subject_public_key.as_bytes().and_then(rsa_key) {
            push("RSA Public Key", bits(n).to_string());
            push("rsa(n)", bn_hex(n));
            push("rsa(e)", bn_hex(e));
        }
    }
    let signature = cert.signature.raw_bytes();
    push(
        "Signature",
        signature.iter().map(|b| format!("{b:02x}:")).collect(),
    );
    // PEM with LF line ends and 64 characters a line, as OpenSSL writes it.
    let pem = der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, der);
    out.push((None, pem.unwrap_or_default()));
    out
}

/// A serial number as curl prints it: the magnitude's bytes in lower-case hex.
fn serial(content: &[u8]) -> String {
    // DER puts a 0 byte before a positive number whose first bit is set; OpenSSL keeps the
    // magnitude only.
    let magnitude = match content {
        [0, rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    magnitude.iter().map(|b| format!("{b:02x}")).collect()
}

/// OpenSSL's long name for an algorithm; the dotted OID for one it has none for here.
fn long_name(oid: &str) -> String {
    let name = match oid {
        "1.2.840.113549.1.1.1" => "rsaEncryption",
        "1.2.840.113549.1.1.5" => "sha1WithRSAEncryption",
        "1.2.840.113549.1.1.10" => "rsassaPss",
        "1.2.840.113549.1.1.11" => "sha256WithRSAEncryption",
        "1.2.840.113549.1.1.12" => "sha384WithRSAEncryption",
        "1.2.840.113549.1.1.13" => "sha512WithRSAEncryption",
        "1.2.840.10045.2.1" => "id-ecPublicKey",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "ED25519",
        "1.3.101.113" => "ED448",
        other => return other.to_owned(),
    };
    name.to_owned()
}

/// OpenSSL's long name for an extension; the dotted OID for one it has none for here.
fn extension_name(oid: &str) -> String {
    let name = match oid {
        "2.5.29.14" => "X509v3 Subject Key Identifier",
        "2.5.29.15" => "X509v3 Key Usage",
        "2.5.29.17" => "X509v3 Subject Alternative Name",
        "2.5.29.18" => "X509v3 Issuer Alternative Name",
        "2.5.29.19" => "X509v3 Basic Constraints",
        "2.5.29.30" => "X509v3 Name Constraints",
        "2.5.29.31" => "X509v3 CRL Distribution Points",
        "2.5.29.32" => "X509v3 Certificate Policies",
        "2.5.29.35" => "X509v3 Authority Key Identifier",
        "2.5.29.37" => "X509v3 Extended Key Usage",
        "1.3.6.1.5.5.7.1.1" => "Authority Information Access",
        "1.3.6.1.5.5.7.1.24" => "TLS Feature",
        "1.3.6.1.4.1.11129.2.4.2" => "CT Precertificate SCTs",
        "2.16.840.1.113730.1.13" => "Netscape Comment",
        other => return other.to_owned(),
    };
    name.to_owned()
}

/// An extension's value as OpenSSL's `X509V3_EXT_print` prints it, for the extensions read
/// here; any other as `ASN1_STRING_print` prints its bytes.
fn extension_text(ext: &Extension) -> String {
    let bytes = ext.extn_value.as_bytes();
    let known = match ext.extn_id.to_string().as_str() {
        "2.5.29.14" => SubjectKeyIdentifier::from_der(bytes)
            .ok()
            .map(|ski| colon_hex(ski.0.as_bytes())),
        "2.5.29.35" => AuthorityKeyIdentifier::from_der(bytes)
            .ok()
            .map(|aki| authority_key_id(&aki)),
        "2.5.29.19" => BasicConstraints::from_der(bytes).ok().map(|bc| {
            let mut parts = vec![format!("CA:{}", if bc.ca { "TRUE" } else { "FALSE" })];
            parts.extend(bc.path_len_constraint.map(|n| format!("pathlen:{n}")));
            parts.join(", ")
        }),
        "2.5.29.15" => KeyUsage::from_der(bytes).ok().map(|ku| key_usage(&ku)),
        "2.5.29.37" => ExtendedKeyUsage::from_der(bytes).ok().map(|eku| {
            eku.0
                .iter()
                .map(|oid| purpose(&oid.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        "2.5.29.17" => SubjectAltName::from_der(bytes).ok().map(|san| {
            san.0
                .iter()
                .map(general_name)
                .collect::<Vec<_>>()
                .join(", ")
        }),
        "1.3.6.1.5.5.7.1.1" => AuthorityInfoAccessSyntax::from_der(bytes).ok().map(|aia| {
            aia.0
                .iter()
                .map(|access| {
                    let method = match access.access_method.to_string().as_str() {
                        "1.3.6.1.5.5.7.48.1" => "OCSP".to_owned(),
                        "1.3.6.1.5.5.7.48.2" => "CA Issuers".to_owned(),
                        other => other.to_owned(),
                    };
                    format!("{method} - {}\n", general_name(&access.access_location))
                })
                .collect()
        }),
        "2.5.29.31" => CrlDistributionPoints::from_der(bytes)
            .ok()
            .map(|points| crl_points(&points)),
        "2.5.29.32" => CertificatePolicies::from_der(bytes)
            .ok()
            .map(|policies| certificate_policies(&policies)),
        // Netscape Comment: the text.
        "2.16.840.1.113730.1.13" => Ia5StringRef::from_der(bytes)
            .ok()
            .map(|text| text.as_str().to_owned()),
        _ => None,
    };
    known.unwrap_or_else(|| printable(bytes))
}

/// An authority key identifier: the key's identifier alone, or each part labelled.
fn authority_key_id(aki: &AuthorityKeyIdentifier) -> String {
    let key_id = aki
        .key_identifier
        .as_ref()
        .map(|id| colon_hex(id.as_bytes()));
    let others = aki.authority_cert_issuer.is_some() || aki.authority_cert_serial_number.is_some();
    if !others {
        return key_id.unwrap_or_default();
    }
    let mut lines = Vec::new();
    if let Some(id) = key_id {
        lines.push(format!("keyid:{id}"));
    }
    for name in aki.authority_cert_issuer.iter().flatten() {
        lines.push(general_name(name));
    }
    if let Some(serial) = &aki.authority_cert_serial_number {
        lines.push(format!("serial:{}", colon_hex(serial.as_bytes())));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Key usage bits by OpenSSL's names, in bit order.
fn key_usage(ku: &KeyUsage) -> String {
    const NAMES: [&str; 9] = [
        "Digital Signature",
        "Non Repudiation",
        "Key Encipherment",
        "Data Encipherment",
        "Key Agreement",
        "Certificate Sign",
        "CRL Sign",
        "Encipher Only",
        "Decipher Only",
    ];
    let bits = ku.0.bits();
    NAMES
        .iter()
        .enumerate()
        .filter(|&(i, _)| bits & (1 << i) != 0)
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// An extended key usage purpose by OpenSSL's long name.
fn purpose(oid: &str) -> String {
    let name = match oid {
        "1.3.6.1.5.5.7.3.1" => "TLS Web Server Authentication",
        "1.3.6.1.5.5.7.3.2" => "TLS Web Client Authentication",
        "1.3.6.1.5.5.7.3.3" => "Code Signing",
        "1.3.6.1.5.5.7.3.4" => "E-mail Protection",
        "1.3.6.1.5.5.7.3.8" => "Time Stamping",
        "1.3.6.1.5.5.7.3.9" => "OCSP Signing",
        "2.5.29.37.0" => "Any Extended Key Usage",
        other => return other.to_owned(),
    };
    name.to_owned()
}

/// A general name as OpenSSL 3.0 prints one: `DNS:x`, `IP Address:1.2.3.4`, `URI:x`, ...
fn general_name(name: &GeneralName) -> String {
    match name {
        GeneralName::DnsName(dns) => format!("DNS:{}", dns.as_str()),
        GeneralName::Rfc822Name(mail) => format!("email:{}", mail.as_str()),
        GeneralName::UniformResourceIdentifier(uri) => format!("URI:{}", uri.as_str()),
        GeneralName::IpAddress(bytes) => {
            let bytes = bytes.as_bytes();
            let text = match bytes.len() {
                4 => bytes
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join("."),
                16 => bytes
                    .chunks(2)
                    .map(|pair| format!("{:X}", u16::from_be_bytes([pair[0], pair[1]])))
                    .collect::<Vec<_>>()
                    .join(":"),
                _ => "<invalid>".to_owned(),
            };
            format!("IP Address:{text}")
        }
        GeneralName::DirectoryName(dir) => format!("DirName:{}", slash_name(dir)),
        GeneralName::RegisteredId(oid) => format!("Registered ID:{oid}"),
        GeneralName::OtherName(_) => "othername:<unsupported>".to_owned(),
        GeneralName::EdiPartyName(_) => "EdiPartyName:<unsupported>".to_owned(),
    }
}

/// A name in OpenSSL's old one-line form: `/C=US/O=x/CN=y`.
fn slash_name(name: &Name) -> String {
    name.0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .map(|atv| {
            let value = String::from_utf8_lossy(atv.value.value());
            format!("/{}={value}", short_name(&atv.oid.to_string()))
        })
        .collect()
}

/// CRL distribution points as OpenSSL prints them, one block per point.
fn crl_points(points: &CrlDistributionPoints) -> String {
    use x509_cert::ext::pkix::name::DistributionPointName;
    let mut text = String::new();
    for point in &points.0 {
        match &point.distribution_point {
            Some(DistributionPointName::FullName(names)) => {
                text.push_str("Full Name:\n");
                for name in names {
                    text.push_str(&format!("  {}\n", general_name(name)));
                }
            }
            Some(DistributionPointName::NameRelativeToCRLIssuer(_)) => {
                text.push_str("Relative Name:\n");
            }
            None => {}
        }
    }
    text
}

/// Certificate policies as OpenSSL prints them: `Policy: OID` each, a CPS pointer under its
/// policy (other qualifiers are left out).
fn certificate_policies(policies: &CertificatePolicies) -> String {
    policies
        .0
        .iter()
        .map(|policy| {
            let id = policy.policy_identifier.to_string();
            let name = if id == "2.5.29.32.0" {
                "X509v3 Any Policy".to_owned()
            } else {
                id
            };
            let mut text = format!("Policy: {name}");
            for qualifier in policy.policy_qualifiers.iter().flatten() {
                // id-qt-cps: the pointer is an IA5String.
                if qualifier.policy_qualifier_id.to_string() == "1.3.6.1.5.5.7.2.1" {
                    if let Some(cps) = qualifier
                        .qualifier
                        .as_ref()
                        .and_then(|any| any.decode_as::<Ia5StringRef<'_>>().ok())
                    {
                        text.push_str(&format!("\n  CPS: {}", cps.as_str()));
                    }
                }
            }
            text
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `ASN1_STRING_print`: the bytes, with `.` for those that are not printable.
fn printable(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b' '..=b'~' | b'\n' | b'\r' => char::from(b),
            _ => '.',
        })
        .collect()
}

/// Upper-case hex bytes joined by colons, as OpenSSL prints key identifiers.
fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// An RSA public key's modulus and exponent (big-endian magnitudes).
fn rsa_key(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut reader = SliceReader::new(der).ok()?;
    reader
        .sequence(|inner| {
            let n = UintRef::decode(inner)?;
            let e = UintRef::decode(inner)?;
            Ok((n.as_bytes(), e.as_bytes()))
        })
        .ok()
}

/// The number of bits of a big-endian magnitude.
fn bits(magnitude: &[u8]) -> usize {
    let trimmed: Vec<u8> = magnitude.iter().copied().skip_while(|&b| b == 0).collect();
    match trimmed.first() {
        Some(first) => trimmed.len() * 8 - first.leading_zeros() as usize,
        None => 0,
    }
}

/// `BN_print`: upper-case hex without leading zeros (`0` for zero).
fn bn_hex(magnitude: &[u8]) -> String {
    let hex: String = magnitude.iter().map(|b| format!("{b:02X}")).collect();
    let trimmed = hex.trim_start_matches('0');
    if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    /// The certificates of a PEM file.
    fn chain(pem: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap()
    }

    // Each `.txt` is what curl 7.88.1 (OpenSSL 3.0) wrote for `-w '%{certs}'` against an
    // `openssl s_server` presenting the `.pem` next to it: an ECDSA certificate with most of
    // the extensions OpenSSL prints (AIA, CRL points, policies, an issuer-and-serial AKI, an
    // IPv6 address, a quoted name), and an RSA leaf with a CPS, anyPolicy and an extension
    // OpenSSL does not know, sent with its CA.
    #[test]
    fn an_ecdsa_certificate_with_many_extensions_reads_as_curl_wrote_it() {
        let text = chain_text(&chain(include_str!("testdata/certinfo-ec.pem")));
        assert_eq!(text, include_str!("testdata/certinfo-ec.txt"));
    }

    #[test]
    fn an_rsa_chain_reads_as_curl_wrote_it() {
        let text = chain_text(&chain(include_str!("testdata/certinfo-rsa-chain.pem")));
        assert_eq!(text, include_str!("testdata/certinfo-rsa-chain.txt"));
    }

    #[test]
    fn numbers_as_openssl_prints_them() {
        assert_eq!(serial(&[0x00, 0x9f, 0x01]), "9f01");
        assert_eq!(serial(&[0x01]), "01");
        assert_eq!(serial(&[0x00]), "00");
        assert_eq!(bn_hex(&[0x01, 0x00, 0x01]), "10001");
        assert_eq!(bn_hex(&[0x00]), "0");
        assert_eq!(bits(&[0x00, 0x80, 0x00]), 16);
        assert_eq!(bits(&[0x01, 0x00, 0x01]), 17);
        assert_eq!(printable(b"a\x00b\n"), "a.b\n");
    }

    #[test]
    fn nothing_for_what_does_not_parse() {
        assert_eq!(chain_text(&[b"not a certificate".as_slice()]), "");
    }
}
