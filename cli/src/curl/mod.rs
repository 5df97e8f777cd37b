//! curl mode: `poolcurl [OPTIONS] URL...` with curl's flags, output and exit codes.
//!
//! One invocation builds one [`pool::ConnectionPool`] ([`setup`]) and sends its URLs through
//! one [`pool::Client`] on a current-thread runtime (with `--next`, one per distinct set of
//! connection flags, see [`next`] and [`run`]), one after the other (or up to
//! `--parallel-max` at once with `-Z`), so URLs of the same origin reuse the connection, as
//! curl's do. Each URL (after globbing, [`plan`]) is one *transfer*: the request, its redirects
//! with `-L`, and the response body written to its output ([`transfer`]); `--retry` runs a
//! transfer again after a transient failure ([`retry`]). After every transfer, failed or not,
//! `-w` is printed; a failed transfer prints `poolcurl: (CODE) message` and the next URL still
//! runs (unless `--fail-early`, which starts no transfer after a failure). The process exits
//! with the code of the last transfer (with `-Z`, of the last one to fail), as curl does.
//!
//! ```text
//! main ── usage::prepare (argv: -K files, unsupported flags, -H @FILE, --next groups)
//!      ── clap, per group ── run
//! run ── compose (template) ── plan (URLs, outputs) ── Shared::client_for ── for each URL:
//!          retry loop ── transfer (bounded by -m) ── hop: request ─ head ─ -v trace
//!                                                      ├─ 3xx + -L: drain body, next hop
//!                                                      ├─ >= 400 + -f: exit 22
//!                                                      └─ head (-i/-I/-D) and body to the sink
//!          -w ── after the last: -c cookie jar
//! ```
//!
//! The concerns live in their own modules: [`argv`], [`args`], [`config`] and [`next`] (the
//! command line), [`compose`], [`request`], [`data`], [`form`] (what is sent), [`cookies`],
//! [`decode`] (`--compressed`), [`sink`], [`output`], [`verbose`], [`progress`], [`write_out`]
//! (what is printed), [`exit`] (curl's exit codes). What this mode does not do: curl's default
//! progress meter, authentication other than Basic, protocols other than HTTP(S) (see
//! [`args::unsupported`] for the flags it deliberately refuses).
//!
//! # What `poolcurl load` reuses
//!
//! Load mode sends curl's requests through curl's connection settings, so it takes these
//! pieces from here rather than defining its own: the flag groups [`args::RequestArgs`] and
//! [`args::ConnectArgs`] with their value parsers, [`request::RequestTemplate`] (method,
//! default headers, `-H` edits, request data), [`setup::pool_builder`] (TLS, `--resolve`,
//! protocol policy), [`url::parse_url`] and [`exit::CurlError`] for setup failures.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::ArgMatches;
use futures_util::StreamExt as _;

pub(crate) mod args;
mod argv;
mod compose;
mod config;
pub(crate) mod connect_to;
mod cookies;
mod data;
mod decode;
pub(crate) mod exit;
mod file_meta;
mod form;
mod glob;
mod header_file;
mod next;
mod output;
mod plan;
mod progress;
mod proto;
mod record;
mod redirect;
pub(crate) mod request;
mod request_size;
mod retry;
pub(crate) mod setup;
mod sink;
mod transfer;
pub(crate) mod url;
pub(crate) mod usage;
mod verbose;
mod write_json;
mod write_out;

pub(crate) use args::CurlArgs;

use compose::Composed;
use connect_to::ConnectToArgs;
use cookies::CookieJar;
use exit::CurlError;
use output::Report;
use plan::{Output, Planned};
use proto::Protocols;
use record::TransferRecord;
use retry::Retry;
use sink::{FileMode, Sink};
use verbose::Verbose;
use write_out::{Stream, WriteOut};

/// Whether option `name` (as written on a command line: `-o`, `--output`) of `command` takes a
/// value; for `-K` files.
pub(crate) fn takes_value(command: &clap::Command, name: &str) -> bool {
    let found = if let Some(long) = name.strip_prefix("--") {
        command.get_arguments().find(|a| a.get_long() == Some(long))
    } else if let Some(short) = name.strip_prefix('-') {
        let mut chars = short.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => command.get_arguments().find(|a| a.get_short() == Some(c)),
            _ => None,
        }
    } else {
        None
    };
    found.is_some_and(|arg| arg.get_action().takes_values())
}

/// Runs curl mode, one group of options and URLs per `--next` ([`next`]), and returns the
/// process exit code. Every group is read before the first transfer starts, as curl reads its
/// whole command line first.
pub(crate) fn run(groups: Vec<(CurlArgs, ArgMatches)>) -> ExitCode {
    let Some((first, _)) = groups.first() else {
        return ExitCode::from(2);
    };
    // The global options are the same in every group (`next::split` copied them).
    let report = Report::new(first.silent, first.show_error);
    let mut prepared = Vec::with_capacity(groups.len());
    let mut transfers = 0;
    for (args, matches) in groups {
        let group = plan::plan(&args, &matches).and_then(|plan| {
            let composed = compose::compose(&args, &matches)?;
            Ok((plan, composed))
        });
        match group {
            Ok((mut plan, composed)) => {
                // `%{urlnum}` counts on across groups, as in curl.
                for planned in &mut plan {
                    planned.index += transfers;
                }
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
    eprintln!("poolcurl: no URL specified!");
    eprintln!("{}", usage::TRY_HELP);
}

/// What the groups of one command line share: a pool for equal connection flags, and the
/// cookie engine.
#[derive(Default)]
struct Shared {
    /// The clients built so far, with the connection flags each was built from.
    clients: Vec<(args::ConnectArgs, args::NetArgs, pool::Client)>,
    /// The cookie engine.
    cookies: cookies::Cookies,
}

impl Shared {
    /// The client for the connection flags of `args`: the one an earlier group with the same
    /// flags built, so that its connections are reused as curl reuses them across `--next`,
    /// or a new pool. curl compares connections by the settings that apply to each (a `-k` in
    /// one group does not keep an `http://` connection from the next); poolcurl compares the
    /// whole set, so a group with other connection flags opens its own connections.
    fn client_for(
        &mut self,
        args: &CurlArgs,
        connect_to: &ConnectToArgs,
    ) -> Result<pool::Client, CurlError> {
        let same = self
            .clients
            .iter()
            .find(|(connect, net, _)| *connect == args.connect && *net == args.net);
        if let Some((_, _, client)) = same {
            return Ok(client.clone());
        }
        let client = setup::build_client(args, connect_to)?;
        self.clients
            .push((args.connect.clone(), args.net.clone(), client.clone()));
        Ok(client)
    }
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
        let limit = usize::from(global.parallel_max);
        let mut transfers = futures_util::stream::iter(jobs)
            .map(|(at, planned)| sessions[at].run_one(planned))
            .buffer_unordered(limit);
        let mut last_failure = 0;
        while let Some(code) = transfers.next().await {
            if code != 0 {
                last_failure = code;
                if fail_early {
                    // Dropping the stream cancels the transfers still running, as curl
                    // stops them all at the first failure.
                    stopped = true;
                    break;
                }
            }
        }
        last_failure
    } else {
        let mut last = 0;
        let mut next_start = tokio::time::Instant::now();
        for (at, planned) in jobs {
            // --rate: transfer starts at least this far apart.
            if let Some(interval) = global.rate {
                tokio::time::sleep_until(next_start).await;
                next_start = tokio::time::Instant::now() + interval;
            }
            last = sessions[at].run_one(planned).await;
            if fail_early && last != 0 {
                stopped = true;
                break;
            }
        }
        last
    };
    if missing_url && !stopped {
        no_url();
        exit_code = 2;
    }
    for session in sessions {
        if let Err(code) = session.finish() {
            exit_code = code;
        }
    }
    exit_code
}

/// Everything the transfers of one group of the command line share (the whole command line
/// without `--next`).
#[derive(Debug)]
pub(crate) struct Session {
    /// The command line.
    args: CurlArgs,
    /// The client of the invocation's one pool.
    client: pool::Client,
    /// What every request is made from.
    composed: Composed,
    /// The parsed `-w` format.
    write_out: Option<WriteOut>,
    /// ALPN protocols offered over TLS, for `-v`.
    alpn_offer: &'static str,
    /// The `-v` trace.
    verbose: Verbose,
    /// Error and warning messages.
    report: Report,
    /// The cookie engine (`-b`, `-c`).
    cookies: Option<CookieJar>,
    /// The `-D` file, shared by the transfers (truncated once, then written in order).
    dump_header: Option<Mutex<Sink>>,
    /// The `--connect-to` entries, checked for each request (the pool dials by their rules).
    connect_to: ConnectToArgs,
    /// The schemes `--proto` and `--proto-redir` allow.
    protocols: Protocols,
    /// The proxies the pool routes through (`-x` or the environment), kept with `-v` only.
    proxies: Option<pool::ProxyConfig>,
}

/// curl's warning for `-X HEAD` without `-I`, wrapped where curl wraps it. curl then waits
/// for the body the response announces and never gets (until `-m` or the server closes);
/// poolcurl sends HEAD and reads no body, but prints the same hint so that a script's user
/// learns what curl would have told them.
const CUSTOM_HEAD_WARNING: &str = "Warning: Setting custom HTTP method to HEAD with \
    -X/--request may not work the \nWarning: way you want. Consider using -I/--head instead.";

impl Session {
    /// Validates what the command line refers to (files, pool settings) and builds the pool.
    fn new(
        args: CurlArgs,
        composed: Composed,
        report: Report,
        shared: &mut Shared,
    ) -> Result<Session, CurlError> {
        let write_out = match &args.write_out {
            None => None,
            Some(format) => {
                let format = match format.strip_prefix('@') {
                    Some(path) => String::from_utf8_lossy(&data::read_source(path)?).into_owned(),
                    None => format.clone(),
                };
                Some(WriteOut::parse(&format).0)
            }
        };
        if args.custom_head() {
            report.warning_raw(CUSTOM_HEAD_WARNING);
        }
        if let Some(method) = args.unnecessary_method().filter(|_| args.verbose) {
            report.warning_raw(&format!(
                "Note: Unnecessary use of -X or --request, {method} is already inferred."
            ));
        }
        let outputs = args.transfer.output.len() + usize::from(args.transfer.remote_name);
        if outputs > args.urls.len() + args.transfer.url.len() {
            report.warning("Got more output options than URLs");
        }
        let cookies = CookieJar::new(
            &args.send.cookie,
            args.send.cookie_jar.as_deref(),
            &shared.cookies,
        )?;
        let connect_to = ConnectToArgs::parse(&args.connect.connect_to);
        let client = shared.client_for(&args, &connect_to)?;
        // Only `-v` reads them (the pool has its own copy): no second parse without it.
        let proxies = if args.verbose {
            setup::proxy_config(&args.connect)?
        } else {
            None
        };
        let alpn_offer = match setup::curl_protocol_policy(&args) {
            pool::ProtocolPolicy::Http1Only => "http/1.1",
            _ => "h2,http/1.1",
        };
        let dump_mode = FileMode {
            file_mode: args.transfer.create_file_mode,
            ..FileMode::default()
        };
        let dump_header = args
            .transfer
            .dump_header
            .as_deref()
            .map(|path| Mutex::new(Sink::file(in_output_dir(&args, path), dump_mode)));
        Ok(Session {
            connect_to,
            protocols: Protocols::new(args.proto.as_deref(), args.proto_redir.as_deref()),
            proxies,
            verbose: Verbose::new(args.verbose),
            args,
            client,
            composed,
            write_out,
            alpn_offer,
            report,
            cookies,
            dump_header,
        })
    }

    /// `--etag-save`: curl skips every transfer when the ETag file cannot be made (they all
    /// share it), then reports that nothing ran. `Err` is that exit code, reported.
    fn start_etag_file(&self) -> Result<(), u8> {
        let Some(file) = &self.args.transfer.etag_save else {
            return Ok(());
        };
        file_meta::start_etag_file(file).map_err(|warning| {
            self.report.warning_raw(&format!("Warning: {warning}"));
            let error = CurlError::new(26, "no transfer performed");
            self.report.error(&error);
            error.code()
        })
    }

    /// After the last transfer: flushes the `-D` file and writes the cookie jar (`-c`). `Err`
    /// is the exit code of a jar that could not be written, reported.
    fn finish(&self) -> Result<(), u8> {
        if let Some(dump) = &self.dump_header {
            lock(dump).flush();
        }
        if let (Some(jar), Some(path)) = (&self.cookies, &self.args.send.cookie_jar) {
            if let Err(error) = jar.save(path) {
                self.report.error(&error);
                return Err(error.code());
            }
        }
        Ok(())
    }

    /// One transfer with its retries and `-w`; returns its exit code.
    async fn run_one(&self, planned: Planned) -> u8 {
        let url = proto::with_default_scheme(&planned.url, self.args.proto_default.as_deref());
        let url = self.composed.target_url(&url);
        let mut sink = match self.sink_for(&planned, &url) {
            Ok(sink) => sink,
            Err(error) => {
                self.report.error(&error);
                return error.code();
            }
        };
        if let Some(file) = &self.args.transfer.etag_save {
            // Each transfer starts its tags afresh; run_all checked that the file can be made.
            let _ = file_meta::start_etag_file(file);
        }
        let mut retry = Retry::new(&self.args.transfer);
        loop {
            let mut record = TransferRecord::start(&url, self.composed.template.first_hop().method);
            record.input_url = planned.url.clone();
            record.url_num = planned.index;
            record.output_file = sink.path().map(|p| p.to_path_buf());
            let result = self.bounded_transfer(&url, &mut sink, &mut record).await;
            record.finished_at = Some(record.elapsed());
            // --no-clobber may have taken another name.
            record.output_file = sink.path().map(|p| p.to_path_buf());
            let code = result.as_ref().err().map_or(0, CurlError::code);
            if let Some(again) = retry.next(&self.args.transfer, code, &record) {
                self.report.warning_raw(&again.warning);
                if sink.path().is_some() && sink.written() > 0 {
                    self.report
                        .warning_raw(&format!("Throwing away {} bytes", sink.written()));
                }
                sink.reset();
                tokio::time::sleep(again.delay).await;
                continue;
            }
            if let Err(error) = &result {
                if self.args.transfer.remove_on_error {
                    sink.remove();
                }
                self.report.error(error);
                record.exit_code = error.code();
                record.error = Some(error.message().to_owned());
            }
            if let (Ok(()), true, Some(path)) =
                (&result, self.args.transfer.remote_time, sink.path())
            {
                file_meta::set_remote_time(path, &record.headers);
            }
            let mut code = code;
            if let Err(error) = self.print_write_out(&record) {
                self.report.error(&error);
                code = error.code();
            }
            return code;
        }
    }

    /// The sink of a planned transfer.
    fn sink_for(&self, planned: &Planned, url: &str) -> Result<Sink, CurlError> {
        let transfer = &self.args.transfer;
        let append = self.args.send.continue_at.is_some();
        let mode = FileMode {
            append,
            create_dirs: transfer.create_dirs,
            no_clobber: transfer.no_clobber && !append,
            file_mode: transfer.create_file_mode,
        };
        let sink = match &planned.output {
            Output::Stdout => Sink::stdout(),
            Output::File(path) => Sink::file(in_output_dir(&self.args, path), mode),
            Output::Remote => {
                let uri = url::parse_url(url)?;
                let name = url::remote_name(&uri)
                    .ok_or_else(|| CurlError::new(23, "Remote file name has no length!"))?;
                Sink::file(in_output_dir(&self.args, Path::new(&name)), mode)
            }
        };
        Ok(sink.flush_each_write(self.args.transfer.no_buffer))
    }

    /// Prints `-w` for a finished transfer.
    fn print_write_out(&self, record: &TransferRecord) -> Result<(), CurlError> {
        let Some(write_out) = &self.write_out else {
            return Ok(());
        };
        let (pieces, unknown) = write_out.render_streams(record);
        for name in unknown {
            // curl warns even with -s.
            output::stderr_line(&format!("poolcurl: unknown --write-out variable: '{name}'"));
        }
        for (stream, text) in pieces {
            match stream {
                Stream::Stdout => {
                    let mut stdout = Sink::stdout();
                    stdout.write(text.as_bytes())?;
                    stdout.finish()?;
                }
                Stream::Stderr => {
                    use std::io::Write as _;
                    let _ = std::io::stderr().lock().write_all(text.as_bytes());
                }
            }
        }
        Ok(())
    }
}

impl Session {
    /// The proxy the pool routes a request to `uri` through, if any (as
    /// [`pool::ProxyConfig::route`] decides, by the URL's own host and port).
    /// Always `None` without `-v`.
    pub(crate) fn proxy_for(&self, uri: &http::Uri) -> Option<&pool::Proxy> {
        let proxies = self.proxies.as_ref()?;
        let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
        let tls = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        proxies.route(tls, &host.to_ascii_lowercase(), port)
    }
}

/// `path` inside `--output-dir`, if given: the directory and the name joined with `/` as text,
/// as curl joins them (so an absolute name lands under the directory too).
fn in_output_dir(args: &CurlArgs, path: &Path) -> PathBuf {
    match &args.transfer.output_dir {
        Some(dir) if path.as_os_str() != "-" => {
            let mut joined = std::ffi::OsString::from(dir);
            joined.push("/");
            joined.push(path.as_os_str());
            PathBuf::from(joined)
        }
        _ => path.to_path_buf(),
    }
}

/// Locks a mutex of the session; a panic elsewhere does not make its data unusable here.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
