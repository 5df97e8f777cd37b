//! hyper's `Executor` and `Timer`, without hyper-util.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pool_core::sync::Arc;
use pool_core::{AsyncSleep, DriverSpawner, TimeSource};

/// Spawns every task hyper creates for a connection onto the connection's partition.
#[derive(Clone)]
pub struct PartitionExecutor {
    spawner: Arc<dyn DriverSpawner>,
}

impl PartitionExecutor {
    /// An executor spawning through `spawner`.
    pub fn new(spawner: Arc<dyn DriverSpawner>) -> Self {
        PartitionExecutor { spawner }
    }
}

impl<F> hyper::rt::Executor<F> for PartitionExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.spawner.spawn(Box::pin(future));
    }
}

impl fmt::Debug for PartitionExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionExecutor")
            .field("spawner", &self.spawner)
            .finish()
    }
}

/// hyper's timer on the pool's time inputs. `now()` is overridden so that hyper measures
/// keep-alive and timeouts on the same clock as the pool (tokio's paused clock in tests).
#[derive(Clone)]
pub struct PoolTimer {
    time: Arc<dyn TimeSource>,
    sleep: Arc<dyn AsyncSleep>,
}

impl PoolTimer {
    /// A timer reading `time` and sleeping with `sleep`.
    pub fn new(time: Arc<dyn TimeSource>, sleep: Arc<dyn AsyncSleep>) -> Self {
        PoolTimer { time, sleep }
    }
}

impl hyper::rt::Timer for PoolTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TimerSleep(self.sleep.sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let duration = deadline.saturating_duration_since(self.time.now());
        Box::pin(TimerSleep(self.sleep.sleep(duration)))
    }

    fn now(&self) -> Instant {
        self.time.now()
    }
}

impl fmt::Debug for PoolTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolTimer")
            .field("time", &self.time)
            .field("sleep", &self.sleep)
            .finish()
    }
}

/// A pool sleep presented as hyper's `Sleep`.
struct TimerSleep(pool_core::Sleep);

impl Future for TimerSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for TimerSleep {}
