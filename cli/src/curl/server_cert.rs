//! `-v`'s account of the server's certificate after a new TLS connection, as curl 7.88 built
//! on OpenSSL words it:
//!
//! ```text
//! * Server certificate:
//! *  subject: CN=localhost
//! *  start date: Dec  3 22:08:45 2026 GMT
//! *  expire date: Dec  5 22:08:45 2026 GMT
//! *  subjectAltName: host "localhost" matched cert's "localhost"
//! *  issuer: CN=pool-tests CA 1
//! *  SSL certificate verify ok.
//! ```
//!
//! Names are printed as OpenSSL's one-line form with curl's separators (`C=US; O=Org; CN=x`,
//! short names where OpenSSL has them, the dotted OID otherwise); dates as OpenSSL prints ASN.1
//! times. The `subjectAltName` line names the entry the host matched, and is left out under
//! `-k`, where curl checks no name. Under `-k` a certificate that does not verify says why,
//! with OpenSSL's code, and that the transfer continues. The certificate comes from the pool
//! (`Builder::tls_keep_peer_certificates`, turned on for `-v` only).

use std::net::IpAddr;

use der::Decode;
use x509_cert::Certificate;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::name::Name;

/// The lines, without curl's `* `, for the server certificate `der` of a connection to `host`
/// whose check found `check`; `insecure` for `-k`. Nothing when the certificate does not parse.
pub(crate) fn lines(
    der: &[u8],
    host: &str,
    check: pool::CertificateCheck,
    insecure: bool,
) -> Vec<String> {
    let Ok(cert) = Certificate::from_der(der) else {
        return Vec::new();
    };
    let tbs = &cert.tbs_certificate;
    let mut lines = vec![
        "Server certificate:".to_owned(),
        format!(" subject: {}", name_line(&tbs.subject, VERBOSE_NAME)),
        format!(
            " start date: {}",
            date(tbs.validity.not_before.to_unix_duration())
        ),
        format!(
            " expire date: {}",
            date(tbs.validity.not_after.to_unix_duration())
        ),
    ];
    if !insecure {
        if let Some(matched) = matched_name(&cert, host) {
            lines.push(format!(
                " subjectAltName: host \"{host}\" matched cert's {matched}"
            ));
        }
    }
    lines.push(format!(" issuer: {}", name_line(&tbs.issuer, VERBOSE_NAME)));
    lines.push(verify_line(check));
    lines
}

/// OpenSSL's verdict as curl notes it: `ok`, or under `-k` the failure with OpenSSL's code
/// and text (a name that does not match is curl's own check, which `-k` turns off).
fn verify_line(check: pool::CertificateCheck) -> String {
    use pool::CertificateCheck as C;
    let (code, text) = match check {
        C::Valid | C::WrongName => return " SSL certificate verify ok.".to_owned(),
        C::BadSignature => (7, "certificate signature failure"),
        C::NotYetValid => (9, "certificate is not yet valid"),
        C::Expired => (10, "certificate has expired"),
        C::SelfSigned => (18, "self-signed certificate"),
        C::SelfSignedInChain => (19, "self-signed certificate in certificate chain"),
        C::UnknownIssuer => (20, "unable to get local issuer certificate"),
        C::Revoked => (23, "certificate revoked"),
        _ => (1, "unspecified certificate verification error"),
    };
    format!(" SSL certificate verify result: {text} ({code}), continuing anyway.")
}

/// The entry of the certificate's subjectAltName that `host` matched, as curl quotes it: the
/// DNS name in quotes, or `IP address!` for an address.
fn matched_name(cert: &Certificate, host: &str) -> Option<String> {
    let (_, names) = cert
        .tbs_certificate
        .get::<SubjectAltName>()
        .ok()
        .flatten()?;
    let ip = host.parse::<IpAddr>().ok();
    names.0.iter().find_map(|name| match (name, ip) {
        (GeneralName::IpAddress(bytes), Some(ip)) => {
            let octets = match ip {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => v6.octets().to_vec(),
            };
            (bytes.as_bytes() == octets.as_slice()).then(|| "IP address!".to_owned())
        }
        (GeneralName::DnsName(dns), None) => {
            let dns = dns.as_str();
            dns_matches(dns, host).then(|| format!("\"{dns}\""))
        }
        _ => None,
    })
}

/// Whether the DNS name `pattern` (maybe `*.` and a domain) names `host`, in any case.
fn dns_matches(pattern: &str, host: &str) -> bool {
    if pattern.eq_ignore_ascii_case(host) {
        return true;
    }
    match (pattern.strip_prefix("*."), host.split_once('.')) {
        (Some(domain), Some((label, rest))) => {
            !label.is_empty() && domain.eq_ignore_ascii_case(rest)
        }
        _ => false,
    }
}

/// How a name is laid out in one line by OpenSSL's `X509_NAME_print_ex`, with the flags curl
/// passes for `-v` ([`VERBOSE_NAME`]) or for `%{certs}` ([`ONELINE_NAME`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NameStyle {
    /// Between RDNs (the values of one RDN are joined by ` + `).
    rdn: &'static str,
    /// Between an attribute's short name and its value.
    equals: &'static str,
    /// Whether a value with a character RFC 2253 escapes is put in quotes.
    quote: bool,
}

/// `-v`'s names: `C=US; O=Org, Inc; CN=x` (`XN_FLAG_SEP_SPLUS_SPC`).
pub(crate) const VERBOSE_NAME: NameStyle = NameStyle {
    rdn: "; ",
    equals: "=",
    quote: false,
};

/// `%{certs}`'s names: `C = US, O = "Org, Inc", CN = x` (`XN_FLAG_ONELINE`).
pub(crate) const ONELINE_NAME: NameStyle = NameStyle {
    rdn: ", ",
    equals: " = ",
    quote: true,
};

/// A name laid out in one line as `style` says, each attribute `SHORTNAME` and its value.
pub(crate) fn name_line(name: &Name, style: NameStyle) -> String {
    name.0
        .iter()
        .map(|rdn| {
            rdn.0
                .iter()
                .map(|atv| {
                    let value = String::from_utf8_lossy(atv.value.value());
                    let special = value.contains([',', '+', '"', '\\', '<', '>', ';']);
                    let short = short_name(&atv.oid.to_string());
                    if style.quote && special {
                        format!("{short}{}\"{value}\"", style.equals)
                    } else {
                        format!("{short}{}{value}", style.equals)
                    }
                })
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect::<Vec<_>>()
        .join(style.rdn)
}

/// OpenSSL's short name for an attribute type; the dotted OID for one it has none for.
pub(crate) fn short_name(oid: &str) -> String {
    let name = match oid {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.12" => "title",
        "2.5.4.15" => "businessCategory",
        "2.5.4.17" => "postalCode",
        "2.5.4.42" => "GN",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        "1.3.6.1.4.1.311.60.2.1.1" => "jurisdictionL",
        "1.3.6.1.4.1.311.60.2.1.2" => "jurisdictionST",
        "1.3.6.1.4.1.311.60.2.1.3" => "jurisdictionC",
        other => return other.to_owned(),
    };
    name.to_owned()
}

/// A time as OpenSSL prints an ASN.1 time: `Dec  3 22:08:45 2026 GMT`.
pub(crate) fn date(since_epoch: std::time::Duration) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp(since_epoch.as_secs() as i64) else {
        return String::new();
    };
    format!(
        "{} {:2} {:02}:{:02}:{:02} {} GMT",
        MONTHS[usize::from(u8::from(at.month())) - 1],
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.year()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_reads_as_curl_prints_it() {
        let mut params = rcgen::CertificateParams::new(vec!["*.example.test".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CountryName, "US");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "www.example.test");
        params.not_before = rcgen::date_time_ymd(2026, 12, 3);
        params.not_after = rcgen::date_time_ymd(2027, 1, 15);
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let lines = lines(
            cert.der(),
            "a.example.test",
            pool::CertificateCheck::Valid,
            false,
        );
        assert_eq!(
            lines,
            [
                "Server certificate:",
                " subject: C=US; CN=www.example.test",
                " start date: Dec  3 00:00:00 2026 GMT",
                " expire date: Jan 15 00:00:00 2027 GMT",
                " subjectAltName: host \"a.example.test\" matched cert's \"*.example.test\"",
                " issuer: C=US; CN=www.example.test",
                " SSL certificate verify ok.",
            ]
        );
        let by_ip = lines_for(cert.der(), "127.0.0.1");
        assert!(by_ip.contains(
            &" subjectAltName: host \"127.0.0.1\" matched cert's IP address!".to_owned()
        ));
        let insecure = super::lines(
            cert.der(),
            "a.example.test",
            pool::CertificateCheck::SelfSigned,
            true,
        );
        assert!(!insecure.iter().any(|l| l.contains("subjectAltName")));
        assert_eq!(
            insecure.last().unwrap(),
            " SSL certificate verify result: self-signed certificate (18), continuing anyway."
        );
        assert!(!dns_matches("*.example.test", "a.b.example.test"));
        assert!(lines_for(b"not a certificate", "x").is_empty());
    }

    fn lines_for(der: &[u8], host: &str) -> Vec<String> {
        lines(der, host, pool::CertificateCheck::Valid, false)
    }
}
