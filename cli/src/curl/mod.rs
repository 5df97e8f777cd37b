//! curl mode: `poolcurl [OPTIONS] URL...` with curl's flags, output and exit codes.
//!
//! One invocation builds one [`pool::ConnectionPool`] ([`setup`]) and sends its URLs one after
//! the other through one [`pool::Client`] on a current-thread runtime, so URLs of the same
//! origin reuse the connection, as curl's do. Each URL is one *transfer*: the request, its
//! redirects with `-L`, and the response body written to the output. After every transfer,
//! failed or not, `-w` is printed; a failed transfer prints `poolcurl: (CODE) message` and the
//! next URL still runs. The process exits with the code of the last failed transfer, or 0.
//!
//! ```text
//! run ── setup::build_client ── for each URL:
//!          transfer (bounded by -m) ── hop: request ─ head ─ -v trace
//!                                          ├─ 3xx + -L: drain body, next hop (redirect)
//!                                          ├─ >= 400 + -f: exit 22, nothing written
//!                                          └─ head (-i/-I) and body to the sink
//!          -w
//! ```
//!
//! What this mode does not do: progress meters, cookies, authentication, proxies, uploads
//! other than request data, compression, or parallel transfers (`-Z`).
//!
//! # What `poolcurl load` reuses
//!
//! Load mode sends curl's requests through curl's connection settings, so it takes these
//! pieces from here rather than defining its own: the flag groups [`args::RequestArgs`] and
//! [`args::ConnectArgs`] with their value parsers, [`request::RequestTemplate`] (method,
//! default headers, `-H` edits, request data), [`setup::pool_builder`] (TLS, `--resolve`,
//! protocol policy), [`url::parse_url`] and [`exit::CurlError`] for setup failures.

use std::process::ExitCode;

use clap::ArgMatches;
use http::Uri;
use http::header::LOCATION;
use http::response::Parts;
use http_body_util::BodyExt;

pub(crate) mod args;
pub(crate) mod exit;
mod output;
mod record;
mod redirect;
pub(crate) mod request;
pub(crate) mod setup;
pub(crate) mod url;
mod write_out;

pub(crate) use args::CurlArgs;

use exit::{Attempt, CurlError};
use output::{Report, Sink, Verbose, VerboseContext};
use record::TransferRecord;
use request::{Hop, RequestTemplate};
use write_out::WriteOut;

/// Runs curl mode and returns the process exit code.
pub(crate) fn run(args: CurlArgs, matches: &ArgMatches) -> ExitCode {
    let report = Report::new(args.silent, args.show_error);
    let data = args.request.data_in_order(matches);
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
        match Session::new(args, &data, report) {
            Ok(session) => session.run_all().await,
            Err(error) => {
                report.error(&error);
                error.code()
            }
        }
    });
    // Connection drivers and a resolver thread may still run; nothing they do matters now.
    runtime.shutdown_background();
    ExitCode::from(code)
}

/// Everything the transfers of one invocation share.
#[derive(Debug)]
struct Session {
    /// The command line.
    args: CurlArgs,
    /// The client of the invocation's one pool.
    client: pool::Client,
    /// What every request starts from.
    template: RequestTemplate,
    /// The parsed `-w` format.
    write_out: Option<WriteOut>,
    /// ALPN protocols offered over TLS, for `-v`.
    alpn_offer: &'static str,
    /// The `-v` trace.
    verbose: Verbose,
    /// Error and warning messages.
    report: Report,
}

impl Session {
    /// Validates what the command line refers to (files, pool settings) and builds the pool.
    fn new(args: CurlArgs, data: &[args::DataArg], report: Report) -> Result<Session, CurlError> {
        let template = RequestTemplate::new(&args.request, args.head, data)?;
        let write_out = match &args.write_out {
            None => None,
            Some(format) => {
                let format = match format.strip_prefix('@') {
                    Some(path) => {
                        String::from_utf8_lossy(&request::read_source(path)?).into_owned()
                    }
                    None => format.clone(),
                };
                let (write_out, unknown) = WriteOut::parse(&format);
                for name in unknown {
                    report.warning(&format!("unknown --write-out variable: '{name}'"));
                }
                Some(write_out)
            }
        };
        if args.output.len() > args.urls.len() {
            report.warning("got more output options than URLs");
        }
        let client = setup::build_client(&args)?;
        let alpn_offer = match setup::protocol_policy(&args.connect) {
            pool::ProtocolPolicy::Http1Only => "http/1.1",
            _ => "h2,http/1.1",
        };
        Ok(Session {
            verbose: Verbose::new(args.verbose),
            args,
            client,
            template,
            write_out,
            alpn_offer,
            report,
        })
    }

    /// Runs every transfer in order; returns the exit code of the last failure, or 0.
    async fn run_all(&self) -> u8 {
        let mut exit_code = 0;
        for (index, url) in self.args.urls.iter().enumerate() {
            let mut sink = match self.args.output.get(index) {
                Some(path) => Sink::file(path.clone()),
                None => Sink::stdout(),
            };
            let mut record = TransferRecord::start(url, self.template.first_hop().method);
            record.output_file = sink.path().map(|p| p.to_path_buf());
            let result = self.bounded_transfer(url, &mut sink, &mut record).await;
            record.finished_at = Some(record.elapsed());
            if let Err(error) = result {
                self.report.error(&error);
                record.exit_code = error.code();
                record.error = Some(error.message().to_owned());
                exit_code = error.code();
            }
            if let Some(write_out) = &self.write_out {
                let mut stdout = Sink::stdout();
                let text = write_out.render(&record);
                if let Err(error) = stdout.write(text.as_bytes()).and_then(|()| stdout.finish()) {
                    self.report.error(&error);
                    exit_code = error.code();
                }
            }
        }
        exit_code
    }

    /// One transfer, bounded by `-m`.
    async fn bounded_transfer(
        &self,
        url: &str,
        sink: &mut Sink,
        record: &mut TransferRecord,
    ) -> Result<(), CurlError> {
        let transfer = self.transfer(url, sink, record);
        let limit = self.args.max_time.filter(|t| !t.is_zero());
        let Some(limit) = limit else {
            return transfer.await;
        };
        let outcome = tokio::time::timeout(limit, transfer).await;
        match outcome {
            Ok(result) => result,
            Err(_elapsed) => Err(CurlError::operation_timeout(
                record.elapsed(),
                record.received,
            )),
        }
    }

    /// One transfer: the request for `url` and, with `-L`, its redirects.
    async fn transfer(
        &self,
        url: &str,
        sink: &mut Sink,
        record: &mut TransferRecord,
    ) -> Result<(), CurlError> {
        let mut uri = url::parse_url(url)?;
        record.url = uri.to_string();
        let mut hop = self.template.first_hop();
        loop {
            match self.exchange(&uri, &hop, sink, record).await? {
                Next::Done => return Ok(()),
                Next::Redirect(next) => {
                    redirect::check_limit(record.num_redirects, self.args.redirect_limit())?;
                    record.num_redirects += 1;
                    record.redirect_time = record.elapsed();
                    self.verbose
                        .info(&format!("Issue another request to this URL: '{next}'"));
                    hop = redirect::next_hop(record.status.unwrap_or_default(), &hop, &uri, &next);
                    uri = next;
                    record.url = uri.to_string();
                }
            }
        }
    }

    /// One request and its response: the head is recorded and traced, then the response is
    /// followed (`-L`), refused (`-f`) or written to the sink.
    async fn exchange(
        &self,
        uri: &Uri,
        hop: &Hop,
        sink: &mut Sink,
        record: &mut TransferRecord,
    ) -> Result<Next, CurlError> {
        let target = Target::of(uri);
        let (parts, mut body) = self.send(uri, hop, &target, record).await?;
        let head = output::response_head(&parts);
        record.size_header += head.len() as u64;
        let connection = record.connection.clone();
        let connection = connection.as_ref();
        let closes = output::server_closes(&parts);

        let location = parts
            .headers
            .get(LOCATION)
            .filter(|_| redirect::is_followed(parts.status))
            .map(|value| url::resolve_location(uri, value.as_bytes()));
        if let Some(next) = location {
            if self.args.location {
                if self.args.include || self.args.head {
                    sink.write(&head)?;
                }
                // Read the redirect's body to its end so the connection can serve the next hop.
                self.read_body(&mut body, &target, record, None).await?;
                self.verbose.done(connection, &target.host, closes);
                return Ok(Next::Redirect(next?));
            }
            record.redirect_url = next.ok().map(|u| u.to_string());
        }

        if self.args.fail && parts.status.as_u16() >= 400 {
            // Nothing of the response is written; dropping the body closes the connection.
            self.verbose.done(connection, &target.host, true);
            return Err(CurlError::http_error(parts.status.as_u16()));
        }
        if self.args.include || self.args.head {
            sink.write(&head)?;
        }
        let output = if self.args.head {
            None
        } else {
            Some(&mut *sink)
        };
        self.read_body(&mut body, &target, record, output).await?;
        sink.finish()?;
        self.verbose.done(connection, &target.host, closes);
        Ok(Next::Done)
    }

    /// Sends one request and waits for the response head, recording and tracing it.
    async fn send(
        &self,
        uri: &Uri,
        hop: &Hop,
        target: &Target,
        record: &mut TransferRecord,
    ) -> Result<(Parts, pool::Body), CurlError> {
        let request = self.template.build(uri, hop)?;
        let sent_headers = request.headers().clone();
        record.method = hop.method.clone();
        record.size_upload = self.template.body_len(hop) as u64;
        let response = match self.client.request(request).await {
            Ok(response) => response,
            Err(error) => return Err(self.failed(&error, target, record)),
        };
        record.head_at = Some(record.elapsed());
        let connection = Some(response.body().connection().clone());
        if connection.as_ref().is_some_and(|c| !c.is_reused()) {
            record.num_connects += 1;
        }
        let (parts, body) = response.into_parts();
        record.status = Some(parts.status);
        record.version = Some(parts.version);
        record.headers = parts.headers.clone();
        record.size_download = 0;
        record.redirect_url = None;
        let context = VerboseContext {
            host: &target.host,
            alpn_offer: self.alpn_offer,
            http2_over_cleartext: self.args.connect.http2 && uri.scheme_str() == Some("http"),
        };
        self.verbose.exchange(
            &context,
            connection.as_ref(),
            (&hop.method, uri, &sent_headers),
            &output::response_head(&parts),
        );
        record.connection = connection;
        Ok((parts, body))
    }

    /// Reads `body` to its end, writing it unmodified to `output` if given.
    async fn read_body(
        &self,
        body: &mut pool::Body,
        target: &Target,
        record: &mut TransferRecord,
        mut output: Option<&mut Sink>,
    ) -> Result<(), CurlError> {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| self.failed(&e, target, record))?;
            if let Some(data) = frame.data_ref() {
                record.size_download += data.len() as u64;
                record.received += data.len() as u64;
                if let Some(sink) = output.as_deref_mut() {
                    sink.write(data)?;
                }
            }
        }
        Ok(())
    }

    /// Traces a pool error with `-v` and maps it to curl's code and message.
    fn failed(&self, error: &pool::Error, target: &Target, record: &TransferRecord) -> CurlError {
        self.verbose.info(&error.to_string());
        exit::classify(
            error,
            &Attempt {
                host: &target.host,
                port: target.port,
                elapsed: record.elapsed(),
                received: record.received,
            },
        )
    }
}

/// The host and port a request goes to, as messages name them.
#[derive(Debug)]
struct Target {
    /// The URL's host without IPv6 brackets.
    host: String,
    /// The URL's port, explicit or the scheme's default.
    port: u16,
}

impl Target {
    /// Where a request for `uri` goes.
    fn of(uri: &Uri) -> Target {
        let host = uri.host().unwrap_or_default();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        Target {
            host: host.to_owned(),
            port,
        }
    }
}

/// What follows an exchange.
#[derive(Debug)]
enum Next {
    /// The transfer is complete.
    Done,
    /// `-L` follows a redirect to this URL.
    Redirect(Uri),
}
