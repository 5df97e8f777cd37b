//! Time as an input: the clock and the sleep the pool's maintenance uses.
//!
//! pool-core never reads a clock. The assembled pool takes a [`TimeSource`] and an
//! [`AsyncSleep`] from its builder (tokio's by default, so paused tokio time in tests moves the
//! pool's clock too) and passes instants into the coordination code.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

/// A source of the current instant.
pub trait TimeSource: fmt::Debug + Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// A boxed sleep future. `Sync` as well as `Send`, because hyper's timer requires it.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + Sync + 'static>>;

/// A way to wait.
pub trait AsyncSleep: fmt::Debug + Send + Sync + 'static {
    /// Completes once `duration` has elapsed.
    fn sleep(&self, duration: Duration) -> Sleep;
}
