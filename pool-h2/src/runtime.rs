//! hyper's `Executor` and `Timer`, without hyper-util.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pool_core::sync::Arc;
use pool_core::{AsyncSleep, DriverSpawner, TimeSource};

/// Spawns every task hyper creates for a connection onto the connection's partition.
///
/// Each task is polled holding the connection's [`Turn`], which the connection's driver also
/// holds while it polls hyper's dispatch task. That serialises them on a multi-thread runtime:
/// otherwise h2's connection task, on another thread, can read a GOAWAY while the dispatch task
/// is between handing a request to h2 and its next `poll_ready`, and the dispatch task then
/// fails that request with the GOAWAY's error and cancels its stream, although the stream was
/// sent within the GOAWAY's last stream id (an error the pool takes as proof that the request
/// was not processed). On a current-thread runtime the turn is never contended.
#[derive(Clone)]
pub struct PartitionExecutor {
    spawner: Arc<dyn DriverSpawner>,
    turn: Turn,
}

impl PartitionExecutor {
    /// An executor spawning through `spawner`, its tasks taking `turn` while polled.
    pub fn new(spawner: Arc<dyn DriverSpawner>, turn: Turn) -> Self {
        PartitionExecutor { spawner, turn }
    }
}

impl<F> hyper::rt::Executor<F> for PartitionExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.spawner.spawn(Box::pin(InTurn {
            turn: self.turn.clone(),
            future,
        }));
    }
}

/// One connection's turn: at most one of its hyper tasks (and its driver) is polled at a time.
#[derive(Clone, Debug, Default)]
pub struct Turn(std::sync::Arc<std::sync::Mutex<()>>);

impl Turn {
    /// Holds the turn for the guard's life.
    pub(crate) fn take(&self) -> std::sync::MutexGuard<'_, ()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pin_project_lite::pin_project! {
    /// A hyper task polled in its connection's turn.
    struct InTurn<F> {
        turn: Turn,
        #[pin]
        future: F,
    }
}

impl<F: Future<Output = ()>> Future for InTurn<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let _turn = this.turn.take();
        this.future.poll(cx)
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
