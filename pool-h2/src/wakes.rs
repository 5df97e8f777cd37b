//! A waker that counts its wakes, for the unit tests of the transport wrappers (`heard.rs`,
//! `kill.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;

/// Counts the wakes of the wakers made from it (`Waker::from(Arc<Wakes>)`).
#[derive(Debug, Default)]
pub(crate) struct Wakes(AtomicUsize);

impl Wakes {
    /// How many times it was woken.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
