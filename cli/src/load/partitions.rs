//! The partitions' threads: one OS thread per partition, each running a tokio current-thread
//! runtime until the run is over.
//!
//! A current-thread runtime runs its tasks only while a thread is inside its `block_on`, so
//! each thread blocks on a stop signal for the whole run; workers and the pool's connection
//! drivers are spawned onto it through its [`Handle`]. A worker and the connections it uses
//! therefore share one thread: no request or response crosses threads on the hot path.
//!
//! Shutdown drops the runtimes in the background (their tasks, connection drivers included,
//! are dropped without being polled again); the summary is taken before that.

use std::io;
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The running partition threads.
#[derive(Debug)]
pub(crate) struct PartitionThreads {
    /// Each partition's runtime, by partition index.
    handles: Vec<Handle>,
    /// Each thread's stop signal; sending (or dropping) it ends the thread.
    stops: Vec<oneshot::Sender<()>>,
    /// The threads, joined on shutdown.
    threads: Vec<JoinHandle<()>>,
}

impl PartitionThreads {
    /// Starts `count` threads, each with its own current-thread runtime.
    ///
    /// # Errors
    ///
    /// When a thread or runtime cannot be created (the threads already started are stopped).
    pub(crate) fn start(count: usize) -> io::Result<PartitionThreads> {
        let mut started = PartitionThreads {
            handles: Vec::with_capacity(count),
            stops: Vec::with_capacity(count),
            threads: Vec::with_capacity(count),
        };
        for index in 0..count {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("poolcurl-partition-{index}"))
                .spawn(move || {
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(async {
                        let _ = stop_rx.await;
                    });
                    runtime.shutdown_background();
                })?;
            started.threads.push(thread);
            started.stops.push(stop_tx);
            let handle = ready_rx
                .recv()
                .map_err(|_| io::Error::other("a partition thread ended during startup"))??;
            started.handles.push(handle);
        }
        Ok(started)
    }

    /// The runtime of each partition, by index.
    pub(crate) fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// Stops every thread and waits for them.
    pub(crate) fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for PartitionThreads {
    fn drop(&mut self) {
        self.stop_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_run_on_their_partition_thread() {
        let threads = PartitionThreads::start(2).unwrap();
        let names: Vec<String> = threads
            .handles()
            .iter()
            .map(|handle| {
                let (tx, rx) = std::sync::mpsc::channel();
                handle.spawn(async move {
                    let _ = tx.send(std::thread::current().name().map(str::to_owned));
                });
                rx.recv().unwrap().unwrap()
            })
            .collect();
        assert_eq!(names, ["poolcurl-partition-0", "poolcurl-partition-1"]);
        threads.shutdown();
    }
}
