//! The loom backend of the facade: the same API over loom's modeled primitives.

use std::fmt;
use std::ops::{Deref, DerefMut};

// loom models no `Weak`; coordination code holds strong references and tears them down
// explicitly.
pub use loom::sync::Arc;

/// A non-poisoning mutex over `loom::sync::Mutex`.
#[derive(Default)]
pub struct Mutex<T> {
    inner: loom::sync::Mutex<T>,
}

/// The guard of a [`Mutex`].
pub struct MutexGuard<'a, T> {
    inner: loom::sync::MutexGuard<'a, T>,
}

impl<T> Mutex<T> {
    /// Creates an unlocked mutex.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            inner: loom::sync::Mutex::new(value),
        }
    }

    /// Consumes the mutex, returning the value.
    pub fn into_inner(self) -> T {
        self.inner.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Acquires the lock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            inner: self.inner.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Mutex { .. }")
    }
}

impl<T> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MutexGuard { .. }")
    }
}

impl<T> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RwLockReadGuard { .. }")
    }
}

impl<T> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RwLockWriteGuard { .. }")
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

/// A reader-writer lock over `loom::sync::RwLock`.
#[derive(Default)]
pub struct RwLock<T> {
    inner: loom::sync::RwLock<T>,
}

/// Shared access to a [`RwLock`].
pub struct RwLockReadGuard<'a, T> {
    inner: loom::sync::RwLockReadGuard<'a, T>,
}

/// Exclusive access to a [`RwLock`].
pub struct RwLockWriteGuard<'a, T> {
    inner: loom::sync::RwLockWriteGuard<'a, T>,
}

impl<T> RwLock<T> {
    /// Creates an unlocked lock.
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            inner: loom::sync::RwLock::new(value),
        }
    }

    /// Acquires shared access.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            inner: self.inner.read().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Acquires exclusive access.
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard {
            inner: self.inner.write().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl<T> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RwLock { .. }")
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

/// Loom models check lock discipline by exploring interleavings, not with a thread-local count.
pub fn holds_pool_lock() -> bool {
    false
}
