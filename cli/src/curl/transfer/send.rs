//! The exchange's two ends: sending one request and recording and tracing its head, reading
//! the response body (decoded, paced, bounded), and waiting for an upload the response came
//! before the end of; with the target a request goes to and how a pool error becomes curl's
//! exit code.

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::response::Parts;
use http::{Request, Uri};

use crate::curl::Session;
use crate::curl::connect_to::{ConnectToArgs, Dial};
use crate::curl::decode::Decoder;
use crate::curl::exit::{self, Attempt, CurlError};
use crate::curl::output::{self, Informational};
use crate::curl::pace::{self, Pace, PacedUpload};
use crate::curl::progress::Progress;
use crate::curl::record::{Through, TransferRecord};
use crate::curl::request::{Forwarded, Hop, PerRequest, RequestTemplate};
use crate::curl::request_size::request_size;
use crate::curl::sink::{Sink, stdout_is_terminal};
use crate::curl::verbose::VerboseContext;

/// The size from which curl sends `-d`'s data apart from the request head over HTTP/1 (its
/// `MAX_INITIAL_POST_SIZE`, 64 KiB).
const INITIAL_POST_LIMIT: usize = 64 * 1024;

/// A response extension: `417 Expectation Failed` to a request whose `Expect: 100-continue`
/// poolcurl added, before any of its body went; the transfer sends it again without asking.
#[derive(Clone, Copy, Debug)]
pub(super) struct AskedAndRefused;

impl Session {
    /// Sends one request and waits for the response head, recording and tracing it.
    pub(super) async fn send(
        &self,
        template: &RequestTemplate,
        uri: &Uri,
        hop: &Hop,
        extra: &PerRequest,
        target: &Target,
        record: &mut TransferRecord,
    ) -> Result<(Parts, pool::Body), CurlError> {
        let own_client = self.client.as_ref().map_err(CurlError::clone)?;
        if let (Some("https"), Some(refusal)) = (uri.scheme_str(), &self.tls_refusal) {
            return Err(refusal.clone());
        }
        let stream = template.stream_for(hop);
        if stream.is_some() && self.args.net.http1_0 {
            return Err(CurlError::new(
                25,
                "Chunky upload is not supported by HTTP 1.0",
            ));
        }
        let mut request = template.build_for(uri, hop, extra)?;
        // What the request line carries (a non-ASCII path percent-encoded), for `-v` and
        // `%{size_request}`.
        let wire = request.uri().clone();
        let informational = Informational::default();
        informational.listen(&mut request);
        let expects_continue = !extra.no_expect && template.expects_continue(hop);
        if expects_continue {
            request.extensions_mut().insert(pool::ExpectContinue);
        }
        // A progress of its own: an establishment launched for an earlier request of the
        // transfer goes on for the pool and would still note its steps in that one's.
        record.stage = pool::Progress::new();
        request.extensions_mut().insert(record.stage.clone());
        let mut sent_headers = request.headers().clone();
        let omits_host = request.extensions().get::<pool::OmitHost>().is_some();
        let spellings = request
            .extensions()
            .get::<pool::RequestHeaderNames>()
            .cloned();
        let method = request.method().clone();
        record.method = method.clone();
        record.size_upload = template.body_len(hop) as u64;
        record.referer = sent_headers
            .get(http::header::REFERER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // `-Y`/`-y`: a head that takes a whole window has brought 0 bytes in it.
        let pace = self.pace_args();
        // `--limit-rate` paces an upload, as curl does (`-d`'s data goes with the head).
        let upload = template.body_for(hop);
        let rate = pace.limit_rate.filter(|&rate| rate > 0);
        let request = match (stream, rate) {
            (Some(stream), rate) => {
                let body = stream.body()?;
                let (parts, _) = request.into_parts();
                let body = match rate {
                    Some(rate) => {
                        // Read in the pace's blocks: each goes as one chunk, as counted.
                        let body = body.in_blocks_of(pace::upload_block(rate));
                        pool::RequestBody::new(PacedUpload::new(body, rate))
                    }
                    None => pool::RequestBody::new(body),
                };
                Request::from_parts(parts, body)
            }
            (None, Some(rate)) if !upload.is_empty() && !self.composed.inline_data => {
                let (parts, body) = request.into_parts();
                Request::from_parts(parts, pool::RequestBody::new(PacedUpload::new(body, rate)))
            }
            _ => request.map(pool::RequestBody::new),
        };
        let client = target
            .alternative
            .as_ref()
            .map_or(own_client, |a| &a.client);
        let sent = client.request(request);
        let answered = match pace.low_speed() {
            None => sent.await,
            Some(low) => tokio::time::timeout(low.time, sent)
                .await
                .map_err(|_| low.error())?,
        };
        let response = match answered {
            Ok(response) => response,
            Err(error) => {
                record.http_connect = error.proxy_status().unwrap_or(record.http_connect);
                record.tls_peer = exit::tls_peer(&error);
                // TCP stood before the handshake failed: curl counts the connect.
                record.num_connects += u32::from(record.tls_peer.is_some());
                record.certificate_failure = error.certificate_check().map(|check| {
                    let through = if error.is_proxy() {
                        Through::Proxy
                    } else {
                        Through::Origin
                    };
                    (check, through)
                });
                if let Some(answer) = error.proxy_response() {
                    let proxy = self.proxy_for(uri);
                    let challenge = error.proxy_challenge();
                    self.verbose
                        .refused_tunnel(proxy, &target.dial.authority, challenge, answer);
                    record.tunnel_heads = [challenge.unwrap_or_default(), answer].concat().into();
                }
                return Err(self.failed(&error, target, record, None));
            }
        };
        record.head_at = Some(record.elapsed());
        let connection = Some(response.body().connection().clone());
        if let Some(new) = connection.as_ref().filter(|c| !c.is_reused()) {
            // A tunnel whose challenge came on a connection the proxy then closed took two.
            let redialed = new
                .info()
                .proxy()
                .is_some_and(|route| route.connect_redialed);
            record.num_connects += 1 + u32::from(redialed);
            if new.info().tls().is_some() {
                record.handshaken = Some(new.clone());
            }
            let connect = |route: &pool::ProxyRoute| route.tunnel && route.socks_target.is_none();
            if let Some(route) = new.info().proxy().filter(|route| connect(route)) {
                // The tunnel opened for this request: the proxy answered its CONNECT with 2xx.
                record.http_connect = 200;
                let heads = [&route.connect_challenge, &route.connect_response];
                record.tunnel_heads = heads
                    .into_iter()
                    .flatten()
                    .map(String::as_str)
                    .collect::<String>()
                    .into();
            }
        }
        let http2 = response.version() == http::Version::HTTP_2;
        if expects_continue && !http2 {
            // The pool added it, last, as curl writes it.
            let value = http::HeaderValue::from_static("100-continue");
            sent_headers.append(http::header::EXPECT, value);
        }
        // Whether the body waited for a go-ahead: asked for (by the pool or `-H`) on HTTP/1.1.
        let body_waited = !http2
            && !self.args.net.http1_0
            && (!upload.is_empty() || stream.is_some())
            && sent_headers
                .get(http::header::EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        // curl writes `-d`'s data with the head only over HTTP/1 and below 64 KiB
        // (`MAX_INITIAL_POST_SIZE`); otherwise it goes as an upload, which curl says it ended.
        let apart = http2 || upload.len() >= INITIAL_POST_LIMIT;
        // A response before `100 Continue`: the pool never sent the body.
        let withheld = response.extensions().get::<pool::BodyWithheld>().is_some();
        if withheld {
            record.size_upload = 0;
        }
        // An answer of 300 or above before the upload ended: the pool sent no more of it, as
        // curl stops ("HTTP error before end of send").
        let stopped = response
            .extensions()
            .get::<pool::BodyStopped>()
            .map(pool::BodyStopped::bytes_sent);
        if let Some(sent) = stopped.filter(|_| stream.is_none()) {
            record.size_upload = sent;
        }
        // Data still going when the answer came: curl says it is all uploaded once it is,
        // after the response (`upload_finished`).
        record.still_sending =
            response
                .extensions()
                .get::<pool::BodyStillSending>()
                .map(|sending| {
                    let going = sending.sent_at_response() < template.body_len(hop) as u64;
                    (sending.clone(), going)
                });
        let still_going = record
            .still_sending
            .as_ref()
            .is_some_and(|(_, going)| *going);
        if http2 {
            // hyper leaves the chunked framing's header out of an HTTP/2 request.
            sent_headers.remove(http::header::TRANSFER_ENCODING);
        }
        // A streamed upload: what has gone so far, chunked over HTTP/1.1 (with the last
        // chunk once the stream ended), and whether `-v` shows its end.
        record.streamed = stream.filter(|_| !withheld).map(|s| (s.clone(), !http2));
        let (streamed, chunked_end) = match stream.filter(|_| !withheld) {
            Some(stream) => {
                record.size_upload = stream.sent(!http2);
                let (shown, ended) = stream.shown(!http2);
                (Some(Bytes::from(shown)), ended && !http2)
            }
            None => (None, false),
        };
        // The body bytes of this request, counted above as its upload.
        let data = if self.composed.inline_data {
            record.size_upload as usize
        } else {
            0
        };
        let wire_target = template.target_for(&wire);
        let proxy = self.proxy_for(uri);
        record.size_request += match Forwarded::of(connection.as_ref(), proxy) {
            None => request_size(&method, wire_target, &sent_headers, http2, data),
            // Through a forward proxy the absolute form and the proxy's headers count too.
            Some(forward) => {
                let mut counted = sent_headers.clone();
                counted.extend(forward.added(&sent_headers));
                let target = match template.has_target() {
                    true => wire_target.to_owned(),
                    false => wire.to_string(),
                };
                request_size(&method, &target, &counted, http2, data)
            }
        };
        let (mut parts, body) = response.into_parts();
        informational.attach(&mut parts);
        let expectation_failed = withheld && parts.status == http::StatusCode::EXPECTATION_FAILED;
        if expectation_failed && expects_continue {
            // poolcurl asked, so it may send the request again without asking (`-H`'s own
            // `Expect` would ask again).
            parts.extensions.insert(AskedAndRefused);
        }
        // An HTTP/0.9 reply has no status line: curl's `%{http_code}` is 000 for it.
        record.status = (parts.version != http::Version::HTTP_09).then_some(parts.status);
        record.version = Some(parts.version);
        record.headers = parts.headers.clone();
        if let Some(file) = &self.args.transfer.etag_save {
            crate::curl::file_meta::save_etags(file, &parts.headers)?;
        }
        record.size_download = 0;
        record.redirect_url = None;
        let alt_svc_added = self.take_alternatives(uri, &parts);
        let head = output::response_head(&parts);
        let context = VerboseContext {
            host: &target.host,
            dial: &target.dial,
            alpn_offer: self.alpn_offer,
            http2_over_cleartext: self.args.connect.http2 && uri.scheme_str() == Some("http"),
            http1_0: self.args.net.http1_0,
            proxy,
            target: template.has_target().then_some(wire_target),
            omits_host,
            quiet_data: target.quiet_data,
            // A body that waited for a go-ahead went after the head, as an upload's does;
            // curl says nothing of the kind for a chunked one, whose last chunk ends it.
            upload: (!self.composed.inline_data || ((body_waited || apart) && !withheld))
                && (stream.is_none() || http2)
                && stopped.is_none()
                && !still_going,
            chunked_end,
            spellings: spellings.as_ref(),
            insecure: self.args.connect.insecure,
            cert_status: self.args.net.tls.cert_status,
            auth_note: extra.auth_note.as_deref(),
            alt_svc_added: &alt_svc_added,
            continued: body_waited && head.starts_with(b"HTTP/1.1 100 "),
            // The body went without a go-ahead and was not refused: the wait ran out.
            waited_out: body_waited && !withheld && !output::has_continue(&head),
            expectation_failed,
            // An error answer before the upload ended, also one that came before `100
            // Continue`; curl keeps sending to a server that said it closes (and says nothing).
            stopped_sending: (stopped.is_some()
                || (withheld && parts.status.as_u16() >= 300 && !expectation_failed))
                && !output::server_closes(&parts),
        };
        let sent_body = match streamed {
            Some(shown) => shown,
            None if withheld => Bytes::new(),
            // What went before the stop.
            None => match stopped {
                Some(sent) => upload.slice(..upload.len().min(sent as usize)),
                None => upload,
            },
        };
        self.verbose.exchange(
            &context,
            connection.as_ref(),
            (&method, &wire, &sent_headers),
            &sent_body,
            &head,
        );
        record.connection = connection;
        Ok((parts, body))
    }

    /// A response that came while the pool was still sending the request's data: curl's
    /// transfer ends only once its upload has, so this waits for the rest (the process would
    /// otherwise end with the upload cut short) and counts it. A streamed upload is waited for
    /// by the transfer's loop (`Streamed::settled`), which counts its chunks.
    pub(super) async fn upload_finished(&self, record: &mut TransferRecord) {
        let Some((sending, going)) = record.still_sending.take() else {
            return;
        };
        let sent = sending.sent().await;
        if record.streamed.is_some() {
            return;
        }
        // Counted whole when the head came; what went is what counts. Data that had all gone
        // to the connection by then was said to be uploaded with the request's lines.
        let whole = std::mem::replace(&mut record.size_upload, sent);
        if going && sent == whole {
            self.verbose.info("We are completely uploaded and fine");
        }
    }

    /// Reads `body` to its end, decoding it (its transfer codings, and with `--compressed` its
    /// content codings) into `output` if given. Trailers
    /// (after a chunked HTTP/1 body, or HTTP/2's) follow the body as header lines in `-D`'s
    /// file and, with `-i`, in the output, as curl writes them (names in lower case: the pool
    /// keeps the server's spelling for the head only); `%{size_header}` leaves them out, as
    /// curl's does.
    pub(super) async fn read_body(
        &self,
        body: &mut pool::Body,
        parts: &Parts,
        target: &Target,
        record: &mut TransferRecord,
        mut output: Option<&mut Sink>,
        progress: &mut Progress,
    ) -> Result<(), CurlError> {
        let length = content_length(parts);
        if output.is_some() {
            progress.set_total(length);
        }
        let mut decoder = Decoder::for_response(self.args.send.compressed, &parts.headers);
        let mut pace = Pace::start(&self.pace_args());
        let mut first = true;
        let mut trailers = Vec::new();
        while let Some(frame) = progress.during(pace.next_frame(body)).await? {
            let remaining = length.map(|l| l.saturating_sub(record.size_download));
            let frame = frame.map_err(|e| self.failed(&e, target, record, remaining))?;
            if let Some(fields) = frame.trailers_ref() {
                output::write_fields(&mut trailers, fields);
            }
            if let Some(data) = frame.data_ref() {
                self.verbose.received_data(data, first, target.quiet_data);
                first = false;
                // A body of unannounced length stops at the limit, as curl 8.4 and later do.
                if self
                    .max_filesize()
                    .is_some_and(|max| record.size_download + data.len() as u64 > max)
                {
                    return Err(CurlError::file_too_large());
                }
                record.size_download += data.len() as u64;
                record.received += data.len() as u64;
                if let Some(sink) = output.as_deref_mut() {
                    sink.write_body(&decoder.push(data)?)?;
                    progress.update(record.size_download);
                }
                pace.received(data.len()).await?;
            }
        }
        if let Some(sink) = output.as_deref_mut() {
            sink.write_body(&decoder.finish()?)?;
        }
        if trailers.is_empty() {
            return Ok(());
        }
        let mut dump = self.dump_header.as_ref().map(crate::curl::lock);
        let included = output.filter(|_| self.args.include);
        crate::curl::sink::write_head(dump.as_deref_mut(), included, &trailers)
    }

    /// Maps a pool error to curl's code and message, and ends the `-v` trace with them.
    fn failed(
        &self,
        error: &pool::Error,
        target: &Target,
        record: &TransferRecord,
        remaining: Option<u64>,
    ) -> CurlError {
        let failure = exit::classify(
            error,
            &Attempt {
                host: &target.host,
                dial_host: &target.dial.host,
                dial_port: target.dial.port,
                elapsed: record.elapsed(),
                received: record.size_download,
                remaining,
                prior_knowledge: target.prior_knowledge,
                interface: self.args.connect.interface.as_deref(),
            },
        );
        self.verbose.failed(
            exit::failed_step(error).map(|step| (step, target.host.as_str(), self.alpn_offer)),
            record.connection.as_ref(),
            failure.message(),
        );
        failure
    }
}

/// The host and port a request goes to, as messages name them.
#[derive(Debug)]
pub(super) struct Target {
    /// The URL's host without IPv6 brackets.
    pub(super) host: String,
    /// Where its connection is dialed (`--connect-to`).
    pub(super) dial: Dial,
    /// Whether the request speaks HTTP/2 with prior knowledge.
    pub(super) prior_knowledge: bool,
    /// Whether `-v` leaves out its `[N bytes data]` notes: the body goes to a terminal, where
    /// it shows itself.
    pub(super) quiet_data: bool,
    /// The `--alt-svc` alternative the request goes to, if any.
    pub(super) alternative: Option<super::alternative::Alternative>,
}

impl Target {
    /// The host of `url` (a transfer's effective URL) without IPv6 brackets; empty when it
    /// does not parse.
    pub(super) fn host_in(url: &str) -> String {
        let uri = url.parse::<Uri>().ok();
        uri.as_ref()
            .map(Target::host_of)
            .unwrap_or_default()
            .to_owned()
    }

    /// The URL's host without IPv6 brackets.
    pub(super) fn host_of(uri: &Uri) -> &str {
        let host = uri.host().unwrap_or_default();
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    /// Where a request for `uri` goes; `only_ipv6` is `-6` (`Some(true)`) or `-4`
    /// (`Some(false)`).
    ///
    /// # Errors
    ///
    /// Exit 49 when the `--connect-to` entry it matches has a bad port; exit 7 when it would
    /// dial an address of the family `-4`/`-6` rules out (curl finds no address to try).
    pub(super) fn of(
        uri: &Uri,
        prior_knowledge: bool,
        (connect_to, only_ipv6): (&ConnectToArgs, Option<bool>),
        sink: &Sink,
    ) -> Result<Target, CurlError> {
        let host = Target::host_of(uri);
        let port = crate::curl::url::port_of(uri);
        let dial = connect_to.check(host, port)?;
        // The pool dials an address as given; the resolver's family filter never sees it.
        let literal = dial.host.parse::<std::net::IpAddr>().ok();
        if literal
            .zip(only_ipv6)
            .is_some_and(|(ip, v6)| ip.is_ipv6() != v6)
        {
            return Err(CurlError::new(7, "Couldn't connect to server"));
        }
        Ok(Target {
            dial,
            host: host.to_owned(),
            prior_knowledge,
            quiet_data: sink.path().is_none() && stdout_is_terminal(),
            alternative: None,
        })
    }
}

/// The body length the response announces, if it announces one.
pub(super) fn content_length(parts: &Parts) -> Option<u64> {
    announced_length(&parts.headers)
}

/// The body length `headers` announce (`Content-Length`), if they announce one.
pub(super) fn announced_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}
