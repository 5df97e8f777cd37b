//! Thread-per-core partitions: one pool over `N` single-threaded tokio runtimes, each on its own
//! named OS thread.
//!
//! [`ThreadPerCore`] starts the threads, builds the pool with one partition per thread
//! (optionally bound to a network interface), and runs work on partition `i` with a [`Client`]
//! of that partition: a request, its connection and the connection's driver then stay on one
//! thread, and the work's future need not be `Send`.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use pool::runtime::ThreadPerCore;
//!
//! let cores = ThreadPerCore::builder()
//!     .partitions(4)
//!     .build(pool::ConnectionPool::builder().max_connections_per_host(16))?;
//! let status = cores
//!     .spawn(0, |client| async move {
//!         let request = http::Request::get("http://127.0.0.1:8080/")
//!             .body(pool::RequestBody::empty())
//!             .expect("a valid request");
//!         Ok::<_, pool::Error>(client.request(request).await?.status())
//!     })
//!     .join()??;
//! println!("{status}");
//! cores.shutdown();
//! # Ok(())
//! # }
//! ```
//!
//! # Shutdown order
//!
//! [`ThreadPerCore::shutdown`] (or dropping it) first drops its pool handle, so the pool's idle
//! connections close while their drivers' runtimes still run, then stops each thread: the
//! thread leaves `block_on`, drops the tasks it still holds (clients included) inside its
//! runtime's context, and shuts the runtime down without waiting for blocking work (a name
//! lookup in flight). Clients the caller kept elsewhere keep the pool alive; their requests
//! then fail as canceled, since no runtime is left to establish connections on.
//!
//! What this module does not do: pin threads to CPUs (set affinity in
//! [`ThreadPerCoreBuilder::on_thread_start`] if wanted), or balance work between partitions
//! (the caller picks `i`; the pool's borrow and reclaim balance connections of bounded origins).

mod task;

use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::LocalSet;

use crate::builder::{BuildError, Builder};
use crate::client::Client;
use crate::partition::{Partition, TokioDriverSpawner};
use crate::pool::ConnectionPool;
use pool_core::PartitionId;

pub use task::{PartitionTask, TaskError};

/// Work sent to a partition thread: it spawns the caller's future there.
type Job = Box<dyn FnOnce() + Send>;

/// A hook run on each partition thread before its runtime starts, given the partition index.
type ThreadStart = Arc<dyn Fn(usize) + Send + Sync>;

/// Configures a [`ThreadPerCore`]; obtain one with [`ThreadPerCore::builder`].
#[derive(Clone)]
pub struct ThreadPerCoreBuilder {
    partitions: Option<usize>,
    thread_name: String,
    interface: Option<Arc<str>>,
    interfaces: Vec<(usize, Arc<str>)>,
    on_thread_start: Option<ThreadStart>,
}

impl ThreadPerCoreBuilder {
    /// How many partitions (threads) to start; by default one per available CPU
    /// (`std::thread::available_parallelism`). Zero is rejected by [`build`](Self::build).
    pub fn partitions(mut self, count: usize) -> Self {
        self.partitions = Some(count);
        self
    }

    /// The threads' name prefix: partition `i` runs on a thread named `{prefix}-{i}`
    /// (default `pool-partition`).
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = prefix.into();
        self
    }

    /// Binds every partition's sockets to this network interface (see
    /// [`Partition::interface`]).
    pub fn interface(mut self, name: impl Into<Arc<str>>) -> Self {
        self.interface = Some(name.into());
        self
    }

    /// Binds partition `index`'s sockets to this network interface, overriding
    /// [`interface`](Self::interface) for that partition (one uplink per partition).
    pub fn partition_interface(mut self, index: usize, name: impl Into<Arc<str>>) -> Self {
        self.interfaces.retain(|(i, _)| *i != index);
        self.interfaces.push((index, name.into()));
        self
    }

    /// Runs `hook` on each partition thread, given its index, before its runtime starts (to
    /// set CPU affinity, for example).
    pub fn on_thread_start(mut self, hook: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.on_thread_start = Some(Arc::new(hook));
        self
    }

    /// Starts the threads and builds `pool` with one partition per thread (replacing any
    /// partitions `pool` declared). Partition `i` has identity `PartitionId::from_index(i)`.
    ///
    /// # Errors
    ///
    /// When a thread or its runtime cannot be started, or the pool's settings are invalid;
    /// the threads already started are stopped.
    pub fn build(self, pool: Builder) -> Result<ThreadPerCore, ThreadPerCoreError> {
        let count = self.partitions.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let mut cores = ThreadPerCore {
            pool: None,
            handles: Vec::with_capacity(count),
            threads: Vec::with_capacity(count),
        };
        for index in 0..count {
            let (handle, thread) = self
                .start_thread(index)
                .map_err(|e| ThreadPerCoreError::thread(index, e))?;
            cores.handles.push(handle);
            cores.threads.push(thread);
        }
        let partitions = cores.handles.iter().enumerate().map(|(index, handle)| {
            let partition = Partition::new(
                partition_id(index),
                TokioDriverSpawner::from_handle(handle.clone()),
            );
            let interface = self
                .interfaces
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, name)| name)
                .or(self.interface.as_ref());
            match interface {
                Some(name) => partition.interface(name.clone()),
                None => partition,
            }
        });
        let built = pool
            .partitions(partitions)
            .build()
            .map_err(ThreadPerCoreError::build)?;
        cores.pool = Some(built);
        Ok(cores)
    }

    /// Starts partition `index`'s thread and returns its runtime's handle once it runs.
    fn start_thread(&self, index: usize) -> io::Result<(Handle, PartitionThread)> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel::<Job>();
        let hook = self.on_thread_start.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{}-{index}", self.thread_name))
            .spawn(move || {
                if let Some(hook) = hook {
                    hook(index);
                }
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
                run_partition(runtime, jobs_rx);
            })?;
        let handle = ready_rx
            .recv()
            .map_err(|_| io::Error::other("the partition thread ended during startup"))??;
        Ok((
            handle,
            PartitionThread {
                jobs: Some(jobs_tx),
                thread: Some(thread),
            },
        ))
    }
}

/// The body of a partition thread: runs jobs (and everything they and the pool spawn) until the
/// job channel closes, then drops what is left inside the runtime and shuts it down.
fn run_partition(runtime: tokio::runtime::Runtime, mut jobs: mpsc::UnboundedReceiver<Job>) {
    let local = LocalSet::new();
    runtime.block_on(local.run_until(async move {
        while let Some(job) = jobs.recv().await {
            job();
        }
    }));
    {
        let _context = runtime.enter();
        drop(local);
    }
    runtime.shutdown_background();
}

impl fmt::Debug for ThreadPerCoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPerCoreBuilder")
            .field("partitions", &self.partitions)
            .field("thread_name", &self.thread_name)
            .field("interface", &self.interface)
            .field("interfaces", &self.interfaces)
            .finish_non_exhaustive()
    }
}

/// One thread and the sender of its jobs.
#[derive(Debug)]
struct PartitionThread {
    /// Closing it (dropping it) ends the thread.
    jobs: Option<mpsc::UnboundedSender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// A pool whose partitions each run on a current-thread tokio runtime of their own, on a named
/// OS thread (see the [module docs](self)).
pub struct ThreadPerCore {
    pool: Option<ConnectionPool>,
    handles: Vec<Handle>,
    threads: Vec<PartitionThread>,
}

fn partition_id(index: usize) -> PartitionId {
    PartitionId::from_index(u32::try_from(index).unwrap_or(u32::MAX))
}

impl ThreadPerCore {
    /// Starts configuring the threads.
    pub fn builder() -> ThreadPerCoreBuilder {
        ThreadPerCoreBuilder {
            partitions: None,
            thread_name: "pool-partition".to_owned(),
            interface: None,
            interfaces: Vec::new(),
            on_thread_start: None,
        }
    }

    /// The pool (for stats, counters and clients).
    pub fn pool(&self) -> &ConnectionPool {
        self.pool
            .as_ref()
            .expect("the pool lives until shutdown, which consumes self")
    }

    /// How many partitions there are.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Always `false`: a `ThreadPerCore` has at least one partition.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// The identity of partition `index` (`PartitionId::from_index(index)`).
    pub fn partition_id(&self, index: usize) -> PartitionId {
        partition_id(index)
    }

    /// A client of partition `index`.
    ///
    /// # Panics
    ///
    /// When `index >= len()`.
    pub fn client(&self, index: usize) -> Client {
        self.pool()
            .client_for(partition_id(index))
            .unwrap_or_else(|_| panic!("no partition {index}; there are {}", self.len()))
    }

    /// The runtime of each partition, by index, for spawning onto directly (its tasks must be
    /// `Send`; [`spawn`](Self::spawn) takes any future).
    pub fn runtimes(&self) -> &[Handle] {
        &self.handles
    }

    /// Runs `work` on partition `index`'s thread with a client of that partition. The future
    /// `work` returns runs there to completion and need not be `Send`; its output comes back
    /// through the returned [`PartitionTask`] (await it, or [`join`](PartitionTask::join) it
    /// from a thread outside any runtime).
    ///
    /// # Panics
    ///
    /// When `index >= len()`.
    pub fn spawn<F, Fut>(&self, index: usize, work: F) -> PartitionTask<Fut::Output>
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: std::future::Future + 'static,
        Fut::Output: Send + 'static,
    {
        let client = self.client(index);
        let (task, done) = PartitionTask::new();
        let job: Job = Box::new(move || {
            let running = tokio::task::spawn_local(work(client));
            tokio::task::spawn_local(async move { done.finish(running.await) });
        });
        if let Some(jobs) = &self.threads[index].jobs {
            // A stopped thread drops the job, and with it `done`: the task reports it.
            let _ = jobs.send(job);
        }
        task
    }

    /// Drops the pool handle, then stops every thread and waits for it (see the module docs
    /// for the order). Dropping a `ThreadPerCore` does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        drop(self.pool.take());
        for thread in &mut self.threads {
            drop(thread.jobs.take());
        }
        for thread in &mut self.threads {
            if let Some(handle) = thread.thread.take() {
                // A thread only panics in a user's `on_thread_start` hook or a job; the panic
                // was already reported on that thread.
                let _ = handle.join();
            }
        }
    }
}

impl Drop for ThreadPerCore {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Debug for ThreadPerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPerCore")
            .field("partitions", &self.len())
            .field("pool", &self.pool)
            .finish()
    }
}

/// Why [`ThreadPerCoreBuilder::build`] failed.
#[derive(Debug)]
pub struct ThreadPerCoreError {
    what: String,
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl ThreadPerCoreError {
    fn thread(index: usize, error: io::Error) -> ThreadPerCoreError {
        ThreadPerCoreError {
            what: format!("starting partition thread {index} failed"),
            source: Box::new(error),
        }
    }

    /// The pool setting that was rejected, when that is what failed.
    pub fn build_error(&self) -> Option<&BuildError> {
        self.source.downcast_ref::<BuildError>()
    }

    fn build(error: BuildError) -> ThreadPerCoreError {
        ThreadPerCoreError {
            what: "building the pool failed".to_owned(),
            source: Box::new(error),
        }
    }
}

/// This level only; the cause is `source()`'s (the crate's chain convention).
impl fmt::Display for ThreadPerCoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for ThreadPerCoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}
