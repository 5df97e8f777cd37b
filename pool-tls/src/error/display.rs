//! How a [`ConnectError`] reads: `Display` says what failed at this level for people (the
//! cause is `source()`'s, appended by the alternate form `{:#}`), `Debug` shows every field.

use std::error::Error as StdError;
use std::fmt;

use super::{ConnectError, Kind};

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.inner.target.as_deref();
        let proxy = self.inner.proxy.as_deref();
        match (&self.inner.kind, target) {
            (
                Kind::Tunnel {
                    status: Some(407), ..
                },
                _,
            ) => write!(
                f,
                "the proxy {} requires authentication (407)",
                proxy.unwrap_or("-")
            )?,
            (
                Kind::Tunnel {
                    status: Some(status),
                    ..
                },
                _,
            ) => write!(
                f,
                "the proxy {} refused the CONNECT tunnel with status {status}",
                proxy.unwrap_or("-")
            )?,
            (Kind::Tunnel { status: None, .. }, _) => write!(
                f,
                "CONNECT tunnel through {} failed",
                proxy.unwrap_or("the proxy")
            )?,
            (Kind::Socks { resolving: true }, Some(host)) => write!(
                f,
                "failed to resolve {host} for the SOCKS proxy {}",
                proxy.unwrap_or("-")
            )?,
            (Kind::Socks { .. }, _) => write!(
                f,
                "SOCKS handshake with {} failed",
                proxy.unwrap_or("the proxy")
            )?,
            (Kind::Resolve, Some(host)) if proxy.is_some() => {
                write!(f, "failed to resolve proxy {host}")?
            }
            (Kind::Resolve, Some(host)) => write!(f, "failed to resolve {host}")?,
            (Kind::Resolve, None) => f.write_str("failed to resolve host name")?,
            (Kind::Connect, _) => match (self.inner.addr, proxy) {
                (Some(addr), Some(proxy)) => {
                    write!(f, "failed to connect to proxy {proxy} ({addr})")?
                }
                (Some(addr), None) => write!(f, "failed to connect to {addr}")?,
                // A Unix socket's path, or the URI a `Service` call could not reach.
                (None, _) => match target {
                    Some(target) => write!(f, "failed to connect to {target}")?,
                    None => f.write_str("failed to connect")?,
                },
            },
            (
                Kind::Interface {
                    name,
                    unsupported: true,
                },
                _,
            ) => {
                return write!(
                    f,
                    "binding to interface {name} is not supported on this platform"
                );
            }
            (
                Kind::Interface {
                    name,
                    unsupported: false,
                },
                _,
            ) => {
                write!(f, "binding to interface {name} failed")?;
            }
            (Kind::LocalAddress(address), _) => {
                write!(f, "binding to local address {address} failed")?;
            }
            (Kind::LocalPort { first, last }, _) if first == last => {
                write!(f, "binding to local port {first} failed")?;
            }
            (Kind::LocalPort { first, last }, _) => {
                write!(f, "binding to a local port in {first}-{last} failed")?;
            }
            (Kind::Timeout(after, step), origin) => {
                match origin {
                    Some(origin) => write!(f, "connection to {origin} timed out after {after:?}")?,
                    None => write!(f, "connection timed out after {after:?}")?,
                }
                if let Some(step) = step {
                    write!(f, " {}", crate::connector::step::doing(*step))?;
                }
                if let Some(proxy) = proxy {
                    write!(f, " (through {proxy})")?;
                }
                return Ok(());
            }
            (Kind::Tls, Some(host)) => write!(f, "TLS handshake with {host} failed")?,
            (Kind::Tls, None) => f.write_str("TLS handshake failed")?,
            (Kind::PinnedKey, Some(host)) => write!(
                f,
                "the certificate of {host} does not carry a pinned public key"
            )?,
            (Kind::PinnedKey, None) => {
                f.write_str("the certificate does not carry a pinned public key")?;
            }
            (Kind::CertificateStatus, Some(host)) => {
                write!(f, "the certificate status of {host} is not good")?
            }
            (Kind::CertificateStatus, None) => f.write_str("the certificate status is not good")?,
            (Kind::Certificate, Some(host)) => write!(f, "server certificate for {host} rejected")?,
            (Kind::Certificate, None) => f.write_str("server certificate rejected")?,
        }
        // The cause is `source()`'s, never part of this level's text (one chain convention
        // for the workspace: a chain printer shows each message once). `{:#}` appends it.
        write_causes(f, self.source())
    }
}

/// With the alternate flag (`{:#}`), `: cause` for `first` and each cause after it; nothing
/// otherwise. The one chain printer of this crate's errors.
pub(crate) fn write_causes(
    f: &mut fmt::Formatter<'_>,
    first: Option<&(dyn StdError + 'static)>,
) -> fmt::Result {
    if f.alternate() {
        let mut next = first;
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
    }
    Ok(())
}

impl fmt::Debug for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("ConnectError");
        s.field("kind", &self.inner.kind);
        if let Some(target) = &self.inner.target {
            s.field("target", target);
        }
        if let Some(addr) = &self.inner.addr {
            s.field("addr", addr);
        }
        if let Some(proxy) = &self.inner.proxy {
            s.field("proxy", proxy);
        }
        if let Some(source) = &self.inner.source {
            s.field("source", source);
        }
        s.finish()
    }
}
