//! One command line: its groups (one per `--next`), what they share, and the order their
//! transfers run in.
//!
//! [`run`] reads every group before the first transfer (as curl reads its whole command line
//! first), builds one [`Session`] per group over a [`Shared`] pool and cookie engine, and
//! [`run_all`] runs the transfers of all groups as one sequence (or one `-Z` queue), then
//! finishes each group (its `-D` file and cookie jar).

use std::process::ExitCode;
use std::sync::Arc;

use clap::ArgMatches;
use futures_util::StreamExt as _;

use super::args::{self, CurlArgs};
use super::connect_to::ConnectToArgs;
use super::exit::CurlError;
use super::output::Report;
use super::plan::{self, Planned};
use super::{Session, alt_svc, compose, cookies, parallel_meter, setup, usage};

/// Runs curl mode, one group of options and URLs per `--next` ([`next`](super::next)), and
/// returns the process exit code. Every group is read before the first transfer starts, as
/// curl reads its whole command line first.
pub(crate) fn run(mut groups: Vec<(CurlArgs, ArgMatches)>) -> ExitCode {
    // curl asks for missing passwords once the command line is read, before anything else.
    super::password::complete(&mut groups);
    let Some((first, _)) = groups.first() else {
        return ExitCode::from(2);
    };
    // The global options are the same in every group (`next::split` copied them).
    let report = Report::new(first.silent, first.show_error);
    if let Some((style, path)) = first.trace() {
        super::trace::configure(style, path);
    }
    if first.trace_time {
        // While this process has one thread: the offset cannot be read safely later.
        super::verbose::capture_local_offset();
    }
    let mut prepared = Vec::with_capacity(groups.len());
    let mut transfers = 0;
    let mut url_nodes = 0;
    for (args, matches) in groups {
        let group = plan::plan(&args, &matches).and_then(|plan| {
            let composed = compose::compose(&args, &matches)?;
            Ok((plan, composed))
        });
        match group {
            Ok((mut plan, composed)) => {
                // `%{urlnum}` counts on across groups, as in curl.
                for planned in &mut plan {
                    planned.index += url_nodes;
                }
                url_nodes += plan::url_nodes(&args, &matches);
                transfers += plan.len();
                prepared.push((args, composed, plan));
            }
            Err(error) => {
                report.error(&error);
                return ExitCode::from(error.code());
            }
        }
    }
    if transfers == 0 {
        no_url();
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let error = CurlError::new(2, format!("failed to start the runtime: {e}"));
            report.error(&error);
            return ExitCode::from(error.code());
        }
    };
    let code = runtime.block_on(async move {
        let mut shared = Shared::default();
        let mut sessions = Vec::with_capacity(prepared.len());
        let mut jobs = Vec::with_capacity(transfers);
        let mut missing_url = false;
        for (args, composed, plan) in prepared {
            if plan.is_empty() {
                // Only the last group can be without a URL: `--next` starts a group only
                // after one.
                missing_url = true;
                break;
            }
            match Session::new(args, composed, report, &mut shared) {
                Ok(session) => {
                    let at = sessions.len();
                    sessions.push(session);
                    jobs.extend(plan.into_iter().map(|planned| (at, planned)));
                }
                Err(error) => {
                    report.error(&error);
                    return error.code();
                }
            }
        }
        run_all(&sessions, jobs, missing_url).await
    });
    // Connection drivers and a resolver thread may still run; nothing they do matters now.
    runtime.shutdown_background();
    ExitCode::from(code)
}

/// curl's message for a command line (or a last `--next` group) without a URL; printed even
/// with `-s`, as curl prints it.
fn no_url() {
    super::errout::line("poolcurl: no URL specified!");
    super::errout::line(usage::TRY_HELP);
}

/// What the groups of one command line share: a pool for equal connection flags, and the
/// cookie engine.
#[derive(Default)]
pub(super) struct Shared {
    /// The clients built so far, with the connection flags each was built from.
    clients: Vec<Built>,
    /// The cookie engine.
    pub(super) cookies: cookies::Cookies,
    /// The `--alt-svc` caches, one per file: a group reads what an earlier group learned, as
    /// curl's next transfer reads the file the last one wrote.
    alt_svc: Vec<Arc<alt_svc::AltSvc>>,
}

impl Shared {
    /// The `--alt-svc` cache of `path`: an earlier group's for the same file, else a new one
    /// (always a new one without a file).
    pub(super) fn alt_svc(&mut self, path: &str) -> Arc<alt_svc::AltSvc> {
        let known = self.alt_svc.iter().find(|c| c.path() == path);
        if let Some(cache) = known.filter(|_| !path.is_empty()) {
            return cache.clone();
        }
        let cache = Arc::new(alt_svc::AltSvc::new(path));
        self.alt_svc.push(cache.clone());
        cache
    }

    /// The client for the connection flags of `args`: the one an earlier group with the same
    /// flags built, so that its connections are reused as curl reuses them across `--next`,
    /// or a new pool. curl compares connections by the settings that apply to each (a `-k` in
    /// one group does not keep an `http://` connection from the next); poolcurl compares the
    /// whole set, so a group with other connection flags opens its own connections. `proxies`
    /// are the group's (through a proxy its `-A` is a connection flag too).
    pub(super) fn client_for(
        &mut self,
        args: &CurlArgs,
        connect_to: &ConnectToArgs,
        proxies: Option<&pool::ProxyConfig>,
    ) -> Result<(pool::Client, Option<CurlError>), CurlError> {
        // A tunnel's `CONNECT` carries `-A`, so through a proxy it is a connection flag too.
        let agent = args.send.user_agent.clone().filter(|_| proxies.is_some());
        let same = self.clients.iter().find(|built| {
            built.connect == args.connect
                && built.net == args.net
                && built.connect_agent == agent
                && built.ntlm == args.send.ntlm
        });
        if let Some(built) = same {
            return Ok((built.client.clone(), built.tls_refusal.clone()));
        }
        let (client, tls_refusal) = setup::build_client_for_transfers(args, connect_to, proxies)?;
        self.clients.push(Built {
            connect: args.connect.clone(),
            net: args.net.clone(),
            connect_agent: agent,
            ntlm: args.send.ntlm,
            client: client.clone(),
            tls_refusal: tls_refusal.clone(),
        });
        Ok((client, tls_refusal))
    }
}

/// A client and the connection flags of the group it was built for.
#[derive(Debug)]
struct Built {
    connect: args::ConnectArgs,
    net: args::NetArgs,
    /// `-A` when the group goes through a proxy (its tunnels' `CONNECT` carries it).
    connect_agent: Option<String>,
    /// `--ntlm`, which keeps the group to HTTP/1.1.
    ntlm: bool,
    client: pool::Client,
    /// Why the group's `https://` transfers fail: an origin TLS file it could not use.
    tls_refusal: Option<CurlError>,
}

/// Whether a `-Z` run draws its meter: as a transfer would draw its own (not `-s`, not
/// `--no-progress-meter`), and not while a body goes to stdout on a terminal (curl's rule).
fn parallel_meter_drawn(first: &Session, jobs: &[(usize, Planned)]) -> bool {
    let to_terminal = super::sink::stdout_is_terminal()
        && jobs
            .iter()
            .any(|(_, planned)| matches!(planned.output, plan::Output::Stdout));
    first.draws_progress() && !to_terminal
}

/// Runs every transfer of every group, in order (or up to `--parallel-max` at once with `-Z`),
/// then writes each group's `-D` file and cookie jar; returns the exit code: the last
/// transfer's (with `-Z`, the last failure's), or 2 when a last group without a URL is reached.
async fn run_all(sessions: &[Session], jobs: Vec<(usize, Planned)>, missing_url: bool) -> u8 {
    for session in sessions {
        if let Err(code) = session.start_etag_file() {
            return code;
        }
    }
    // The global options are the same in every group; read them from the first.
    let Some(global) = sessions.first().map(|s| &s.args.transfer) else {
        no_url();
        return 2;
    };
    let fail_early = global.fail_early;
    let mut stopped = false;
    let mut exit_code = if global.parallel {
        // curl makes the transfers up front here, so it finds the outputs left over first.
        for session in sessions {
            session.warn_extra_outputs();
        }
        let limit = usize::from(global.parallel_max);
        let meter = parallel_meter_drawn(&sessions[0], &jobs);
        if meter {
            parallel_meter::begin(jobs.len().min(limit));
        }
        let mut transfers = futures_util::stream::iter(jobs)
            .map(|(at, planned)| sessions[at].run_one(planned))
            .buffer_unordered(limit);
        let mut redraw = tokio::time::interval(parallel_meter::REDRAW);
        let mut last_failure = 0;
        loop {
            // The transfers first: one that finished is handled before the next redraw.
            let finished = tokio::select! {
                biased;
                finished = transfers.next() => finished,
                _ = redraw.tick(), if meter => {
                    parallel_meter::draw(false);
                    continue;
                }
            };
            let Some(finished) = finished else {
                break;
            };
            if finished.code != 0 {
                last_failure = finished.code;
                if fail_early || finished.stops {
                    // Dropping the stream cancels the transfers still running, as curl
                    // stops them all at the first failure.
                    stopped = true;
                    break;
                }
            }
        }
        if meter {
            parallel_meter::draw(true);
        }
        last_failure
    } else {
        let mut last = 0;
        let mut next_start = tokio::time::Instant::now();
        let mut jobs = jobs.into_iter().peekable();
        while let Some((at, planned)) = jobs.next() {
            // --rate: transfer starts at least this far apart.
            if let Some(interval) = global.rate {
                tokio::time::sleep_until(next_start).await;
                next_start = tokio::time::Instant::now() + interval;
            }
            let finished = sessions[at].run_one(planned).await;
            last = finished.code;
            if (fail_early && last != 0) || finished.stops {
                stopped = true;
                break;
            }
            if jobs.peek().is_none_or(|(next, _)| *next != at) {
                sessions[at].warn_extra_outputs();
            }
        }
        last
    };
    if missing_url && !stopped {
        no_url();
        exit_code = 2;
    }
    for session in sessions {
        session.finish();
    }
    exit_code
}
