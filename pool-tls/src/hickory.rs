//! A caching asynchronous resolver: [`HickoryResolver`] (feature `hickory`).
//!
//! The system resolver runs `getaddrinfo` on tokio's blocking pool for every new connection and
//! keeps nothing. A gateway that opens many connections (or rotates them with a maximum
//! lifetime) wants lookups that never block a thread and answers that are reused for as long
//! as DNS says they are valid. hickory-resolver, the Rust ecosystem's DNS stub resolver, does
//! exactly that: it queries the name servers asynchronously and caches positive answers for
//! their TTL and negative answers (`NXDOMAIN`, no records) for the TTL of the zone's `SOA`
//! (RFC 2308), within the bounds of its [`ResolverOpts`](hickory_resolver::config::ResolverOpts)
//! (`positive_min_ttl`, `negative_max_ttl`, `cache_size`, ...). This module adapts it to the
//! pool's [`Resolve`] seam and adds nothing of its own: no second cache, no parsing.
//!
//! A connection established after its predecessor retired (the pool's maximum lifetime)
//! resolves again, so it follows a changed record as soon as the cached answer expires.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{LookupIpStrategy, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::proto::xfer::Protocol;

use crate::resolve::{Resolve, ResolveFuture};

/// A [`Resolve`] over hickory-resolver: asynchronous lookups with a TTL-honouring cache,
/// positive and negative. Clones share the resolver and its cache.
///
/// ```no_run
/// # fn demo() -> std::io::Result<()> {
/// // The system's name servers and options (`/etc/resolv.conf`, the hosts file).
/// let resolver = pool_tls::HickoryResolver::from_system_conf()?;
/// # let _ = resolver;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HickoryResolver {
    inner: Arc<TokioResolver>,
}

impl HickoryResolver {
    /// A resolver configured like the system's: name servers, search domains and options from
    /// `/etc/resolv.conf` (on Unix), with hickory's default cache. It asks for `A` and `AAAA`
    /// records at once, as `getaddrinfo` does, so a dual-stack origin's addresses of both
    /// families reach the pool's happy eyeballs (hickory's own default asks for `AAAA` only
    /// when there is no `A`).
    ///
    /// # Errors
    ///
    /// The system configuration could not be read.
    pub fn from_system_conf() -> io::Result<HickoryResolver> {
        let mut builder = TokioResolver::builder_tokio().map_err(io::Error::other)?;
        builder.options_mut().ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        Ok(HickoryResolver::from_resolver(builder.build()))
    }

    /// A resolver that asks only `servers` (over UDP, falling back to TCP for truncated
    /// answers), with `options`. Names are looked up as given (no search domains).
    pub fn with_name_servers(servers: &[SocketAddr], options: ResolverOpts) -> HickoryResolver {
        let mut config =
            ResolverConfig::from_parts(None, Vec::new(), Vec::<NameServerConfig>::new());
        for server in servers {
            config.add_name_server(NameServerConfig::new(*server, Protocol::Udp));
            config.add_name_server(NameServerConfig::new(*server, Protocol::Tcp));
        }
        let resolver = TokioResolver::builder_with_config(config, Default::default())
            .with_options(options)
            .build();
        HickoryResolver::from_resolver(resolver)
    }

    /// Wraps a resolver built with hickory's own builder, for full control of its
    /// configuration.
    pub fn from_resolver(resolver: TokioResolver) -> HickoryResolver {
        HickoryResolver {
            inner: Arc::new(resolver),
        }
    }

    /// Forgets every cached answer, positive and negative.
    pub fn clear_cache(&self) {
        self.inner.clear_cache();
    }
}

impl Resolve for HickoryResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let (resolver, host) = (self.inner.clone(), host.to_owned());
        Box::pin(async move {
            let lookup = resolver.lookup_ip(host.as_str()).await.map_err(|e| {
                let kind = if e.is_nx_domain() || e.is_no_records_found() {
                    io::ErrorKind::NotFound
                } else {
                    io::ErrorKind::Other
                };
                io::Error::new(kind, e)
            })?;
            Ok(lookup.iter().map(|ip| SocketAddr::new(ip, port)).collect())
        })
    }
}

impl std::fmt::Debug for HickoryResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HickoryResolver")
            .field("options", self.inner.options())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs on a machine with `/etc/resolv.conf`, as every machine this project builds on has.
    #[tokio::test]
    async fn the_system_configuration_asks_for_both_families_at_once() {
        let resolver = HickoryResolver::from_system_conf().expect("the system's DNS configuration");
        assert_eq!(
            resolver.inner.options().ip_strategy,
            LookupIpStrategy::Ipv4AndIpv6
        );
    }
}
