//! Time as an input: the clock and the sleep the pool's maintenance uses.
//!
//! pool-core never reads a clock. The assembled pool takes a [`TimeSource`] and an
//! [`AsyncSleep`] from its builder (tokio's by default, so paused tokio time in tests moves the
//! pool's clock too) and passes instants into the coordination code.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
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

/// A connect timeout as a request carries it to the establishment launched on its behalf: the
/// limit, and the sleep that measures it when the request's client names one (`None`: the
/// connector's own timer).
///
/// The sleep is part of the timeout because a caller may run on a timer of its own (an SDK
/// operation's `AsyncSleep`, a simulated clock): the whole establishment (resolution, TCP,
/// TLS) is then raced against that timer, not against tokio's.
#[derive(Clone, Debug)]
pub struct ConnectTimeout {
    limit: Duration,
    sleep: Option<Arc<dyn AsyncSleep>>,
}

impl ConnectTimeout {
    /// A timeout of `limit`, measured by `sleep` (or the connector's timer when `None`).
    pub fn new(limit: Duration, sleep: Option<Arc<dyn AsyncSleep>>) -> ConnectTimeout {
        ConnectTimeout { limit, sleep }
    }

    /// How long establishment may take.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The sleep that measures the limit, when the caller named one.
    pub fn sleep(&self) -> Option<&Arc<dyn AsyncSleep>> {
        self.sleep.as_ref()
    }
}
