//! The production backend of the facade.

use std::fmt;
use std::ops::{Deref, DerefMut};

pub use std::sync::{Arc, Weak};

/// A mutual-exclusion lock that does not poison and, in debug builds, refuses to be acquired while
/// the current thread holds another pool lock.
#[derive(Default)]
pub struct Mutex<T: ?Sized> {
    inner: std::sync::Mutex<T>,
}

/// The guard of a [`Mutex`]; the lock is released when it is dropped.
pub struct MutexGuard<'a, T: ?Sized> {
    inner: std::sync::MutexGuard<'a, T>,
    _held: held::Token,
}

impl<T> Mutex<T> {
    /// Creates an unlocked mutex.
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            inner: std::sync::Mutex::new(value),
        }
    }

    /// Consumes the mutex, returning the value.
    pub fn into_inner(self) -> T {
        self.inner.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Acquires the lock.
    ///
    /// # Panics
    ///
    /// In debug builds, when the current thread already holds a pool lock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let held = held::Token::acquire();
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        MutexGuard { inner, _held: held }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.try_lock() {
            Ok(guard) => f.debug_struct("Mutex").field("data", &&*guard).finish(),
            Err(_) => f.write_str("Mutex { <locked> }"),
        }
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// A reader-writer lock with the same non-poisoning and one-lock-per-thread rules as [`Mutex`].
#[derive(Default)]
pub struct RwLock<T> {
    inner: std::sync::RwLock<T>,
}

/// Shared access to the value of a [`RwLock`].
pub struct RwLockReadGuard<'a, T> {
    inner: std::sync::RwLockReadGuard<'a, T>,
    _held: held::Token,
}

/// Exclusive access to the value of a [`RwLock`].
pub struct RwLockWriteGuard<'a, T> {
    inner: std::sync::RwLockWriteGuard<'a, T>,
    _held: held::Token,
}

impl<T> RwLock<T> {
    /// Creates an unlocked lock.
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            inner: std::sync::RwLock::new(value),
        }
    }

    /// Acquires shared access.
    ///
    /// # Panics
    ///
    /// In debug builds, when the current thread already holds a pool lock.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        let held = held::Token::acquire();
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        RwLockReadGuard { inner, _held: held }
    }

    /// Acquires exclusive access.
    ///
    /// # Panics
    ///
    /// In debug builds, when the current thread already holds a pool lock.
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        let held = held::Token::acquire();
        let inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        RwLockWriteGuard { inner, _held: held }
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.try_read() {
            Ok(guard) => f.debug_struct("RwLock").field("data", &&*guard).finish(),
            Err(_) => f.write_str("RwLock { <locked> }"),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
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

/// Returns whether the current thread holds a pool lock (always `false` in release builds).
///
/// Used by assertions at the places where calling out (a waker, a listener, a connector) must
/// happen with no lock held.
pub fn holds_pool_lock() -> bool {
    held::count() > 0
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<u32> = const { Cell::new(0) };
    }

    /// Proof that the current thread counted one more held pool lock; uncounts it on drop.
    pub(super) struct Token(());

    impl Token {
        pub(super) fn acquire() -> Token {
            HELD.with(|held| {
                let n = held.get();
                assert!(
                    n == 0,
                    "pool lock discipline violated: a pool lock was acquired while this thread \
                     already holds {n} (rule 1: never hold two pool locks at once)"
                );
                held.set(n + 1);
            });
            Token(())
        }
    }

    impl Drop for Token {
        fn drop(&mut self) {
            HELD.with(|held| held.set(held.get() - 1));
        }
    }

    pub(super) fn count() -> u32 {
        HELD.with(Cell::get)
    }
}

#[cfg(not(debug_assertions))]
mod held {
    pub(super) struct Token(());

    impl Token {
        #[inline(always)]
        pub(super) fn acquire() -> Token {
            Token(())
        }
    }

    #[inline(always)]
    pub(super) fn count() -> u32 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutex_survives_a_panic_while_locked() {
        let m = Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("boom");
        })
        .join();
        *m.lock() += 1;
        assert_eq!(*m.lock(), 2);
    }

    #[test]
    #[cfg(debug_assertions)]
    fn holding_two_pool_locks_panics_in_debug_builds() {
        let a = Mutex::new(());
        let b = RwLock::new(());
        let _g = a.lock();
        assert!(holds_pool_lock());
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _r = b.read();
        }));
        assert!(result.is_err(), "second lock must be refused");
    }

    #[test]
    fn sequential_locks_are_fine() {
        let a = Mutex::new(1);
        let b = RwLock::new(2);
        let x = *a.lock();
        let y = *b.read();
        *b.write() += x;
        assert_eq!(x + y, 3);
        assert_eq!(*b.read(), 3);
        assert!(!holds_pool_lock());
    }
}
