//! curl's cipher and curve flags read as curl built on OpenSSL reads them, onto the suites and
//! groups the pool (rustls) has.
//!
//! * `--ciphers LIST` is an OpenSSL cipher string for TLS 1.2: names (`ECDHE-RSA-AES128-GCM-SHA256`)
//!   and aliases (`HIGH`, `ECDHE`, `aRSA`, `AESGCM`, `CHACHA20`, ...), joined with `+` to
//!   intersect, prefixed `!` (never), `-` (remove) or `+` (move to the end), separated by `:`,
//!   `,`, `;` or spaces. Only the six TLS 1.2 suites rustls has can be picked; a token that
//!   picks none of them is skipped, as OpenSSL skips names it does not know, and a list that
//!   picks none at all is exit 59 ("failed setting cipher list"), as in curl.
//! * `--tls13-ciphers LIST` names TLS 1.3 suites (`TLS_AES_128_GCM_SHA256`), `:`-separated;
//!   unknown names are skipped and none known is exit 59.
//! * `--curves LIST` names key exchange groups (`X25519`, `P-256`, `prime256v1`, ...), any
//!   case; a name that is no group at all is exit 59 for the whole list, as in curl. Groups
//!   OpenSSL has and rustls does not (`P-521`, `X448`, the `ffdhe` groups) are dropped, and a
//!   list of nothing else is exit 59 too (curl would use them).
//!
//! A list given for one TLS version leaves the other version's suites at OpenSSL's default
//! order. The errors fail `https://` transfers only, as curl's do.

use pool::{CipherSuite, NamedGroup};

use super::exit::CurlError;

/// One TLS 1.2 suite rustls has: OpenSSL's name, rustls's, and the OpenSSL aliases that pick
/// it. In OpenSSL's default order, which aliases add in.
struct Tls12Suite {
    openssl: &'static str,
    suite: CipherSuite,
    aliases: &'static [&'static str],
}

/// Aliases every one of the six suites answers to.
const EVERY: [&str; 13] = [
    "ALL",
    "DEFAULT",
    "HIGH",
    "TLSv1.2",
    "ECDHE",
    "EECDH",
    "kECDHE",
    "kEECDH",
    "ECDH",
    "AEAD",
    "FIPS",
    "SUITEB128",
    "SUITEB192",
];

const TLS12: [Tls12Suite; 6] = [
    Tls12Suite {
        openssl: "ECDHE-ECDSA-AES256-GCM-SHA384",
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        aliases: &["ECDSA", "aECDSA", "AES", "AES256", "AESGCM"],
    },
    Tls12Suite {
        openssl: "ECDHE-RSA-AES256-GCM-SHA384",
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        aliases: &["aRSA", "AES", "AES256", "AESGCM"],
    },
    Tls12Suite {
        openssl: "ECDHE-ECDSA-CHACHA20-POLY1305",
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        aliases: &["ECDSA", "aECDSA", "CHACHA20"],
    },
    Tls12Suite {
        openssl: "ECDHE-RSA-CHACHA20-POLY1305",
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        aliases: &["aRSA", "CHACHA20"],
    },
    Tls12Suite {
        openssl: "ECDHE-ECDSA-AES128-GCM-SHA256",
        suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        aliases: &["ECDSA", "aECDSA", "AES", "AES128", "AESGCM"],
    },
    Tls12Suite {
        openssl: "ECDHE-RSA-AES128-GCM-SHA256",
        suite: CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        aliases: &["aRSA", "AES", "AES128", "AESGCM"],
    },
];

/// The TLS 1.3 suites rustls has, by their standard (and OpenSSL's) names, in OpenSSL's
/// default order.
const TLS13: [(&str, CipherSuite); 3] = [
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
];

/// The groups rustls has, by every name OpenSSL gives them.
const GROUPS: [(&[&str], NamedGroup); 3] = [
    (&["X25519"], NamedGroup::X25519),
    (&["P-256", "prime256v1", "secp256r1"], NamedGroup::secp256r1),
    (&["P-384", "secp384r1"], NamedGroup::secp384r1),
];

/// Groups OpenSSL has that rustls does not: `--curves` drops them rather than refusing the list.
const GROUPS_WITHOUT: [&str; 15] = [
    "P-521",
    "secp521r1",
    "X448",
    "ffdhe2048",
    "ffdhe3072",
    "ffdhe4096",
    "ffdhe6144",
    "ffdhe8192",
    "P-224",
    "secp224r1",
    "secp256k1",
    "P-192",
    "brainpoolP256r1",
    "brainpoolP384r1",
    "brainpoolP512r1",
];

/// The suites to offer for `--ciphers` (TLS 1.2) and `--tls13-ciphers`; empty when neither is
/// given (the pool's own default).
///
/// # Errors
///
/// Exit 59 when a list picks no suite rustls has.
pub(crate) fn suites(
    tls12: Option<&str>,
    tls13: Option<&str>,
) -> Result<Vec<CipherSuite>, CurlError> {
    if tls12.is_none() && tls13.is_none() {
        return Ok(Vec::new());
    }
    let mut suites = match tls13 {
        Some(list) => tls13_suites(list)?,
        None => TLS13.iter().map(|(_, suite)| *suite).collect(),
    };
    match tls12 {
        Some(list) => suites.extend(tls12_suites(list)?),
        None => suites.extend(TLS12.iter().map(|s| s.suite)),
    }
    Ok(suites)
}

/// `--ciphers`: an OpenSSL cipher string over the TLS 1.2 suites rustls has.
fn tls12_suites(list: &str) -> Result<Vec<CipherSuite>, CurlError> {
    let mut active: Vec<usize> = Vec::new();
    let mut never: Vec<usize> = Vec::new();
    let tokens = list
        .split([':', ',', ';', ' '])
        .filter(|t| !t.is_empty() && !t.starts_with('@'));
    for token in tokens {
        let (op, rule) = match token.as_bytes()[0] {
            op @ (b'!' | b'-' | b'+') => (op, &token[1..]),
            _ => (b'=', token),
        };
        let picked = (0..TLS12.len()).filter(|&i| {
            let suite = &TLS12[i];
            rule.split('+').all(|part| {
                part == suite.openssl || EVERY.contains(&part) || suite.aliases.contains(&part)
            })
        });
        for i in picked.collect::<Vec<_>>() {
            match op {
                b'!' => {
                    active.retain(|&a| a != i);
                    never.push(i);
                }
                b'-' => active.retain(|&a| a != i),
                b'+' => {
                    if let Some(at) = active.iter().position(|&a| a == i) {
                        active.remove(at);
                        active.push(i);
                    }
                }
                _ if !active.contains(&i) && !never.contains(&i) => active.push(i),
                _ => {}
            }
        }
    }
    if active.is_empty() {
        return Err(CurlError::new(
            59,
            format!("failed setting cipher list: {list}"),
        ));
    }
    Ok(active.into_iter().map(|i| TLS12[i].suite).collect())
}

/// `--tls13-ciphers`: TLS 1.3 suite names; unknown ones are skipped.
fn tls13_suites(list: &str) -> Result<Vec<CipherSuite>, CurlError> {
    let mut suites = Vec::new();
    for name in list.split(':') {
        if let Some((_, suite)) = TLS13.iter().find(|(known, _)| *known == name) {
            if !suites.contains(suite) {
                suites.push(*suite);
            }
        }
    }
    if suites.is_empty() && !list.is_empty() {
        return Err(CurlError::new(
            59,
            format!("failed setting TLS 1.3 cipher suite: {list}"),
        ));
    }
    Ok(suites)
}

/// `--curves`: the groups rustls has, in the list's order.
///
/// # Errors
///
/// Exit 59 for a name that is no group, or a list of groups rustls does not have.
pub(crate) fn curves(list: &str) -> Result<Vec<NamedGroup>, CurlError> {
    let failed =
        |why: &str| CurlError::new(59, format!("failed setting curves list: '{list}'{why}"));
    let mut groups = Vec::new();
    for name in list.split(':') {
        let known = GROUPS
            .iter()
            .find(|(names, _)| names.iter().any(|n| n.eq_ignore_ascii_case(name)));
        match known {
            Some((_, group)) if !groups.contains(group) => groups.push(*group),
            Some(_) => {}
            None if GROUPS_WITHOUT.iter().any(|n| n.eq_ignore_ascii_case(name)) => {}
            None => return Err(failed("")),
        }
    }
    if groups.is_empty() {
        return Err(failed(" (poolcurl's TLS offers X25519, P-256 and P-384)"));
    }
    Ok(groups)
}

/// How curl (OpenSSL) names the cipher suite rustls calls `rustls_name`, for `-v`.
pub(crate) fn openssl_name(rustls_name: &str) -> &str {
    let tls13 = TLS13
        .iter()
        .find(|(_, suite)| suite.as_str() == Some(rustls_name))
        .map(|(name, _)| *name);
    let tls12 = || {
        TLS12
            .iter()
            .find(|s| s.suite.as_str() == Some(rustls_name))
            .map(|s| s.openssl)
    };
    tls13.or_else(tls12).unwrap_or(rustls_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<&'static str> {
        let named = |suite| TLS12.iter().find(|s| s.suite == suite).unwrap().openssl;
        tls12_suites(list).unwrap().into_iter().map(named).collect()
    }

    #[test]
    fn cipher_strings_pick_as_openssl_does() {
        // Each answer is `openssl ciphers -s -tls1_2 LIST` (OpenSSL 3.0), kept to what rustls has.
        assert_eq!(
            names("ECDHE-RSA-AES128-GCM-SHA256 ECDHE-RSA-AES256-GCM-SHA384"),
            ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"]
        );
        assert_eq!(
            names("ECDHE+AESGCM:!AES256"),
            [
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256"
            ]
        );
        assert_eq!(
            names("DEFAULT:-AES256:-AESCCM:-ARIA"),
            [
                "ECDHE-ECDSA-CHACHA20-POLY1305",
                "ECDHE-RSA-CHACHA20-POLY1305",
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256"
            ]
        );
        assert_eq!(
            names("HIGH:!aNULL:!MD5:+CHACHA20:!ECDSA"),
            [
                "ECDHE-RSA-AES256-GCM-SHA384",
                "ECDHE-RSA-AES128-GCM-SHA256",
                "ECDHE-RSA-CHACHA20-POLY1305"
            ]
        );
        assert_eq!(
            names("AES128-SHA:ECDHE-RSA-AES256-GCM-SHA384,BOGUS"),
            ["ECDHE-RSA-AES256-GCM-SHA384"]
        );
        for none in ["BOGUS", "", "AES128-SHA", "!ALL:HIGH", "aNULL"] {
            let error = tls12_suites(none).unwrap_err();
            assert_eq!(error.code(), 59, "{none}");
            assert_eq!(
                error.message(),
                format!("failed setting cipher list: {none}")
            );
        }
    }

    #[test]
    fn tls13_names_skip_unknown_ones_and_keep_the_other_version_whole() {
        let only = suites(None, Some("TLS_CHACHA20_POLY1305_SHA256:BOGUS")).unwrap();
        assert_eq!(only[0], CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
        assert_eq!(only.len(), 1 + TLS12.len());
        let error = suites(None, Some("TLS_AES_128_CCM_SHA256")).unwrap_err();
        assert_eq!(
            (error.code(), error.message()),
            (
                59,
                "failed setting TLS 1.3 cipher suite: TLS_AES_128_CCM_SHA256"
            )
        );
        assert_eq!(suites(None, None).unwrap(), []);
        let tls12_only = suites(Some("ECDHE-RSA-AES128-GCM-SHA256"), None).unwrap();
        assert_eq!(tls12_only.len(), TLS13.len() + 1);
    }

    #[test]
    fn curves_are_named_as_openssl_names_them() {
        assert_eq!(
            curves("prime256v1:x25519:P-384:P-256").unwrap(),
            [
                NamedGroup::secp256r1,
                NamedGroup::X25519,
                NamedGroup::secp384r1
            ]
        );
        assert_eq!(curves("X448:P-384").unwrap(), [NamedGroup::secp384r1]);
        let error = curves("prime256v1:bogus").unwrap_err();
        assert_eq!(
            (error.code(), error.message()),
            (59, "failed setting curves list: 'prime256v1:bogus'")
        );
        assert_eq!(curves("").unwrap_err().code(), 59);
        assert!(
            curves("X448")
                .unwrap_err()
                .message()
                .contains("offers X25519")
        );
    }

    #[test]
    fn verbose_names_are_openssl_s() {
        assert_eq!(
            openssl_name("TLS13_AES_256_GCM_SHA384"),
            "TLS_AES_256_GCM_SHA384"
        );
        assert_eq!(
            openssl_name("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "ECDHE-RSA-AES128-GCM-SHA256"
        );
        assert_eq!(openssl_name("unknown"), "unknown");
    }
}
