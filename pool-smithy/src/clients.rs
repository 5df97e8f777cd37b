//! The `pool::Client`s facades send through: one per connect timeout, shared by every facade
//! (and every clone of the [`PoolHttpClient`](crate::PoolHttpClient)) with that timeout.
//!
//! A `pool::Client` remembers the cell of the first origin it sent to, so its later requests
//! there skip the partition map. A fresh clone per operation would forget it every time; a
//! shared client per timeout keeps it from one operation to the next. Connect timeouts are
//! few (one per SDK client configuration), so the list is short and bounded: past
//! [`MAX_SHARED`] distinct timeouts a facade gets a fresh clone, which behaves the same, only
//! without the memory.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// At most this many connect timeouts keep a shared client.
const MAX_SHARED: usize = 16;

pub(crate) struct Clients {
    /// The partition's client as the pool built it (its default connect timeout).
    base: Arc<pool::Client>,
    by_timeout: RwLock<Vec<(Duration, Arc<pool::Client>)>>,
}

impl Clients {
    pub(crate) fn new(base: pool::Client) -> Clients {
        Clients {
            base: Arc::new(base),
            by_timeout: RwLock::new(Vec::new()),
        }
    }

    /// The partition's client as the pool built it.
    pub(crate) fn base(&self) -> &pool::Client {
        &self.base
    }

    /// The client for operations whose settings say `connect_timeout` (`None`: the pool's
    /// default stays).
    pub(crate) fn for_timeout(&self, connect_timeout: Option<Duration>) -> Arc<pool::Client> {
        let Some(timeout) = connect_timeout else {
            return self.base.clone();
        };
        let shared = |list: &[(Duration, Arc<pool::Client>)]| {
            list.iter()
                .find(|(t, _)| *t == timeout)
                .map(|(_, client)| client.clone())
        };
        let read = self
            .by_timeout
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = shared(&read) {
            return client;
        }
        drop(read);
        let mut list = self
            .by_timeout
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = shared(&list) {
            return client;
        }
        let client = Arc::new(self.base.as_ref().clone().connect_timeout(Some(timeout)));
        if list.len() < MAX_SHARED {
            list.push((timeout, client.clone()));
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shared_client_per_timeout_up_to_the_limit() {
        let pool = pool::ConnectionPool::builder().build().unwrap();
        let clients = Clients::new(pool.client().unwrap());
        let second = Duration::from_secs(1);
        assert!(Arc::ptr_eq(&clients.for_timeout(None), &clients.base));
        let a = clients.for_timeout(Some(second));
        assert!(Arc::ptr_eq(&a, &clients.for_timeout(Some(second))));
        assert!(!Arc::ptr_eq(&a, &clients.for_timeout(Some(2 * second))));
        for n in 0..MAX_SHARED as u64 + 4 {
            clients.for_timeout(Some(Duration::from_millis(n)));
        }
        let len = clients.by_timeout.read().unwrap().len();
        assert_eq!(len, MAX_SHARED, "the list stays bounded");
    }
}
