//! What one transfer did: the facts `-w` prints and error messages quote.
//!
//! The transfer loop fills a [`TransferRecord`] as it goes (including across redirects), so a
//! transfer cut short by an error or by `-m` still reports what happened up to that point.
//! Connection facts come from the pool's [`pool::ConnectionHandle`], never from guesses.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http::{HeaderMap, Method, StatusCode, Version};

/// The facts of one transfer (one command-line URL, redirects included).
#[derive(Debug)]
pub(crate) struct TransferRecord {
    /// When the transfer started; every time below is measured from here.
    pub(crate) started: Instant,
    /// The URL as given (after globbing; `%{url}`).
    pub(crate) input_url: String,
    /// The URL's position among the invocation's URLs, from 0 (`%{urlnum}`).
    pub(crate) url_num: usize,
    /// The URL last requested (`%{url_effective}`).
    pub(crate) url: String,
    /// The `Referer` the last request sent.
    pub(crate) referer: Option<String>,
    /// The method of the last request.
    pub(crate) method: Method,
    /// The last response's status.
    pub(crate) status: Option<StatusCode>,
    /// The last response's HTTP version.
    pub(crate) version: Option<Version>,
    /// The last response's headers.
    pub(crate) headers: HeaderMap,
    /// The connection that served the last response.
    pub(crate) connection: Option<pool::ConnectionHandle>,
    /// New connections the transfer opened (0 when every request reused one).
    pub(crate) num_connects: u32,
    /// The last connection the transfer opened with a TLS handshake: `%{certs}`,
    /// `%{num_certs}` (and `%{ssl_verify_result}` on a later cleartext hop) describe it on
    /// every hop after it, as curl keeps a transfer's certificates until its next handshake.
    pub(crate) handshaken: Option<pool::ConnectionHandle>,
    /// Redirects followed.
    pub(crate) num_redirects: u32,
    /// When the last redirect was followed (the time spent on redirects).
    pub(crate) redirect_time: Duration,
    /// When the last response head arrived.
    pub(crate) head_at: Option<Duration>,
    /// When the transfer ended, successfully or not.
    pub(crate) finished_at: Option<Duration>,
    /// Body bytes of the last response.
    pub(crate) size_download: u64,
    /// Body bytes received in the whole transfer.
    pub(crate) received: u64,
    /// Response head bytes received in the whole transfer.
    pub(crate) size_header: u64,
    /// Request body bytes sent by the last request.
    pub(crate) size_upload: u64,
    /// The last request's streamed upload and whether it went chunked: the transfer ends
    /// once it is sent, and `size_upload` is counted then, as curl counts it.
    pub(crate) streamed: Option<(std::sync::Arc<super::upload::Streamed>, bool)>,
    /// The last request's upload, when its response came before the pool had seen it all
    /// written and the pool goes on sending: the transfer ends once it has. With it, whether
    /// data was still to go when the answer came (curl then says it is uploaded only after the
    /// response).
    pub(crate) still_sending: Option<(pool::BodyStillSending, bool)>,
    /// Request bytes of the whole transfer, as curl counts them ([`super::request_size`]).
    pub(crate) size_request: u64,
    /// The proxy's answer to this transfer's `CONNECT` (200, or a refusal's status); 0 when
    /// no tunnel was opened for it (none needed, or a reused connection).
    pub(crate) http_connect: u16,
    /// The heads of the proxy's answers to the `CONNECT` of a tunnel opened (or refused) for
    /// the last request: a challenge's `407` when there was one, then the answer. Taken by
    /// the exchange, which writes them before the response's head as curl does.
    pub(crate) tunnel_heads: Vec<u8>,
    /// The `Location` of a redirect that was not followed.
    pub(crate) redirect_url: Option<String>,
    /// The server a TLS handshake that failed was connected to (`%{remote_ip}`,
    /// `%{remote_port}` and `%{scheme}` show it, as curl's do once TCP stands).
    pub(crate) tls_peer: Option<std::net::SocketAddr>,
    /// The `-o` file of this transfer.
    pub(crate) output_file: Option<PathBuf>,
    /// Where the transfer's last request stands in the pool (each request carries a progress
    /// of its own), for `-m`'s words when it runs out.
    pub(crate) stage: pool::Progress,
    /// The transfer's exit code (0 on success).
    pub(crate) exit_code: u8,
    /// The transfer's error message, if it failed.
    pub(crate) error: Option<String>,
    /// What was wrong with the server's certificate, when the transfer failed on it (`through
    /// proxy`: the proxy's certificate).
    pub(crate) certificate_failure: Option<(pool::CertificateCheck, Through)>,
}

/// Whose TLS certificate a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Through {
    /// The origin's (`%{ssl_verify_result}`).
    Origin,
    /// An `https://` proxy's (`%{proxy_ssl_verify_result}`).
    Proxy,
}

impl TransferRecord {
    /// A record for a transfer of `url` starting now.
    pub(crate) fn start(url: &str, method: Method) -> TransferRecord {
        TransferRecord {
            started: Instant::now(),
            input_url: url.to_owned(),
            url_num: 0,
            url: url.to_owned(),
            referer: None,
            method,
            status: None,
            version: None,
            headers: HeaderMap::new(),
            connection: None,
            num_connects: 0,
            handshaken: None,
            num_redirects: 0,
            redirect_time: Duration::ZERO,
            head_at: None,
            finished_at: None,
            size_download: 0,
            received: 0,
            size_header: 0,
            size_upload: 0,
            streamed: None,
            still_sending: None,
            size_request: 0,
            http_connect: 0,
            tunnel_heads: Vec::new(),
            redirect_url: None,
            tls_peer: None,
            output_file: None,
            stage: pool::Progress::new(),
            exit_code: 0,
            error: None,
            certificate_failure: None,
        }
    }

    /// Time since the transfer started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The transfer's total time (until now if it has not ended).
    pub(crate) fn total_time(&self) -> Duration {
        self.finished_at.unwrap_or_else(|| self.elapsed())
    }

    /// The connection of the last response, if it was opened by this request (not reused).
    pub(crate) fn new_connection(&self) -> Option<&pool::ConnectionHandle> {
        self.connection.as_ref().filter(|c| !c.is_reused())
    }
}
