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
//! main ── usage::prepare (argv: -K files, unsupported flags, -H @FILE, --next groups, --no-)
//!      ── clap, per group ── run
//! run ── compose (template) ── plan (URLs, outputs) ── Shared::client_for ── for each URL:
//!          retry loop ── transfer (bounded by -m) ── hop: request ─ head ─ -v trace
//!                                                      ├─ 3xx + -L: drain body, next hop
//!                                                      ├─ >= 400 + -f: exit 22
//!                                                      └─ head (-i/-I/-D) and body to the sink
//!          -w ── after the last: -c cookie jar
//! ```
//!
//! The concerns live in their own modules: [`argv`], [`args`], [`config`], [`next`] and
//! [`negate`] (the command line), [`invocation`] (its groups and the order of transfers),
//! [`compose`], [`method`], [`request`], [`data`], [`form`], [`upload`] (what is sent),
//! [`ca_files`] (whom TLS trusts), [`cookies`], [`decode`] (`--compressed`),
//! [`sink`], [`output`], [`verbose`], [`progress`], [`write_out`] (what is printed), [`exit`]
//! (curl's exit codes), [`sigv4`] (`--aws-sigv4`), [`doh`] (`--doh-url`), [`attempt`] (a
//! transfer's `--retry` attempts and what follows the last). What this mode does not do:
//! authentication other than Basic, Digest, NTLM, Bearer and AWS Signature Version 4,
//! protocols other than HTTP(S) (see [`args::unsupported`]
//! for the flags it deliberately refuses).
//!
//! # What `poolcurl load` reuses
//!
//! Load mode sends curl's requests through curl's connection settings, so it takes these
//! pieces from here rather than defining its own: the flag groups [`args::RequestArgs`] and
//! [`args::ConnectArgs`] with their value parsers, [`request::RequestTemplate`] (method,
//! default headers, `-H` edits, request data), [`setup::pool_builder`] (TLS, `--resolve`,
//! protocol policy), [`url::parse_url`] and [`exit::CurlError`] for setup failures.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

mod alt_svc;
pub(crate) mod args;
mod argv;
mod attempt;
mod bad_value;
mod bar;
mod ca_files;
mod cert_text;
mod ciphers;
mod client_cert;
mod compose;
mod config;
pub(crate) mod connect_to;
mod cookies;
mod data;
mod decode;
mod dns_servers;
mod doh;
mod errout;
pub(crate) mod exit;
mod fail_mode;
mod file_meta;
mod form;
mod getdate;
mod glob;
mod header_file;
mod hsts;
mod invocation;
mod localhost;
mod meter;
mod method;
mod negate;
mod netrc;
mod next;
mod output;
mod pace;
mod parallel_meter;
mod password;
mod pinned_key;
mod plan;
mod progress;
mod proto;
mod record;
mod redirect;
pub(crate) mod request;
mod request_size;
mod retry;
mod server_cert;
pub(crate) mod setup;
mod sigv4;
mod sink;
mod time_cond;
mod trace;
mod transfer;
mod upload;
pub(crate) mod url;
pub(crate) mod usage;
mod verbose;
pub(crate) mod version;
mod write_json;
mod write_out;
mod zone;

pub(crate) use args::CurlArgs;
use invocation::Shared;
pub(crate) use invocation::run;

use compose::Composed;
use connect_to::ConnectToArgs;
use cookies::CookieJar;
use exit::CurlError;
use netrc::Netrc;
use output::Report;
use plan::Planned;
use proto::Protocols;
use record::TransferRecord;
use request::RequestTemplate;
use sink::{FileMode, Sink};
use time_cond::TimeCond;
use verbose::Verbose;
use write_out::WriteOut;

/// Everything the transfers of one group of the command line share (the whole command line
/// without `--next`).
#[derive(Debug)]
pub(crate) struct Session {
    /// The command line.
    args: CurlArgs,
    /// The client of the invocation's one pool, or why the group's pool could not be built
    /// (a `--resolve` entry or a proxy URL it cannot use): each transfer fails with that, as
    /// curl fails each transfer whose connection it cannot set up, `-w` and all.
    client: Result<pool::Client, CurlError>,
    /// What every request is made from.
    composed: Composed,
    /// The parsed `-w` format.
    write_out: Option<WriteOut>,
    /// ALPN protocols offered over TLS, for `-v`.
    alpn_offer: &'static str,
    /// Why no TLS connection can be made with the flags (read once, see
    /// `NetArgs::tls_refusal`), or with the origin TLS files they name (see
    /// `setup::build_client_for_transfers`): each `https://` transfer fails with it.
    tls_refusal: Option<CurlError>,
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
    /// The proxies the pool routes through (`-x` or the environment): where a forward proxy's
    /// credentials go, its challenges, what `-v` shows and `%{size_request}` counts.
    proxies: Option<pool::ProxyConfig>,
    /// `-n`, `--netrc-file`, `--netrc-optional`: the file credentials come from.
    netrc: Option<Netrc>,
    /// `--hsts`: the hosts spoken to over HTTPS only.
    hsts: Option<hsts::Hsts>,
    /// `--alt-svc`: the origins' alternatives (shared with the groups naming the same file).
    alt_svc: Option<Arc<alt_svc::AltSvc>>,
    /// The clients built for `--alt-svc` alternatives, by origin and alternative.
    alternatives: Mutex<Vec<AlternativeClient>>,
    /// More `-o`/`-O` than URLs: curl warns once the group's last transfer has run.
    extra_outputs: bool,
}

/// How a transfer ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finished {
    /// Its exit code.
    pub(crate) code: u8,
    /// Whether no transfer may start after it.
    pub(crate) stops: bool,
}

/// A client that sends an origin's requests (host in lower case, port) to an alternative (host,
/// port).
type AlternativeClient = ((String, u16, String, u16), pool::Client);

/// curl's warning for `-X HEAD` without `-I` (printed as curl's `warnf` wraps it). curl then
/// waits for the body the response announces and never gets (until `-m` or the server
/// closes); poolcurl sends HEAD and reads no body, but prints the same hint so that a script's
/// user learns what curl would have told them.
const CUSTOM_HEAD_WARNING: &str = "Setting custom HTTP method to HEAD with -X/--request may \
    not work the way you want. Consider using -I/--head instead.";

impl Session {
    /// Validates what the command line refers to (files, pool settings) and builds the pool.
    fn new(
        args: CurlArgs,
        mut composed: Composed,
        report: Report,
        shared: &mut Shared,
    ) -> Result<Session, CurlError> {
        let write_out = match &args.write_out {
            None => None,
            Some(format) => {
                let format = match format.strip_prefix('@') {
                    Some(path) => {
                        let text = data::file_string(&data::read_source(path)?);
                        String::from_utf8_lossy(&text).into_owned()
                    }
                    None => format.clone(),
                };
                Some(WriteOut::parse(&format).0)
            }
        };
        for warning in &composed.warnings {
            report.warning_raw(&output::curl_warning(warning));
        }
        // Read while curl parses the command line: before anything a transfer prints.
        if let Some(text) = &args.transfer.time_cond {
            match TimeCond::parse(text) {
                Some(cond) => {
                    if let Some(upload) = &mut composed.upload {
                        upload.set_time_condition(cond);
                    }
                    composed.template.set_time_condition(cond);
                }
                None => report.warning_raw(&output::curl_warning(time_cond::ILLEGAL)),
            }
        }
        let verbose = Verbose::new(args.verbose, args.trace_time);
        let outputs = args.transfer.output.len()
            + args.transfer.remote_name.len()
            + args.transfer.no_remote_name.len();
        let extra_outputs = outputs > args.urls.len() + args.transfer.url.len();
        let cookies = CookieJar::new(
            &args.send.cookie,
            args.send.cookie_jar.as_deref(),
            args.send.junk_session_cookies,
            &shared.cookies,
        )?;
        let send = &args.send;
        let netrc = Netrc::load(send.netrc, send.netrc_file.as_deref(), send.netrc_optional);
        // URLs whose IPv6 host names a zone: their address is dialed with its scope.
        let zones: Vec<zone::Zoned> = (args.urls.iter().chain(&args.transfer.url))
            .filter_map(|url| zone::split(url))
            .collect();
        let connect_to = ConnectToArgs::parse(&args.connect.connect_to).with_zones(&zones);
        // The pool has its own copy; curl mode's places a forward proxy's credentials, answers
        // its challenge (`--proxy-digest`), and tells `-v` and `-w` the route. One that does
        // not parse fails the client, and so each transfer.
        let proxies = setup::proxy_config(&args.connect, args.send.user_agent.as_deref());
        let built = proxies
            .clone()
            .and_then(|proxies| shared.client_for(&args, &connect_to, proxies.as_ref()));
        let (client, files_refusal) = match built {
            Ok((client, refusal)) => (Ok(client), refusal),
            Err(error) => (Err(error), None),
        };
        let proxies = proxies.ok().flatten();
        let alpn_offer = match setup::curl_protocol_policy(&args) {
            _ if args.net.tls.no_alpn => "",
            pool::ProtocolPolicy::Http1Only => "http/1.1",
            _ => "h2,http/1.1",
        };
        let dump_mode = FileMode::default();
        let dump_header = args
            .transfer
            .dump_header
            .as_deref()
            .map(|path| plan::in_output_dir(&args, path))
            // Written through at each head, as curl flushes it: an `-o` of the same file then
            // starts over it, as curl's does.
            .map(|path| Mutex::new(Sink::file(path, dump_mode).flush_each_write(true)));
        let tls_refusal = args.net.tls_refusal().or(files_refusal);
        let hsts = args.transfer.hsts.as_deref().map(hsts::Hsts::load);
        let alt_svc = args
            .transfer
            .alt_svc
            .as_deref()
            .map(|path| shared.alt_svc(path));
        Ok(Session {
            extra_outputs,
            hsts,
            alt_svc,
            alternatives: Mutex::default(),
            tls_refusal,
            connect_to,
            protocols: Protocols::new(args.proto.as_deref(), args.proto_redir.as_deref()),
            proxies,
            verbose,
            args,
            client,
            composed,
            write_out,
            alpn_offer,
            report,
            cookies,
            dump_header,
            netrc,
        })
    }

    /// `--etag-save`: curl skips every transfer when the ETag file cannot be made (they all
    /// share it), then reports that nothing ran. `Err` is that exit code, reported.
    fn start_etag_file(&self) -> Result<(), u8> {
        let Some(file) = &self.args.transfer.etag_save else {
            return Ok(());
        };
        file_meta::start_etag_file(file).map_err(|warning| {
            self.report.warning_raw(&output::curl_warning(&warning));
            let error = CurlError::new(26, "no transfer performed");
            self.report.error(&error);
            error.code()
        })
    }

    /// After the last transfer: flushes the `-D` file and writes the cookie jar (`-c`) and the
    /// `--hsts` and `--alt-svc` caches.
    fn finish(&self) {
        if let Some(dump) = &self.dump_header {
            lock(dump).flush();
        }
        // As curl, a cookie jar or a cache that cannot be written fails nothing; curl says so
        // of the jar under -v.
        if let (Some(jar), Some(path)) = (&self.cookies, &self.args.send.cookie_jar) {
            if jar.save(path).is_err() {
                self.verbose.info(&format!(
                    "WARNING: failed to save cookies in {}: Failed writing received data to \
                     disk/application",
                    path.display()
                ));
            }
        }
        if let Some(hsts) = &self.hsts {
            let _ = hsts.save();
        }
        if let Some(alt_svc) = &self.alt_svc {
            alt_svc.save();
        }
    }

    /// One transfer with its retries and `-w`; returns its exit code, and whether no further
    /// transfer may start (its `-T` file could not be opened or `-O` found no name, which
    /// ends curl's run).
    async fn run_one(&self, planned: Planned) -> Finished {
        // A `-Z` run's meter counts the transfer from its start to its end, whatever its
        // attempts.
        let slot = parallel_meter::join();
        let finished = self.run_one_in(planned, slot).await;
        if let Some(slot) = slot {
            parallel_meter::leave(slot);
        }
        finished
    }

    /// [`run_one`](Self::run_one), reporting to `-Z`'s meter in `slot`.
    async fn run_one_in(&self, planned: Planned, slot: Option<usize>) -> Finished {
        self.method_notes();
        let url = proto::with_default_scheme(&planned.url, self.args.proto_default.as_deref());
        let url = self.composed.target_url(&url, planned.upload.as_deref());
        // curl's checks when it makes the transfer: the run ends here, with no message of
        // its own beside the warning.
        let chosen = &self.composed.chosen;
        let refused = chosen.refused.clone().or_else(|| {
            let chosen = chosen.req.filter(|_| planned.upload.is_some())?;
            Some(method::conflict(method::HttpReq::Put, chosen))
        });
        if let Some(warning) = refused {
            self.report.warning_raw(&output::curl_warning(&warning));
            return Finished {
                code: 2,
                stops: true,
            };
        }
        if let Some(error) = self.composed.form_refusal.clone() {
            return self.stopped(&planned, &url, error);
        }
        let template = match planned.upload.as_deref().map(upload::open).transpose() {
            Ok(None) => Cow::Borrowed(&self.composed.template),
            Ok(Some(source)) => match self.upload_template(source) {
                Ok(template) => Cow::Owned(template),
                Err(error) => {
                    // A transfer that failed before it sent anything: the next one runs.
                    self.report.error(&error);
                    return Finished {
                        code: error.code(),
                        stops: false,
                    };
                }
            },
            Err(_) => {
                let name = planned.upload.as_deref().unwrap_or_default();
                errout::line(&format!("poolcurl: Can't open '{name}'!"));
                errout::line(usage::TRY_HELP);
                let error =
                    CurlError::new(26, "Failed to open/read local data from file/application");
                return self.stopped(&planned, &url, error);
            }
        };
        let sink = match plan::sink_for(&self.args, &planned, &url) {
            Ok(sink) => sink,
            // curl had not given the transfer its URL yet: `%{url_effective}` is empty.
            Err(error) => return self.stopped(&planned, "", error),
        };
        Finished {
            code: self
                .run_planned(&planned, &url, &template, sink, slot)
                .await,
            stops: false,
        }
    }

    /// A transfer that failed while curl was making it (its `-T` file, its `-F` form or its
    /// `-O` name): the
    /// error and `-w` are printed (`%{url_effective}` is `effective`, the method curl's
    /// default GET), and no further transfer starts, as in curl's run.
    fn stopped(&self, planned: &Planned, effective: &str, error: CurlError) -> Finished {
        self.report.error(&error);
        let mut record = TransferRecord::start(effective, http::Method::GET);
        record.input_url = planned.url.clone();
        record.url_num = planned.index;
        record.exit_code = error.code();
        record.error = Some(error.message().to_owned());
        let code = match self.print_write_out(&record) {
            Ok(()) => error.code(),
            Err(write_error) => {
                self.report.error(&write_error);
                write_error.code()
            }
        };
        Finished { code, stops: true }
    }

    /// curl's notes on `-X` as it makes each transfer: `-X HEAD` without `-I`, and (with
    /// `-v`) a method the other flags already imply.
    fn method_notes(&self) {
        if self.args.custom_head() {
            self.report
                .warning_raw(&output::curl_warning(CUSTOM_HEAD_WARNING));
        }
        if let Some(method) = self
            .args
            .unnecessary_method()
            .filter(|_| self.verbose.enabled())
        {
            self.report.warning_raw(&format!(
                "Note: Unnecessary use of -X or --request, {method} is already inferred."
            ));
        }
    }

    /// curl's warning when a group's outputs outnumber its URLs, printed once the group's
    /// last transfer has been made (curl finds out looking for the next URL).
    pub(crate) fn warn_extra_outputs(&self) {
        if self.extra_outputs {
            self.report
                .warning_raw(&output::curl_warning("Got more output options than URLs"));
        }
    }

    /// The template of a transfer that uploads `source`, with the session's `-z` condition and
    /// what `-C`/`-r` make of a whole file; warns as curl does when stdin goes to a server that
    /// may ask for credentials first.
    ///
    /// # Errors
    ///
    /// Exit 18 when `-C` starts at or past the file's end.
    fn upload_template(&self, source: upload::UploadSource) -> Result<RequestTemplate, CurlError> {
        if let upload::UploadSource::Stream(stream) = &source {
            if self.verbose.enabled() {
                stream.keep_blocks(self.verbose.dumps());
            }
            if self.args.send.anyauth || self.args.connect.proxy_auth.proxy_anyauth {
                self.report.warning_raw(&output::curl_warning(
                    "Using --anyauth or --proxy-anyauth with upload from stdin involves a big \
                     risk of it not working. Use a temporary file or a fixed auth type instead!",
                ));
            }
        }
        let send = &self.args.send;
        let (source, content_range) = match source {
            upload::UploadSource::Whole(bytes) => {
                let (bytes, range) =
                    upload::resume(bytes, send.continue_at.as_deref(), send.range.as_deref())?;
                (upload::UploadSource::Whole(bytes), range)
            }
            stream => (stream, None),
        };
        Ok(self.composed.upload_template(source, content_range))
    }
}

impl Session {
    /// The proxy the pool routes a request to `uri` through, if any (as
    /// [`pool::ProxyConfig::route`] decides, by the URL's own host and port).
    pub(crate) fn proxy_for(&self, uri: &http::Uri) -> Option<&pool::Proxy> {
        let proxies = self.proxies.as_ref()?;
        let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
        let tls = uri.scheme_str() == Some("https");
        proxies.route(tls, &host.to_ascii_lowercase(), url::port_of(uri))
    }
}

/// Locks one of curl mode's mutexes; a panic elsewhere does not make its data unusable here.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
