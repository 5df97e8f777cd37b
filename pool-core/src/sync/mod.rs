//! The synchronization facade: `std::sync` in production, `loom` under `cfg(pool_loom)`.
//!
//! Every lock the pool takes comes from here, so the coordination code compiles unchanged against
//! loom's model checker. Two properties hold for both backends:
//!
//! * [`Mutex`] does not poison. A panic while a pool lock is held (for example in a buggy
//!   caller-supplied hook) must not turn every later request into a poisoned-lock panic; the data
//!   a pool lock protects is kept consistent by its owner's transitions, not by unwinding.
//! * With `debug_assertions` (every test build), acquiring a pool lock while the same thread
//!   already holds one panics. This is rule 1 of the architecture: never hold two pool locks at
//!   once, so no lock order exists that could deadlock. The check is per thread and costs one
//!   thread-local counter update per acquisition; release builds do not have it.

#[cfg(not(pool_loom))]
mod std_impl;
#[cfg(not(pool_loom))]
pub use std_impl::*;

#[cfg(pool_loom)]
mod loom_impl;
#[cfg(pool_loom)]
pub use loom_impl::*;

/// Atomic integer and flag types of the selected backend.
pub mod atomic {
    #[cfg(pool_loom)]
    pub use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
    #[cfg(not(pool_loom))]
    pub use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
}

/// A value on a cache line of its own: 128 bytes, as adjacent-line prefetchers pair 64-byte
/// lines. For a counter that one partition's thread writes on every request, so that the
/// lines other partitions read (or write) stay in their caches (rule 11 of the architecture).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct OwnLine<T>(pub T);
