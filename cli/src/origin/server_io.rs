//! The glue between tokio and hyper's server connections: [`SpawnExecutor`] runs hyper's
//! HTTP/2 stream tasks on the current tokio runtime. Sockets are adapted to hyper's IO traits
//! by the pool's own [`pool::TokioIo`] (reads land in hyper's buffer without a copy).
//!
//! What this does not do: hyper's `Timer` (the origin sets no timeouts that need one).

use std::future::Future;

/// Spawns hyper's background futures onto the current tokio runtime.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SpawnExecutor;

impl<F> hyper::rt::Executor<F> for SpawnExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        drop(tokio::spawn(future));
    }
}
