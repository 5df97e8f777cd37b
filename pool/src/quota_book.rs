//! One request-quota learner per origin, shared by the origin's cells in every partition.
//!
//! A server's per-connection request quota (`pool_core::cell::QuotaLearner`) is a fact about
//! the server, not about the partition that met it. Each partition's cell for an origin is
//! handed the origin's one learner when it is made, so the first two agreeing cuts teach every
//! partition and one probe checks the quota for all of them.
//!
//! The book holds learners weakly: the origin's cells own theirs, and a learner lives while
//! any of them does. When every cell of the origin has retired or gone, so has the learner,
//! and a new cell starts a new one (as the admission of a bounded origin is forgotten and made
//! anew). A forward route's cells (`forward`) share the learner of the route, kept apart from
//! the origins': it learns the proxy's quota, and a proxy may be an origin of its own.
//!
//! Looked up only when a partition makes a cell, never on the request path, and before the
//! partition takes its map's lock (never two pool locks at once).

use hashbrown::HashMap;
use pool_core::OriginKey;
use pool_core::cell::QuotaLearner;
use pool_core::sync::{Arc, Mutex, Weak};

/// The book starts pruning dead entries once it holds this many.
const PRUNE_FLOOR: usize = 64;

/// The learners of the pool's origins and forward routes.
#[derive(Default)]
pub(crate) struct QuotaBook {
    pages: Mutex<Pages>,
}

#[derive(Default)]
struct Pages {
    origins: HashMap<OriginKey, Weak<QuotaLearner>>,
    routes: HashMap<OriginKey, Weak<QuotaLearner>>,
    /// Dead entries are dropped when the book grows past this; then it is set to twice what
    /// is left, so pruning is paid for by the entries added since the last one.
    prune_at: usize,
}

impl QuotaBook {
    /// The learner of `key` (a forward route's key if `route`), made if no cell holds one.
    pub(crate) fn learner_for(&self, key: &OriginKey, route: bool) -> Arc<QuotaLearner> {
        let mut pages = self.pages.lock();
        let pages = &mut *pages;
        let map = if route {
            &mut pages.routes
        } else {
            &mut pages.origins
        };
        if let Some(learner) = map.get(key).and_then(Weak::upgrade) {
            return learner;
        }
        let learner = Arc::new(QuotaLearner::default());
        map.insert(key.clone(), Arc::downgrade(&learner));
        if pages.origins.len() + pages.routes.len() > pages.prune_at.max(PRUNE_FLOOR) {
            pages
                .origins
                .retain(|_, learner| learner.strong_count() > 0);
            pages.routes.retain(|_, learner| learner.strong_count() > 0);
            pages.prune_at = 2 * (pages.origins.len() + pages.routes.len());
        }
        learner
    }

    /// How many learners the book holds, dead or alive (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        let pages = self.pages.lock();
        pages.origins.len() + pages.routes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pool_core::OriginLookup;

    fn key(port: u16) -> OriginKey {
        let uri: http::Uri = format!("http://127.0.0.1:{port}/").parse().unwrap();
        OriginLookup::from_uri(&uri).unwrap().to_key()
    }

    #[test]
    fn the_cells_of_one_origin_share_its_learner() {
        let book = QuotaBook::default();
        let a = book.learner_for(&key(1), false);
        let b = book.learner_for(&key(1), false);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &book.learner_for(&key(2), false)));
    }

    #[test]
    fn a_route_learns_apart_from_the_origin_of_the_same_name() {
        let book = QuotaBook::default();
        let origin = book.learner_for(&key(1), false);
        let route = book.learner_for(&key(1), true);
        assert!(!Arc::ptr_eq(&origin, &route));
        assert!(Arc::ptr_eq(&route, &book.learner_for(&key(1), true)));
    }

    #[test]
    fn a_learner_nobody_holds_is_made_anew_and_dead_entries_are_pruned() {
        let book = QuotaBook::default();
        let first = Arc::downgrade(&book.learner_for(&key(1), false));
        assert_eq!(first.strong_count(), 0, "only the cells own a learner");
        let again = book.learner_for(&key(1), false);
        assert!(!Weak::ptr_eq(&first, &Arc::downgrade(&again)));
        // Origins whose cells are gone: the book prunes them as it grows.
        for port in 2..=1000 {
            drop(book.learner_for(&key(port), false));
        }
        assert!(book.len() <= 2 * PRUNE_FLOOR + 1, "{}", book.len());
        // The live one survives every pruning.
        assert!(Arc::ptr_eq(&again, &book.learner_for(&key(1), false)));
    }
}
