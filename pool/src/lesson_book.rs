//! What the pool learns of each origin's server, kept once per origin and shared by the
//! origin's cells in every partition: its per-connection request quota
//! (`pool_core::cell::QuotaLearner`), the idle timeout it does not announce
//! (`pool_core::cell::IdleLearner`), and what its HTTP/2 side taught by asking for calm
//! (`pool_h2::CalmHint`: the stream cap a new connection starts from, one upload at a time,
//! the larger stream window, fewer streams against empty DATA frames).
//!
//! All are facts about the server, not about the partition that met them. Each partition's
//! cell for an origin is handed the origin's learners when it is made, so the first two
//! agreeing cuts (or idle closes) teach every partition, one probe checks a quota for all of
//! them, and a connection the server ended asking for calm in one partition is the last to
//! end so in any: the next connection of every partition opens with the lesson. (A server
//! does not always say why it ends a connection: Jetty's `GOAWAY` is lost when its writes are
//! pending, see `pool_h2`'s `window.rs`. A partition whose connection ended so learns from
//! another's that said why.)
//!
//! The book holds learners weakly: the origin's cells own theirs, and a learner lives while
//! any of them does. When every cell of the origin has retired or gone, so have its learners,
//! and a new cell starts new ones (as the admission of a bounded origin is forgotten and made
//! anew). A forward route's cells (`forward`) share the learners of the route, kept apart from
//! the origins': they learn the proxy's habits, and a proxy may be an origin of its own.
//!
//! Looked up only when a partition makes a cell, never on the request path, and before the
//! partition takes its map's lock (never two pool locks at once).

use hashbrown::HashMap;
use pool_core::OriginKey;
use pool_core::cell::{IdleLearner, QuotaLearner};
use pool_core::sync::{Arc, Mutex, Weak};

/// The book starts pruning dead entries once it holds this many.
const PRUNE_FLOOR: usize = 64;

/// The learners of the pool's origins and forward routes.
#[derive(Default)]
pub(crate) struct LessonBook {
    pages: Mutex<Pages>,
}

/// The learners of one origin (or forward route), for its cells.
#[derive(Clone)]
pub(crate) struct Lessons {
    pub(crate) quota: Arc<QuotaLearner>,
    pub(crate) idle: Arc<IdleLearner>,
    pub(crate) calm: Arc<pool_h2::CalmHint>,
}

/// An origin's page: its learners, held weakly (its cells hold them strongly, all or none).
struct Page {
    quota: Weak<QuotaLearner>,
    idle: Weak<IdleLearner>,
    calm: Weak<pool_h2::CalmHint>,
}

impl Page {
    fn lessons(&self) -> Option<Lessons> {
        Some(Lessons {
            quota: self.quota.upgrade()?,
            idle: self.idle.upgrade()?,
            calm: self.calm.upgrade()?,
        })
    }

    fn is_dead(&self) -> bool {
        self.quota.strong_count() == 0
            && self.idle.strong_count() == 0
            && self.calm.strong_count() == 0
    }
}

#[derive(Default)]
struct Pages {
    origins: HashMap<OriginKey, Page>,
    routes: HashMap<OriginKey, Page>,
    /// Dead entries are dropped when the book grows past this; then it is set to twice what
    /// is left, so pruning is paid for by the entries added since the last one.
    prune_at: usize,
}

impl LessonBook {
    /// The learners of `key` (a forward route's key if `route`), made if no cell holds them.
    pub(crate) fn lessons_for(&self, key: &OriginKey, route: bool) -> Lessons {
        let mut pages = self.pages.lock();
        let pages = &mut *pages;
        let map = if route {
            &mut pages.routes
        } else {
            &mut pages.origins
        };
        if let Some(lessons) = map.get(key).and_then(Page::lessons) {
            return lessons;
        }
        let lessons = Lessons {
            quota: Arc::new(QuotaLearner::default()),
            idle: Arc::new(IdleLearner::default()),
            calm: Arc::new(pool_h2::CalmHint::default()),
        };
        let page = Page {
            quota: Arc::downgrade(&lessons.quota),
            idle: Arc::downgrade(&lessons.idle),
            calm: Arc::downgrade(&lessons.calm),
        };
        map.insert(key.clone(), page);
        if pages.origins.len() + pages.routes.len() > pages.prune_at.max(PRUNE_FLOOR) {
            pages.origins.retain(|_, page| !page.is_dead());
            pages.routes.retain(|_, page| !page.is_dead());
            pages.prune_at = 2 * (pages.origins.len() + pages.routes.len());
        }
        lessons
    }

    /// How many pages the book holds, dead or alive (for tests).
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
    fn the_cells_of_one_origin_share_its_learners() {
        let book = LessonBook::default();
        let a = book.lessons_for(&key(1), false);
        let b = book.lessons_for(&key(1), false);
        assert!(Arc::ptr_eq(&a.quota, &b.quota));
        assert!(Arc::ptr_eq(&a.idle, &b.idle));
        assert!(Arc::ptr_eq(&a.calm, &b.calm));
        let other = book.lessons_for(&key(2), false);
        assert!(!Arc::ptr_eq(&a.quota, &other.quota));
        assert!(!Arc::ptr_eq(&a.idle, &other.idle));
        assert!(!Arc::ptr_eq(&a.calm, &other.calm));
    }

    #[test]
    fn a_route_learns_apart_from_the_origin_of_the_same_name() {
        let book = LessonBook::default();
        let origin = book.lessons_for(&key(1), false);
        let route = book.lessons_for(&key(1), true);
        assert!(!Arc::ptr_eq(&origin.quota, &route.quota));
        assert!(!Arc::ptr_eq(&origin.idle, &route.idle));
        assert!(Arc::ptr_eq(
            &route.idle,
            &book.lessons_for(&key(1), true).idle
        ));
    }

    #[test]
    fn a_learner_nobody_holds_is_made_anew_and_dead_entries_are_pruned() {
        let book = LessonBook::default();
        let first = Arc::downgrade(&book.lessons_for(&key(1), false).quota);
        assert_eq!(first.strong_count(), 0, "only the cells own a learner");
        let again = book.lessons_for(&key(1), false);
        assert!(!Weak::ptr_eq(&first, &Arc::downgrade(&again.quota)));
        // Origins whose cells are gone: the book prunes them as it grows.
        for port in 2..=1000 {
            drop(book.lessons_for(&key(port), false));
        }
        assert!(book.len() <= 2 * PRUNE_FLOOR + 1, "{}", book.len());
        // The live one survives every pruning.
        assert!(Arc::ptr_eq(
            &again.quota,
            &book.lessons_for(&key(1), false).quota
        ));
    }
}
