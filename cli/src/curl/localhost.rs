//! `localhost` and the names under it, answered without asking a resolver, as curl 7.88 answers
//! them (RFC 6761 reserves them for the loopback).
//!
//! curl gives `localhost` and every `NAME.localhost` the addresses `127.0.0.1` and `::1`
//! whatever `/etc/hosts` or a DNS server says: `http://app.localhost:8080/` reaches a local
//! development server, and `-6 http://localhost/` tries `::1` even where the hosts file names
//! only `127.0.0.1`. The rule sits behind the `--resolve` entries (which may still name such a
//! host) and in front of DoH, `--dns-servers` and the system's resolver, where curl checks it.
//! A name with a trailing dot (`localhost.`) is asked for as any other, as in curl.
//!
//! The pool's own resolvers do not do this: a library caller's `localhost` is what the system
//! says it is, as with hyper's and Go's resolvers. This is curl mode's rule.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use pool::{Resolve, ResolveFuture};

/// Answers `localhost` and `*.localhost` with the loopback addresses, and asks `inner` for
/// every other name.
pub(crate) struct Localhost {
    /// The resolver every other name goes to.
    pub(crate) inner: Arc<dyn Resolve>,
}

impl std::fmt::Debug for Localhost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Localhost").finish_non_exhaustive()
    }
}

/// Whether curl answers `host` itself: `localhost`, or a name ending in `.localhost`, in any
/// case.
fn is_localhost(host: &str) -> bool {
    const NAME: &str = "localhost";
    let Some(tail) = host.len().checked_sub(NAME.len()) else {
        return false;
    };
    host.get(tail..)
        .is_some_and(|end| end.eq_ignore_ascii_case(NAME))
        && (tail == 0 || host.as_bytes()[tail - 1] == b'.')
}

impl Resolve for Localhost {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        if !is_localhost(host) {
            return self.inner.resolve(host, port);
        }
        // IPv4 first, as curl lists them.
        let addrs = vec![
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
        ];
        Box::pin(async move { Ok(addrs) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolver that must not be asked.
    struct Unasked;

    impl Resolve for Unasked {
        fn resolve(&self, host: &str, _port: u16) -> ResolveFuture {
            let host = host.to_owned();
            Box::pin(async move { Err(std::io::Error::other(format!("asked for {host}"))) })
        }
    }

    #[tokio::test]
    async fn localhost_names_are_the_loopback_and_others_are_asked_for() {
        let names = Localhost {
            inner: Arc::new(Unasked),
        };
        let loopback = vec![
            "127.0.0.1:8080".parse::<SocketAddr>().unwrap(),
            "[::1]:8080".parse().unwrap(),
        ];
        for host in ["localhost", "LocalHost", "app.localhost", "a.b.localhost"] {
            assert_eq!(names.resolve(host, 8080).await.unwrap(), loopback, "{host}");
        }
        for host in [
            "localhost.",
            "notlocalhost",
            "localhost.example",
            "xlocalhost",
            "ocalhost",
        ] {
            let err = names.resolve(host, 8080).await.unwrap_err();
            assert!(err.to_string().contains(host), "{host}: {err}");
        }
    }
}
