//! Name resolution: turning a host name and port into socket addresses.
//!
//! [`Resolve`] is the seam: the connector asks it for addresses and does not care where they
//! come from. Two implementations are provided: [`SystemResolver`] (the platform's
//! `getaddrinfo`, run on tokio's blocking pool) and [`StaticResolver`] (fixed answers for chosen
//! names, like curl's `--resolve`, in front of another resolver).
//!
//! With the `hickory` feature, [`HickoryResolver`](crate::HickoryResolver) is a third: an
//! asynchronous resolver that caches answers for their DNS TTL (and failures for the zone's
//! negative TTL). The system resolver stays the default.
//!
//! What the first two do not do: cache answers or honour DNS TTLs. No resolver orders
//! addresses for connecting. Ordering for happy eyeballs belongs to the dialer, and IP-literal hosts never
//! reach a resolver at all.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;

/// The future returned by [`Resolve::resolve`].
pub type ResolveFuture = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// Resolves a host name to the socket addresses to try, in preference order.
///
/// The connector treats an error, and an empty list, as a resolution failure
/// ([`ConnectError::is_resolve`](crate::ConnectError::is_resolve)).
///
/// Implementations must be cheap to call concurrently: every new connection to a named host
/// calls `resolve` once.
pub trait Resolve: Send + Sync + 'static {
    /// Resolves `host` for a connection to `port`.
    ///
    /// `host` is the canonical host of an origin (lower-cased). The returned addresses carry
    /// the port to dial, normally `port`.
    ///
    /// # Cancel safety
    ///
    /// The returned future may be dropped at any point (for example when the connect timeout
    /// fires); implementations must tolerate that.
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture;
}

/// The platform resolver: `getaddrinfo` through [`std::net::ToSocketAddrs`].
///
/// `getaddrinfo` blocks, so each lookup runs on tokio's blocking pool
/// ([`spawn_blocking`](tokio::task::spawn_blocking)), never on an async worker thread. Calling
/// [`resolve`](Resolve::resolve) outside a tokio runtime panics when the future is first polled.
///
/// # Cancel safety
///
/// Dropping the future does not stop a lookup already running on the blocking pool; it runs
/// to completion and its answer is discarded.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let host = host.to_owned();
        Box::pin(async move {
            let lookup = tokio::task::spawn_blocking(move || {
                (host.as_str(), port)
                    .to_socket_addrs()
                    .map(Iterator::collect)
            });
            // A join error means the lookup panicked or the runtime is shutting down; either
            // way there is no answer to give.
            lookup.await.map_err(io::Error::other)?
        })
    }
}

/// Fixed answers for chosen `(host, port)` pairs, falling back to another resolver for
/// everything else (curl's `--resolve host:port:addr`).
///
/// Host names match case-insensitively; an IPv6 literal may be given with or without brackets
/// and in any textual form. A trailing dot is significant (`a.test.` is not `a.test`), as it is
/// for origins.
///
/// ```
/// use std::sync::Arc;
/// use pool_tls::{StaticResolver, SystemResolver};
///
/// let resolver = StaticResolver::new(Arc::new(SystemResolver))
///     .with("api.example.com", 443, vec!["127.0.0.1:8443".parse().unwrap()]);
/// # let _ = resolver;
/// ```
#[derive(Clone)]
pub struct StaticResolver {
    /// Overrides keyed by normalized host and port.
    entries: HashMap<(Box<str>, u16), Arc<[SocketAddr]>>,
    /// Consulted for every pair without an override.
    fallback: Arc<dyn Resolve>,
}

impl StaticResolver {
    /// A resolver with no overrides that answers everything through `fallback`.
    pub fn new(fallback: Arc<dyn Resolve>) -> StaticResolver {
        StaticResolver {
            entries: HashMap::new(),
            fallback,
        }
    }

    /// Answers `(host, port)` with `addrs`, in that order, replacing any earlier override for
    /// the same pair. The host `*` stands for every host on `port` that has no override of its
    /// own (curl's `--resolve '*:PORT:ADDR'`).
    ///
    /// The addresses are returned as given, ports included, so an override may also redirect
    /// to another port. An empty list makes resolving that pair fail.
    pub fn insert(&mut self, host: &str, port: u16, addrs: Vec<SocketAddr>) {
        self.entries
            .insert((normalize_host(host), port), addrs.into());
    }

    /// Drops the override of `(host, port)`, if any (curl's `--resolve -HOST:PORT`): the pair
    /// is resolved as if it had none.
    pub fn remove(&mut self, host: &str, port: u16) {
        self.entries.remove(&(normalize_host(host), port));
    }

    /// Builder form of [`insert`](Self::insert).
    #[must_use]
    pub fn with(mut self, host: &str, port: u16, addrs: Vec<SocketAddr>) -> StaticResolver {
        self.insert(host, port, addrs);
        self
    }
}

impl Resolve for StaticResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let entry = self.entries.get(&(normalize_host(host), port));
        match entry.or_else(|| self.entries.get(&(Box::from("*"), port))) {
            Some(addrs) => {
                tracing::debug!(host, port, ?addrs, "using static resolver override");
                Box::pin(std::future::ready(Ok(addrs.to_vec())))
            }
            None => self.fallback.resolve(host, port),
        }
    }
}

impl fmt::Debug for StaticResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticResolver")
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// The key a host is stored and looked up under: brackets stripped, IPv6 in canonical text,
/// names lower-cased.
pub(crate) fn normalize_host(host: &str) -> Box<str> {
    let unbracketed = unbracket(host);
    match unbracketed.parse::<Ipv6Addr>() {
        Ok(ip) => ip.to_string().into_boxed_str(),
        Err(_) => unbracketed.to_ascii_lowercase().into_boxed_str(),
    }
}

/// `host` without the brackets of an IPv6 literal (unchanged when it has none).
pub(crate) fn unbracket(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fallback that records what it was asked and fails.
    #[derive(Debug, Default)]
    struct Refusing {
        asked: std::sync::Mutex<Vec<(String, u16)>>,
    }

    impl Resolve for Refusing {
        fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
            self.asked.lock().unwrap().push((host.to_owned(), port));
            Box::pin(std::future::ready(Err(io::Error::other(
                "fallback refused",
            ))))
        }
    }

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[tokio::test]
    async fn static_override_is_used_and_matches_case_insensitively() {
        let fallback = Arc::new(Refusing::default());
        let resolver = StaticResolver::new(fallback.clone()).with(
            "API.Example.com",
            443,
            addrs(&["127.0.0.1:8443", "[::1]:8443"]),
        );

        let got = resolver.resolve("api.example.COM", 443).await.unwrap();
        assert_eq!(got, addrs(&["127.0.0.1:8443", "[::1]:8443"]));
        assert!(fallback.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn other_ports_and_hosts_go_to_the_fallback() {
        let fallback = Arc::new(Refusing::default());
        let resolver =
            StaticResolver::new(fallback.clone()).with("a.test", 443, addrs(&["127.0.0.1:1"]));

        assert!(resolver.resolve("a.test", 80).await.is_err());
        assert!(resolver.resolve("a.test.", 443).await.is_err());
        assert_eq!(
            *fallback.asked.lock().unwrap(),
            vec![("a.test".to_owned(), 80), ("a.test.".to_owned(), 443)]
        );
    }

    #[tokio::test]
    async fn a_wildcard_host_answers_for_hosts_without_their_own_and_removal_drops_one() {
        let fallback = Arc::new(Refusing::default());
        let mut resolver = StaticResolver::new(fallback.clone())
            .with("*", 443, addrs(&["127.0.0.1:1"]))
            .with("own.test", 443, addrs(&["127.0.0.2:2"]));
        let got = |resolver: &StaticResolver, host: &'static str| {
            let answer = resolver.resolve(host, 443);
            async move { answer.await.ok() }
        };
        assert_eq!(
            got(&resolver, "any.test").await,
            Some(addrs(&["127.0.0.1:1"]))
        );
        assert_eq!(
            got(&resolver, "own.test").await,
            Some(addrs(&["127.0.0.2:2"]))
        );
        resolver.remove("OWN.test", 443);
        assert_eq!(
            got(&resolver, "own.test").await,
            Some(addrs(&["127.0.0.1:1"]))
        );
        resolver.remove("*", 443);
        assert_eq!(got(&resolver, "own.test").await, None);
        assert!(
            resolver.resolve("any.test", 80).await.is_err(),
            "other ports"
        );
        assert_eq!(fallback.asked.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn bracketed_ipv6_keys_match_any_spelling() {
        let mut resolver = StaticResolver::new(Arc::new(Refusing::default()));
        resolver.insert("[0:0::1]", 8080, addrs(&["127.0.0.1:9"]));
        assert_eq!(
            resolver.resolve("::1", 8080).await.unwrap(),
            addrs(&["127.0.0.1:9"])
        );
    }

    #[tokio::test]
    async fn system_resolver_answers_ip_literals_without_dns() {
        let got = SystemResolver.resolve("127.0.0.1", 8080).await.unwrap();
        assert_eq!(got, addrs(&["127.0.0.1:8080"]));
    }
}
