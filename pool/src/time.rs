//! The default time inputs: tokio's clock and sleep.
//!
//! Both go through `tokio::time`, so a test that pauses tokio's clock moves the pool's idle
//! deadlines, its maintenance sleeps and hyper's timer together.

use std::time::{Duration, Instant};

use pool_core::{AsyncSleep, Sleep, TimeSource};

/// Reads tokio's clock (`tokio::time::Instant::now`), which follows paused test time.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioTime;

impl TimeSource for TokioTime {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// Sleeps with `tokio::time::sleep`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleep;

impl AsyncSleep for TokioSleep {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
}
