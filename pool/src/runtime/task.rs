//! The result of work run on a partition thread.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio::task::JoinError;

/// Work running on a partition thread ([`ThreadPerCore::spawn`](super::ThreadPerCore::spawn)):
/// a future of its output, or [`join`](Self::join) it from a thread outside any runtime.
///
/// Dropping it does not stop the work.
pub struct PartitionTask<T> {
    done: oneshot::Receiver<Result<T, JoinError>>,
}

/// The sending half, moved to the partition thread.
pub(super) struct Done<T>(oneshot::Sender<Result<T, JoinError>>);

impl<T> Done<T> {
    pub(super) fn finish(self, result: Result<T, JoinError>) {
        let _ = self.0.send(result);
    }
}

impl<T> PartitionTask<T> {
    pub(super) fn new() -> (PartitionTask<T>, Done<T>) {
        let (tx, rx) = oneshot::channel();
        (PartitionTask { done: rx }, Done(tx))
    }

    /// Blocks the current thread until the work finishes.
    ///
    /// # Errors
    ///
    /// When the work panicked, or its partition stopped before it finished.
    ///
    /// # Panics
    ///
    /// When called from inside an asynchronous runtime (await the task there instead).
    pub fn join(self) -> Result<T, TaskError> {
        outcome(self.done.blocking_recv())
    }
}

fn outcome<T>(
    received: Result<Result<T, JoinError>, oneshot::error::RecvError>,
) -> Result<T, TaskError> {
    match received {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(join)) if join.is_panic() => Err(TaskError {
            panic: Some(Mutex::new(join.into_panic())),
        }),
        Ok(Err(_)) | Err(_) => Err(TaskError { panic: None }),
    }
}

impl<T> Future for PartitionTask<T> {
    type Output = Result<T, TaskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.done).poll(cx).map(outcome)
    }
}

impl<T> fmt::Debug for PartitionTask<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionTask").finish_non_exhaustive()
    }
}

/// Why a [`PartitionTask`] has no output: the work panicked, or its partition stopped first.
pub struct TaskError {
    /// The panic's payload (behind a lock only so the error is `Sync`, as error types are
    /// expected to be).
    panic: Option<Mutex<Box<dyn Any + Send + 'static>>>,
}

impl TaskError {
    /// Whether the work panicked.
    pub fn is_panic(&self) -> bool {
        self.panic.is_some()
    }

    /// Re-raises the work's panic on this thread; returns the error itself when it was not a
    /// panic.
    pub fn resume_panic(self) -> TaskError {
        match self.panic {
            Some(payload) => std::panic::resume_unwind(
                payload.into_inner().unwrap_or_else(PoisonError::into_inner),
            ),
            None => self,
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskError")
            .field("panic", &self.is_panic())
            .finish()
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.panic {
            Some(_) => "the partition task panicked",
            None => "the partition stopped before the task finished",
        })
    }
}

impl std::error::Error for TaskError {}
