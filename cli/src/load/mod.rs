//! `poolcurl load`: drive concurrent load through the partitions of one pool and show what the
//! pool did, which no load tool shows (oha, h2load, hey and wrk report requests and latency,
//! not connections opened versus reused, why connections closed, or how long requests waited
//! for a permit).
//!
//! ```text
//! main thread                          partition threads (one current-thread runtime each)
//! ───────────                          ─────────────────────────────────────────────────
//! parse, validate (bad flags: exit 2)
//! [--local: start the origin on its own runtime and threads]
//! start P partition threads ─────────► runtime 0 … runtime P-1
//! build ONE pool: partition i spawns its connections on runtime i; an event listener counts
//! spawn -c workers round-robin ──────► worker w on runtime w % P, client_for(w % P):
//!                                        take slot ─ request ─ body ─ record (its own)
//! every 50 ms: sample gauges, draw progress (stderr, terminals only)
//! Ctrl-C: stop starting requests; again: abort those in flight
//! join workers ◄────────────────────── each worker's Record (+ each partition's histograms)
//! merge, add events, counters, peak ─ summary on stdout (text or JSON)
//! ```
//!
//! Design decisions:
//!
//! * A worker and the connections it uses live on one thread: the pool's partition i spawns
//!   its establishments and drivers on runtime i, and worker w only asks partition `w % P`.
//!   Nothing on the hot path crosses threads except the `-n` / `--rate` slot counter (one
//!   atomic add per request) and, when connections are borrowed, the pool's own hand-offs.
//! * Workers keep their own counters ([`record`]) and hand them back at the end; latency
//!   samples go to their partition's histograms in batches, under a mutex only that
//!   partition's thread takes. No lock is taken per request, and none is ever contended. The
//!   progress display reads per-partition atomics that only the partition's own thread writes.
//! * Per request, a worker does as little as it can besides the exchange: the request is a
//!   copy of its URL's request, built once by curl mode's template ([`prototype`]); header
//!   names go out in lower case (curl mode title-cases them); the clock is read three times
//!   (start, head, end); and the binary links mimalloc, since the exchange allocates a few
//!   small blocks on every partition thread.
//! * `P` is one partition per CPU unless `--partitions` says otherwise (no more than `-c`):
//!   oha's, hey's and k6's runtimes use every CPU by default, and a tool of one thread against
//!   them would be measuring its own limit on any machine with more than one core. On a
//!   machine where the server shares the cores (loopback) one partition can have the lower
//!   tail latency (fewer busy threads than cores); `--partitions 1` asks for it.
//! * `-c` is requests in flight, not connections: how many connections those need is the
//!   pool's decision, and the summary reports it. For HTTP/1.1 it never exceeds `-c` per
//!   partition's share (the pool hands an establishment whose request was served by a returning
//!   connection to the next request that misses, rather than dialing again); with
//!   `--max-connections-per-host` the bound applies on top. `connections.opened` minus
//!   `connections.used` shows connections that never carried a request.
//! * The summary is taken when the last worker ends, before the pool is dropped: connections
//!   still open then are reported as `open_at_end`, not as closed by `pool_dropped`. With
//!   `--local` it first waits for dials still in flight and for the origin's accept loop to
//!   catch up, so `connections.opened` and the origin's `accepted` count the same connections.
//! * At the `-z` deadline no request is started; those in flight finish and count. One still
//!   running [`DRAIN_LIMIT`] after the deadline (or one second after `-m`, with `-m`) is
//!   aborted and reported as `aborted`. The first Ctrl-C acts like the deadline (no new
//!   requests, those in flight finish); a second one aborts those in flight.
//! * The connect timeout is [`DEFAULT_CONNECT_TIMEOUT`] unless `--connect-timeout` says
//!   otherwise (curl's 300 s would stall a run against a black-holed address).
//! * Exit status: 0 when every request succeeded (an HTTP status is not a failure unless
//!   `--fail`), 1 when any failed or was aborted, 2 for bad flags and for anything that stops
//!   the run before its first request (an unreadable `--cacert`, a setting the pool rejects).
//!   Unreachable hosts are not setup failures: their requests fail and are counted by class.
//!
//! * Several URLs ([`targets`]) are spread round-robin: worker `w` starts at URL `w % urls`
//!   and moves to the next one after each request, so every worker, partition and origin mix
//!   (a gateway's pattern: cells of several origins on every partition). The summary breaks
//!   requests and connections down by origin, and the run by second ([`timeline`]).
//! * `--ramp` spreads the workers' starts (closed loop) or raises the rate (open loop) over its
//!   duration ([`schedule`]).
//!
//! What this mode does not do: ramp stages (one linear ramp only), HTTP/3, per-URL breakdowns
//! (per origin only), or coordinating load across processes.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use clap::ArgMatches;
use clap::error::ErrorKind;
use http::Uri;
use pool::runtime::ThreadPerCore;
use pool::{ConnectionPool, OriginKey, PartitionId};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinSet;

mod args;
mod events;
mod lessons;
mod progress;
mod prototype;
mod record;
mod sampler;
mod schedule;
mod summary;
mod targets;
mod timeline;
mod volume;
mod warmup;
mod worker;

use prototype::Prototype;

pub(crate) use args::LoadArgs;

use crate::curl::args::Bind;
use crate::curl::connect_to::ConnectToArgs;
use crate::curl::request::RequestTemplate;
use crate::curl::setup;
use crate::origin::{Flavor, LocalOrigin};
use args::{OutputFormat, Target};
use events::EventCounts;
use lessons::Lessons;
use progress::Progress;
use record::{Latencies, Record};
use sampler::{Held, SAMPLE_EVERY, Sampler};
use schedule::Schedule;
use summary::{Facts, LocalFacts, PartitionResult, RunConfig, Summary};
use warmup::WarmUp;
use worker::{PartitionGauges, RunShared, Worker};

/// The connect timeout when `--connect-timeout` is not given.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests in flight at the `-z` deadline may take before they are aborted.
pub(crate) const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// Runs `poolcurl load`; `matches` are the subcommand's matches.
pub(crate) fn run(args: LoadArgs, matches: &ArgMatches) -> ExitCode {
    if let Err(error) = validate(&args) {
        let _ = error.print();
        return ExitCode::from(2);
    }
    match prepare_and_run(&args, matches) {
        Ok(summary) => {
            let output = match args.output_format {
                OutputFormat::Text => summary.text(),
                OutputFormat::Json => format!("{:#}\n", summary.json()),
                OutputFormat::Csv => timeline::csv(&summary.timeline()),
            };
            // A closed stdout (`| head`) is not worth a panic; the exit status still tells.
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), output.as_bytes());
            if summary.succeeded() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(message) => {
            eprintln!("poolcurl load: {message}");
            ExitCode::from(2)
        }
    }
}

/// The checks clap's definition cannot express, reported as clap's usage errors.
fn validate(args: &LoadArgs) -> Result<(), clap::Error> {
    let url = args.targets.iter().find(|t| matches!(t, Target::Url(_)));
    let path = args.targets.iter().find(|t| matches!(t, Target::Path(_)));
    match (args.local, url, path) {
        (true, Some(Target::Url(url)), _) => Err(usage_error(format!(
            "with --local, give paths on the local origin (such as /bytes/1024), not URLs: '{url}'"
        ))),
        (false, _, Some(Target::Path(path))) => Err(usage_error(format!(
            "'{path}' is a path; give a full URL, or use --local to load the local origin"
        ))),
        _ => Ok(()),
    }
}

/// A usage error of the `load` subcommand, formatted by clap (exit status 2).
fn usage_error(message: String) -> clap::Error {
    use clap::CommandFactory;
    let mut command = crate::Cli::command();
    command.build();
    match command.find_subcommand_mut("load") {
        Some(load) => load.error(ErrorKind::ArgumentConflict, message),
        None => command.error(ErrorKind::ArgumentConflict, message),
    }
}

/// Everything from setup to summary; `Err` is a setup failure (exit 2).
fn prepare_and_run(args: &LoadArgs, matches: &ArgMatches) -> Result<Summary, String> {
    let data = args.request.data_in_order(matches);
    let template =
        RequestTemplate::new(&args.request, false, &data).map_err(|e| e.message().to_owned())?;
    // For requests that can only go over HTTP/1.1: they carry their `Host` (see `prototype`).
    let mut h1_template = template.clone();
    h1_template.send_host();
    let origin = match args.local {
        true => Some(
            LocalOrigin::start(usize::try_from(args.local_threads).unwrap_or(1))
                .map_err(|e| format!("{e:#}"))?,
        ),
        false => None,
    };
    let flavor = local_flavor(args);
    let urls = targets::urls(&targets::all(args)?, origin.as_ref(), flavor)?;
    let (origins, url_origins) = targets::origins(&urls);
    // A `--connect-to` entry with a bad port fails the run before it starts, where curl mode
    // fails each transfer it matches.
    let connect_to = ConnectToArgs::parse(&args.connect.connect_to);
    for origin in &origins {
        connect_to
            .check(origin.host(), origin.port())
            .map_err(|e| e.message().to_owned())?;
    }
    let partition_count = args.partition_count();
    let events = EventCounts::new(partition_count);
    let cores = build_pool(args, &connect_to, partition_count, &events, origin.as_ref())?;
    let pool = cores.pool().clone();
    let warmup = match args.preconnect {
        Some(n) if n > 0 => Some(WarmUp::run(
            &pool,
            cores.runtimes(),
            &partition_ids(partition_count),
            &urls,
            n,
        )?),
        _ => None,
    };

    let volume = args.volume();
    let start = Instant::now();
    events.start_run(start);
    let run = Arc::new(RunShared {
        schedule: Schedule::new(start, volume, args.rate, args.ramp),
        requests: per_partition(
            urls.iter()
                .map(|uri| match http1_only(args, uri) {
                    true => Prototype::of(&h1_template, uri),
                    false => Prototype::of(&template, uri),
                })
                .collect(),
            partition_count,
        ),
        url_origins,
        concurrency: usize::try_from(args.concurrency).unwrap_or(1),
        max_time: args.max_time.filter(|t| !t.is_zero()),
        fail: args.fail,
        gauges: (0..partition_count)
            .map(|_| PartitionGauges::default())
            .collect(),
        latencies: (0..partition_count)
            .map(|_| Mutex::new(Latencies::default()))
            .collect(),
    });
    let mut sampler = Sampler::new(origins.clone(), partition_ids(partition_count), start);
    let progress = Progress::new(volume, partition_count, start, args.no_progress);
    let drain = args
        .max_time
        .map_or(DRAIN_LIMIT, |m| m + Duration::from_secs(1));
    let driven = drive(
        &pool,
        cores.runtimes(),
        &run,
        args.concurrency,
        &mut sampler,
        progress,
        drain,
    )?;

    let mut per_partition: Vec<PartitionResult> = run
        .latencies
        .iter()
        .map(|latencies| PartitionResult {
            record: Record::default(),
            latencies: std::mem::take(
                &mut *latencies.lock().unwrap_or_else(PoisonError::into_inner),
            ),
            held: Held::default(),
        })
        .collect();
    for (partition, record) in &driven.records {
        if let Some(result) = per_partition.get_mut(*partition) {
            result.record.merge(record);
        }
    }
    for (result, held) in per_partition.iter_mut().zip(sampler.held()) {
        result.held = held;
    }
    let lessons = Lessons::read(&pool, &origins);
    // Against the local origin the summary sets what the pool opened beside what the origin
    // accepted, so both are read at a point where they can agree: no dial in flight (one
    // launched for a request that a returning connection then served can still be connecting
    // when the last request ends), then the origin's accept loop caught up, then the events.
    let local = origin.as_ref().map(|origin| {
        settle_dials(&pool, &origins);
        LocalFacts {
            origin: origin.url(flavor, ""),
            accepted: origin.accepted(flavor),
        }
    });
    let facts = Facts {
        config: run_config(args, &urls, partition_count),
        duration: driven.duration,
        partitions: per_partition,
        origins,
        events: events.snapshot(),
        counters: pool.counters(),
        peak_admitted: sampler.peak_admitted(),
        second_peaks: sampler.per_second().to_vec(),
        warmup,
        slots: run.schedule.slots(),
        local,
        request_quotas: lessons.request_quotas,
        uploads_one_at_a_time: lessons.uploads_one_at_a_time,
        larger_stream_window: lessons.larger_stream_window,
        sends_empty_data_frames: lessons.sends_empty_data_frames,
        server_idle_timeouts: lessons.server_idle_timeouts,
    };
    drop(pool);
    cores.shutdown();
    drop(origin);
    Ok(Summary::new(facts))
}

/// Waits until no origin has a connection being established, at most [`SETTLE_DIALS_LIMIT`]
/// (a loopback dial takes microseconds; the bound is for a dial that hangs). The pool has no
/// notification for its `establishing` gauge reaching zero, so this reads it every
/// millisecond; it does so only when a dial is in flight at the end, which is rare.
fn settle_dials(pool: &ConnectionPool, origins: &[OriginKey]) {
    let deadline = Instant::now() + SETTLE_DIALS_LIMIT;
    while origins.iter().any(|o| pool.stats(o).establishing() > 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How long [`settle_dials`] waits at most.
const SETTLE_DIALS_LIMIT: Duration = Duration::from_secs(1);

/// Which local listener the protocol flags pick.
fn local_flavor(args: &LoadArgs) -> Flavor {
    if args.connect.http2_prior_knowledge {
        Flavor::H2c
    } else if args.connect.http2 {
        Flavor::Tls
    } else {
        Flavor::Http1
    }
}

/// `prototypes` for each of `count` partitions, each partition's in buffers of its own.
fn per_partition(
    prototypes: Vec<Result<Prototype, String>>,
    count: usize,
) -> Box<[Vec<Result<Prototype, String>>]> {
    let copy = |list: &[Result<Prototype, String>]| {
        list.iter()
            .map(|p| p.as_ref().map(Prototype::own_copy).map_err(Clone::clone))
            .collect()
    };
    let mut lists: Vec<_> = (1..count.max(1)).map(|_| copy(&prototypes)).collect();
    lists.insert(0, prototypes);
    lists.into_boxed_slice()
}

fn partition_ids(count: usize) -> Vec<PartitionId> {
    (0..count)
        .map(|i| PartitionId::from_index(u32::try_from(i).unwrap_or(u32::MAX)))
        .collect()
}

/// The one pool of the run, on one thread per partition (`pool::runtime::ThreadPerCore`, each
/// partition bound to `--interface` if given): curl mode's protocol, TLS and `--resolve`
/// settings, the bounds and the event listener.
fn build_pool(
    args: &LoadArgs,
    connect_to: &ConnectToArgs,
    partitions: usize,
    events: &Arc<EventCounts>,
    origin: Option<&LocalOrigin>,
) -> Result<ThreadPerCore, String> {
    let connect = &args.connect;
    let proxies = setup::proxy_config(connect, None).map_err(|e| e.message().to_owned())?;
    let mut builder = setup::pool_builder(connect, connect_to, proxies.as_ref())
        .map_err(|e| e.message().to_owned())?;
    if let Some(origin) = origin {
        builder = builder.add_root_certificates_pem(origin.ca_pem().as_bytes().to_vec());
        if connect.cacert.is_none() {
            // Only the local origin is loaded: the platform's roots are not needed.
            builder = builder.native_roots(false);
        }
    }
    let mut threads = ThreadPerCore::builder()
        .partitions(partitions)
        .thread_name("poolcurl-partition");
    match connect.bind() {
        Some(Bind::Device(name)) => threads = threads.interface(name),
        Some(Bind::Address(address)) => builder = builder.local_address(Some(address)),
        None => {}
    }
    // Header names go out as `http` stores them (lower case), as load tools send them: curl
    // mode's title case costs a pass over every name of every request.
    builder = builder
        .http1_title_case_headers(false)
        .event_listener(events.listener())
        .connection_reuse_scope(args.reuse_scope.to_pool())
        .connect_timeout(Some(setup::connect_timeout(
            connect,
            DEFAULT_CONNECT_TIMEOUT,
        )));
    if let Some(limit) = args.max_connections_per_host {
        builder = builder.max_connections_per_host(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    if let Some(pending) = args.max_pending_per_host {
        builder = builder.max_pending_per_host(usize::try_from(pending).unwrap_or(usize::MAX));
    }
    if let Some(tolerance) = args.placement_tolerance {
        builder = builder.placement_tolerance(tolerance);
    }
    if let Some(idle) = args.idle_timeout {
        builder = builder.idle_timeout(idle.0);
    }
    if let Some(max) = args.max_idle_per_host {
        builder = builder.max_idle_per_host(usize::try_from(max).unwrap_or(usize::MAX));
    }
    if let Some(max) = args.max_idle_connections {
        builder = builder.max_idle_connections(usize::try_from(max).unwrap_or(usize::MAX));
    }
    builder = builder
        .max_connection_lifetime(args.max_connection_lifetime)
        .pool_timeout(args.pool_timeout);
    if let Some(connections) = args.http2_max_connections {
        builder = builder
            .http2_max_connections_per_origin(usize::try_from(connections).unwrap_or(usize::MAX));
    }
    if let Some(window) = args.http2_stream_window {
        builder = builder.http2_initial_stream_window_size(Some(window));
    }
    threads.build(builder).map_err(|e| match e.build_error() {
        Some(rejected) => setup::build_error(connect, rejected).message().to_owned(),
        None => format!("starting the partition threads: {e:#}"),
    })
}

/// Whether a request to `uri` can only go over HTTP/1.1: `--http1.1`, or a cleartext URL
/// without `--http2-prior-knowledge` (HTTP/2 over TLS needs ALPN's say).
fn http1_only(args: &LoadArgs, uri: &Uri) -> bool {
    let connect = &args.connect;
    connect.http1_1 || (uri.scheme_str() == Some("http") && !connect.http2_prior_knowledge)
}

/// The configuration as the summary reports it.
fn run_config(args: &LoadArgs, urls: &[Uri], partitions: usize) -> RunConfig {
    let connect = &args.connect;
    let protocol = if connect.http1_1 {
        "http1.1"
    } else if connect.http2_prior_knowledge {
        "http2-prior-knowledge"
    } else if connect.http2 {
        "http2"
    } else {
        "auto"
    };
    RunConfig {
        urls: urls.iter().map(ToString::to_string).collect(),
        concurrency: args.concurrency,
        partitions,
        volume: args.volume(),
        rate: args.rate,
        ramp: args.ramp.filter(|r| !r.is_zero()),
        protocol,
        max_connections_per_host: args.max_connections_per_host,
        max_pending_per_host: args.max_pending_per_host,
        reuse_scope: args.reuse_scope.as_str(),
        idle_timeout: match args.idle_timeout {
            Some(idle) => idle.0,
            None => Some(pool::DEFAULT_IDLE_TIMEOUT),
        },
        max_idle_per_host: args.max_idle_per_host,
        max_idle_connections: args.max_idle_connections,
        connect_timeout: setup::connect_timeout(connect, DEFAULT_CONNECT_TIMEOUT),
        max_connection_lifetime: args.max_connection_lifetime,
        pool_timeout: args.pool_timeout,
        max_time: args.max_time.filter(|t| !t.is_zero()),
        interface: connect.interface.clone(),
        fail: args.fail,
        local: args.local,
    }
}

/// What the workers produced.
#[derive(Debug)]
struct Driven {
    /// Each worker's partition index and record.
    records: Vec<(usize, Record)>,
    /// From the run's start to the end of the last worker.
    duration: Duration,
}

/// Spawns the workers and watches them on a small runtime of the main thread: sampling,
/// progress, the drain limit and Ctrl-C.
fn drive(
    pool: &ConnectionPool,
    handles: &[Handle],
    run: &Arc<RunShared>,
    concurrency: u32,
    sampler: &mut Sampler,
    mut progress: Option<Progress>,
    drain: Duration,
) -> Result<Driven, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the main runtime: {e}"))?;
    let ids = partition_ids(handles.len());
    let outcome = runtime.block_on(async {
        let (abort, aborted) = watch::channel(false);
        let mut workers = JoinSet::new();
        for index in 0..usize::try_from(concurrency).unwrap_or(1) {
            let partition = index % handles.len();
            let client = pool
                .client_for(ids[partition])
                .map_err(|e| e.to_string())?;
            let worker = Worker::new(index, partition, client, run.clone(), aborted.clone());
            workers.spawn_on(worker.run(), &handles[partition]);
        }
        let mut ticker = tokio::time::interval(SAMPLE_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut interrupts = 0u32;
        let mut ctrl_c: Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> =
            Box::pin(tokio::signal::ctrl_c());
        let mut records = Vec::with_capacity(workers.len());
        loop {
            tokio::select! {
                joined = workers.join_next() => match joined {
                    None => break,
                    Some(Ok(record)) => records.push(record),
                    Some(Err(error)) => {
                        if error.is_panic() {
                            std::panic::resume_unwind(error.into_panic());
                        }
                        return Err(format!("a worker was cancelled: {error}"));
                    }
                },
                _ = ticker.tick() => {
                    let sample = sampler.sample(pool, &run.gauges);
                    if let Some(progress) = &progress {
                        progress.update(&sample);
                    }
                    let overdue = run
                        .schedule
                        .deadline()
                        .is_some_and(|deadline| Instant::now() >= deadline + drain);
                    if overdue && !*abort.borrow() {
                        abort.send_replace(true);
                    }
                },
                interrupted = &mut ctrl_c => {
                    if interrupted.is_err() {
                        // No signal handling here: keep running without it.
                        ctrl_c = Box::pin(std::future::pending());
                        continue;
                    }
                    interrupts += 1;
                    if interrupts == 1 {
                        run.schedule.stop();
                        if let Some(progress) = &mut progress {
                            progress.note("stopping: requests in flight finish (Ctrl-C again aborts them)");
                        }
                    } else {
                        abort.send_replace(true);
                    }
                    ctrl_c = Box::pin(tokio::signal::ctrl_c());
                },
            }
        }
        let duration = run.schedule.start().elapsed();
        Ok(Driven { records, duration })
    });
    // One more sample at the end, for the peak.
    let last = sampler.sample(pool, &run.gauges);
    if let Some(progress) = progress {
        progress.update(&last);
        progress.finish();
    }
    runtime.shutdown_background();
    outcome
}
