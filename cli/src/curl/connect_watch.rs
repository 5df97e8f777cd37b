//! What a transfer was waiting for when `-m` ran out, for curl's words.
//!
//! curl names its transfer's state when `-m` ends it: `Resolving timed out after N
//! milliseconds` while a name is being resolved, `Connection timed out after N milliseconds`
//! while the connection is being made (the TCP connect, TLS, a proxy's `CONNECT` or SOCKS
//! handshake), and `Operation timed out after N milliseconds with ...` after that. The pool
//! makes the connection inside the request and says nothing of how far it got when the
//! request is dropped, so poolcurl reads the state at the moment `-m` runs out from what it
//! can see: the lookups curl mode's resolver has in progress ([`Lookups`]) and the pool's
//! `establishing` gauge. With one transfer at a time both can only be that transfer's; `-Z`'s
//! transfers share them, so a parallel transfer keeps the operation's words. A reused
//! connection makes neither count move: a transfer on one times out as an operation, as in
//! curl.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::exit::CurlError;

/// What a transfer waited for when its time ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// A name to be resolved.
    Resolve,
    /// A connection to be made.
    Connect,
    /// Anything else: the request's exchange.
    Exchange,
}

/// The lookups in progress in one pool's resolver.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lookups(Arc<AtomicUsize>);

impl Lookups {
    /// `lookup`, counted from now until it ends or is dropped.
    pub(crate) fn count<F: Future>(&self, lookup: F) -> impl Future<Output = F::Output> + use<F> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let counted = Counted(self.0.clone());
        async move {
            let _counted = counted;
            lookup.await
        }
    }

    fn in_progress(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }
}

/// One lookup in progress; its drop ends it.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A pool's resolver lookups and its connections being made, read when `-m` runs out.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectWatch {
    lookups: Lookups,
    /// `None` for a group whose pool could not be built: nothing to wait for.
    pool: Option<pool::ConnectionPool>,
}

impl ConnectWatch {
    /// A watch of `pool`, whose resolver counts its lookups in `lookups`.
    pub(crate) fn new(pool: pool::ConnectionPool, lookups: Lookups) -> ConnectWatch {
        ConnectWatch {
            lookups,
            pool: Some(pool),
        }
    }

    /// Exit 28 for a transfer whose `-m` ran out after `elapsed`, in curl's words for what it
    /// waited for; a `parallel` one (`-Z`) in the operation's words, with the `received`
    /// bytes of the body out of the `announced` length.
    pub(crate) fn time_ran_out(
        &self,
        parallel: bool,
        elapsed: Duration,
        received: u64,
        announced: Option<u64>,
    ) -> CurlError {
        match (parallel, self.waiting()) {
            (false, Waiting::Resolve) => CurlError::resolve_timeout(elapsed),
            (false, Waiting::Connect) => CurlError::connection_timeout(elapsed),
            _ => CurlError::operation_timeout(elapsed, received, announced),
        }
    }

    /// What the pool's one transfer waits for now.
    fn waiting(&self) -> Waiting {
        if self.lookups.in_progress() {
            return Waiting::Resolve;
        }
        let establishing = self.pool.as_ref().is_some_and(|pool| {
            pool.origins()
                .iter()
                .any(|origin| pool.stats(origin).total().establishing != 0)
        });
        if establishing {
            Waiting::Connect
        } else {
            Waiting::Exchange
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lookup_counts_until_it_ends_or_is_dropped() {
        let lookups = Lookups::default();
        let watch = ConnectWatch {
            lookups: lookups.clone(),
            pool: None,
        };
        assert_eq!(watch.waiting(), Waiting::Exchange);
        let pending = lookups.count(std::future::pending::<()>());
        assert_eq!(watch.waiting(), Waiting::Resolve, "counted from its start");
        drop(pending);
        assert_eq!(watch.waiting(), Waiting::Exchange, "a dropped lookup ends");
        lookups.count(async { 7 }).await;
        assert_eq!(watch.waiting(), Waiting::Exchange, "a finished lookup ends");
    }
}
