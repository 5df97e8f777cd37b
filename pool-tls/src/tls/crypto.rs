//! The crypto provider a connector's handshakes use: rustls's `ring` provider, narrowed to the
//! cipher suites and key exchange groups [`TlsOptions`] names, in the order it names them.
//!
//! The order is the client's preference, which servers that follow the client's order (rustls
//! and nginx by default) keep. A name the provider does not have is an error rather than
//! skipped: a caller who lists suites wants those and no others, and a silently shorter list
//! could leave a version without any. Mapping other spellings (OpenSSL's cipher strings, curl's
//! curve names) onto these is the caller's job.

use rustls::SupportedProtocolVersion;
use rustls::crypto::CryptoProvider;

use super::{TlsConfigError, TlsOptions};

/// rustls's `ring` provider with the suites and groups of `options` (all of them where the
/// options list none). `versions` are the protocol versions the connector offers: at least one
/// suite must serve one of them.
///
/// # Errors
///
/// A suite or group the provider does not have, or suites for none of `versions`.
pub(super) fn provider(
    options: &TlsOptions,
    versions: &[&'static SupportedProtocolVersion],
) -> Result<CryptoProvider, TlsConfigError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !options.cipher_suites.is_empty() {
        provider.cipher_suites = pick(
            &provider.cipher_suites,
            &options.cipher_suites,
            |suite| suite.suite(),
            "cipher suite",
        )?;
        let offered = |suite: &rustls::SupportedCipherSuite| {
            versions
                .iter()
                .any(|v| v.version == suite.version().version)
        };
        if !provider.cipher_suites.iter().any(offered) {
            return Err(TlsConfigError::new(format!(
                "none of the cipher suites {:?} is for an offered TLS version ({:?})",
                options.cipher_suites,
                versions.iter().map(|v| v.version).collect::<Vec<_>>()
            )));
        }
    }
    if !options.key_exchange_groups.is_empty() {
        provider.kx_groups = pick(
            &provider.kx_groups,
            &options.key_exchange_groups,
            |group| group.name(),
            "key exchange group",
        )?;
    }
    Ok(provider)
}

/// The items of `available` that `wanted` names, in `wanted`'s order, each once.
fn pick<T: Copy, N: PartialEq + std::fmt::Debug>(
    available: &[T],
    wanted: &[N],
    name: impl Fn(&T) -> N,
    what: &str,
) -> Result<Vec<T>, TlsConfigError> {
    let mut picked: Vec<T> = Vec::with_capacity(wanted.len());
    for want in wanted {
        let found = available
            .iter()
            .find(|item| name(item) == *want)
            .ok_or_else(|| {
                TlsConfigError::new(format!("rustls's ring provider has no {what} {want:?}"))
            })?;
        if !picked.iter().any(|item| name(item) == *want) {
            picked.push(*found);
        }
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use rustls::{CipherSuite, NamedGroup};

    use super::*;

    fn both() -> Vec<&'static SupportedProtocolVersion> {
        vec![&rustls::version::TLS13, &rustls::version::TLS12]
    }

    #[test]
    fn no_lists_keep_the_provider_whole() {
        let full = rustls::crypto::ring::default_provider();
        let provider = provider(&TlsOptions::default(), &both()).unwrap();
        assert_eq!(provider.cipher_suites.len(), full.cipher_suites.len());
        assert_eq!(provider.kx_groups.len(), full.kx_groups.len());
    }

    #[test]
    fn lists_narrow_the_provider_in_their_order_each_once() {
        let options = TlsOptions {
            cipher_suites: vec![
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            ],
            key_exchange_groups: vec![NamedGroup::secp384r1, NamedGroup::X25519],
            ..TlsOptions::default()
        };
        let provider = provider(&options, &both()).unwrap();
        let suites: Vec<_> = provider.cipher_suites.iter().map(|s| s.suite()).collect();
        assert_eq!(suites, options.cipher_suites[..2]);
        let groups: Vec<_> = provider.kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(groups, options.key_exchange_groups);
    }

    #[test]
    fn what_the_provider_lacks_is_named() {
        let options = TlsOptions {
            cipher_suites: vec![CipherSuite::TLS13_AES_128_CCM_SHA256],
            ..TlsOptions::default()
        };
        let err = provider(&options, &both()).unwrap_err().to_string();
        assert!(
            err.contains("no cipher suite TLS13_AES_128_CCM_SHA256"),
            "{err}"
        );
        let options = TlsOptions {
            key_exchange_groups: vec![NamedGroup::X448],
            ..TlsOptions::default()
        };
        let err = provider(&options, &both()).unwrap_err().to_string();
        assert!(err.contains("no key exchange group X448"), "{err}");
    }

    #[test]
    fn suites_for_no_offered_version_are_refused() {
        let options = TlsOptions {
            cipher_suites: vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256],
            ..TlsOptions::default()
        };
        provider(&options, &both()).unwrap();
        let err = provider(&options, &[&rustls::version::TLS13]).unwrap_err();
        assert!(
            err.to_string().contains("is for an offered TLS version"),
            "{err}"
        );
    }
}
