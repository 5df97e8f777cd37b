//! `-w FORMAT`: curl's write-out, printed on stdout after every transfer (failed ones too).
//!
//! `%{name}` expands a variable, `%header{name}` a response header (its first field of that
//! name), `%%` is `%`, and `\n`,
//! `\r`, `\t`, `\\` are escapes. `%{json}` and `%{header_json}` print every variable / every
//! response header as JSON ([`super::write_json`]); `%{stderr}` sends the rest of the format to
//! stderr and `%{stdout}` back. An unknown variable expands to nothing and draws curl's warning
//! (`poolcurl: unknown --write-out variable: 'x'`) on stderr each time the format is printed,
//! even with `-s`, as curl does. Times print as seconds with six decimals.
//!
//! The connection variables come from the pool's [`pool::ConnectionHandle`]:
//! `%{conn_id}` (`-1` without a connection), `%{conn_reused}`, `%{partition}`,
//! `%{num_connects}` (connections the transfer opened), `%{http_version}` (`1.1` or `2`), the
//! addresses, and the establishment times: `%{time_namelookup}`, `%{time_connect}`,
//! `%{time_appconnect}` (0 for cleartext) and `%{time_pretransfer}` are the connection's own
//! timings, measured from the start of its establishment, and 0 for a reused connection.
//! `%{num_connects}` counts a connection whose TLS handshake failed, as curl counts the TCP
//! connect under it. `%{num_certs}` counts the certificates the server presented on the last
//! connection the transfer opened with a handshake (on the hops after it too, whichever
//! connection they took); `%{ssl_verify_result}` is OpenSSL's code for what checking the server's
//! certificate found (0: valid), from the connection's [`pool::CertificateCheck`] or the
//! failure's. With `-k` the pool still checks the certificate against the roots it would have
//! trusted (`--cacert` included), where curl skips loading them and reports 20 (unknown
//! issuer) even for a certificate `--cacert` would have trusted. `%{certs}` is that chain in
//! OpenSSL's text ([`super::cert_text`]); the pool keeps the chain whenever `-w` is given, as
//! curl collects it whenever `-w` is given.

use std::fmt::Write;
use std::time::Duration;

use super::record::{Through, TransferRecord};
use super::write_json;

/// A variable `-w` can expand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Var {
    Certs,
    ConnId,
    ConnReused,
    ContentType,
    ErrorMsg,
    ExitCode,
    FilenameEffective,
    FtpEntryPath,
    HttpCode,
    HttpConnect,
    HttpVersion,
    LocalIp,
    LocalPort,
    Method,
    NumCerts,
    NumConnects,
    NumHeaders,
    NumRedirects,
    Partition,
    RedirectUrl,
    RemoteIp,
    RemotePort,
    Scheme,
    SizeDownload,
    SizeHeader,
    SizeRequest,
    SizeUpload,
    SpeedDownload,
    SpeedUpload,
    TimeAppConnect,
    TimeConnect,
    TimeNameLookup,
    TimePreTransfer,
    TimeRedirect,
    TimeStartTransfer,
    TimeTotal,
    Url,
    UrlEffective,
    UrlNum,
    Referer,
    SslVerifyResult,
    ProxySslVerifyResult,
}

/// Variable names, as curl spells them.
const VARIABLES: &[(&str, Var)] = &[
    ("certs", Var::Certs),
    ("conn_id", Var::ConnId),
    ("conn_reused", Var::ConnReused),
    ("content_type", Var::ContentType),
    ("errormsg", Var::ErrorMsg),
    ("exitcode", Var::ExitCode),
    ("filename_effective", Var::FilenameEffective),
    ("ftp_entry_path", Var::FtpEntryPath),
    ("http_code", Var::HttpCode),
    ("http_connect", Var::HttpConnect),
    ("response_code", Var::HttpCode),
    ("http_version", Var::HttpVersion),
    ("local_ip", Var::LocalIp),
    ("local_port", Var::LocalPort),
    ("method", Var::Method),
    ("num_certs", Var::NumCerts),
    ("num_connects", Var::NumConnects),
    ("num_headers", Var::NumHeaders),
    ("num_redirects", Var::NumRedirects),
    ("partition", Var::Partition),
    ("redirect_url", Var::RedirectUrl),
    ("remote_ip", Var::RemoteIp),
    ("remote_port", Var::RemotePort),
    ("scheme", Var::Scheme),
    ("size_download", Var::SizeDownload),
    ("size_header", Var::SizeHeader),
    ("size_request", Var::SizeRequest),
    ("size_upload", Var::SizeUpload),
    ("speed_download", Var::SpeedDownload),
    ("speed_upload", Var::SpeedUpload),
    ("time_appconnect", Var::TimeAppConnect),
    ("time_connect", Var::TimeConnect),
    ("time_namelookup", Var::TimeNameLookup),
    ("time_pretransfer", Var::TimePreTransfer),
    ("time_redirect", Var::TimeRedirect),
    ("time_starttransfer", Var::TimeStartTransfer),
    ("time_total", Var::TimeTotal),
    ("url", Var::Url),
    ("url_effective", Var::UrlEffective),
    ("urlnum", Var::UrlNum),
    ("referer", Var::Referer),
    ("ssl_verify_result", Var::SslVerifyResult),
    ("proxy_ssl_verify_result", Var::ProxySslVerifyResult),
];

/// Which stream the format is printing to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// stdout (the default).
    Stdout,
    /// stderr, after `%{stderr}`.
    Stderr,
}

/// One piece of a parsed format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(Var),
    Header(String),
    Json,
    HeaderJson,
    Switch(Stream),
    /// `%{onerror}`: the rest of the format prints only for a transfer that failed.
    OnError,
    Unknown(String),
}

/// A parsed `-w` format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteOut {
    parts: Vec<Part>,
}

impl WriteOut {
    /// Parses `format`; also returns the unknown variable names, in order, for the caller to
    /// warn about.
    pub(crate) fn parse(format: &str) -> (WriteOut, Vec<String>) {
        let mut parts = Vec::new();
        let mut unknown = Vec::new();
        let mut text = String::new();
        let mut rest = format;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            match c {
                // curl 7.88 knows `\n`, `\r` and `\t`; any other pair goes out as written,
                // the second character included (`\\` is two backslashes, `\%` hides a `%`).
                '\\' => match rest.chars().next() {
                    Some(e) => {
                        match e {
                            'n' => text.push('\n'),
                            'r' => text.push('\r'),
                            't' => text.push('\t'),
                            other => {
                                text.push('\\');
                                text.push(other);
                            }
                        }
                        rest = &rest[e.len_utf8()..];
                    }
                    None => text.push('\\'),
                },
                '%' if rest.starts_with('%') => {
                    text.push('%');
                    rest = &rest[1..];
                }
                '%' => {
                    let (prefix, is_header) = if rest.starts_with('{') {
                        ("{", false)
                    } else if rest.starts_with("header{") {
                        ("header{", true)
                    } else {
                        text.push('%');
                        continue;
                    };
                    let Some(end) = rest.find('}') else {
                        text.push('%');
                        continue;
                    };
                    let name = &rest[prefix.len()..end];
                    rest = &rest[end + 1..];
                    let part = if is_header {
                        Part::Header(name.to_owned())
                    } else {
                        match name {
                            "json" => Part::Json,
                            "header_json" => Part::HeaderJson,
                            "stderr" => Part::Switch(Stream::Stderr),
                            "stdout" => Part::Switch(Stream::Stdout),
                            "onerror" => Part::OnError,
                            _ => match VARIABLES.iter().find(|(n, _)| *n == name) {
                                Some((_, var)) => Part::Var(*var),
                                None => {
                                    unknown.push(name.to_owned());
                                    Part::Unknown(name.to_owned())
                                }
                            },
                        }
                    };
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(part);
                }
                other => text.push(other),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        (WriteOut { parts }, unknown)
    }

    /// Expands the format for one transfer into pieces for stdout and stderr, in order, and
    /// the names of unknown variables met (to warn about).
    pub(crate) fn render_streams(
        &self,
        record: &TransferRecord,
    ) -> (Vec<(Stream, String)>, Vec<String>) {
        let mut pieces: Vec<(Stream, String)> = Vec::new();
        let mut unknown = Vec::new();
        let mut stream = Stream::Stdout;
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Switch(next) => {
                    if !out.is_empty() {
                        pieces.push((stream, std::mem::take(&mut out)));
                    }
                    stream = *next;
                }
                Part::Unknown(name) => unknown.push(name.clone()),
                Part::OnError if record.exit_code == 0 => break,
                Part::OnError => {}
                Part::Json => out.push_str(&write_json::variables(record)),
                Part::HeaderJson => out.push_str(&write_json::headers(&record.headers)),
                other => self.render_part(&mut out, other, record),
            }
        }
        if !out.is_empty() {
            pieces.push((stream, out));
        }
        (pieces, unknown)
    }

    /// Expands the format for one transfer, every stream together (for tests).
    #[cfg(test)]
    pub(crate) fn render(&self, record: &TransferRecord) -> String {
        let (pieces, _) = self.render_streams(record);
        pieces.into_iter().map(|(_, text)| text).collect()
    }

    fn render_part(&self, out: &mut String, part: &Part, record: &TransferRecord) {
        {
            match part {
                Part::Text(text) => out.push_str(text),
                // The first field of that name, as curl's `curl_easy_header` (index 0) gives it.
                Part::Header(name) => {
                    let value = record.headers.get(name.as_str());
                    out.push_str(value.and_then(|v| v.to_str().ok()).unwrap_or_default());
                }
                Part::Var(var) => expand(out, *var, record),
                Part::Json
                | Part::HeaderJson
                | Part::Switch(_)
                | Part::OnError
                | Part::Unknown(_) => {}
            }
        }
    }
}

/// `bytes` over the transfer's total time, in whole bytes per second (0 for no time).
fn per_second(bytes: u64, record: &TransferRecord) -> u64 {
    let seconds = record.total_time().as_secs_f64();
    if seconds > 0.0 {
        (bytes as f64 / seconds) as u64
    } else {
        0
    }
}

/// Appends `var`'s value for `record` to `out`.
pub(crate) fn expand(out: &mut String, var: Var, record: &TransferRecord) {
    let connection = record.connection.as_ref();
    let info = connection.map(pool::ConnectionHandle::info);
    let timings = record.new_connection().map(|c| *c.info().timings());
    // Writing to a String cannot fail.
    let _ = match var {
        Var::ConnId => match connection {
            Some(c) => write!(out, "{}", c.id().as_u64()),
            None => write!(out, "-1"),
        },
        Var::ConnReused => write!(
            out,
            "{}",
            u8::from(connection.is_some_and(|c| c.is_reused()))
        ),
        Var::ContentType => write!(
            out,
            "{}",
            record
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        ),
        Var::ErrorMsg => write!(out, "{}", record.error.as_deref().unwrap_or("")),
        Var::ExitCode => write!(out, "{}", record.exit_code),
        Var::FilenameEffective => match &record.output_file {
            Some(path) => write!(out, "{}", path.display()),
            None => Ok(()),
        },
        Var::HttpCode => write!(out, "{:03}", record.status.map_or(0, |s| s.as_u16())),
        Var::HttpVersion => write!(
            out,
            "{}",
            match record.version {
                Some(http::Version::HTTP_09) => "0",
                Some(http::Version::HTTP_10) => "1",
                Some(http::Version::HTTP_11) => "1.1",
                Some(http::Version::HTTP_2) => "2",
                _ => connection.map_or("0", |c| c.protocol().version_str()),
            }
        ),
        Var::LocalIp => match info.and_then(|i| i.local_addr()) {
            Some(addr) => write!(out, "{}", addr.ip()),
            None => Ok(()),
        },
        Var::LocalPort => write!(
            out,
            "{}",
            info.and_then(|i| i.local_addr()).map_or(0, |a| a.port())
        ),
        Var::Method => write!(out, "{}", record.method),
        Var::NumConnects => write!(out, "{}", record.num_connects),
        Var::NumHeaders => write!(out, "{}", record.headers.len()),
        Var::NumRedirects => write!(out, "{}", record.num_redirects),
        Var::Partition => match info {
            Some(info) => write!(out, "{}", info.partition()),
            None => Ok(()),
        },
        Var::RedirectUrl => write!(out, "{}", record.redirect_url.as_deref().unwrap_or("")),
        // Over a Unix socket, curl's remote address is the socket's path and its port the
        // URL's.
        Var::RemoteIp => match info {
            Some(info) => match (info.unix_socket(), info.remote_addr()) {
                (Some(path), _) => out.write_str(&socket_shown(path)),
                (None, Some(addr)) => write!(out, "{}", addr.ip()),
                (None, None) => Ok(()),
            },
            None => match record.tls_peer {
                Some(peer) => write!(out, "{}", peer.ip()),
                None => Ok(()),
            },
        },
        Var::RemotePort => match info {
            Some(info) if info.unix_socket().is_some() => write!(out, "{}", info.origin().port()),
            _ => write!(
                out,
                "{}",
                info.and_then(|i| i.remote_addr())
                    .or(record.tls_peer)
                    .map_or(0, |a| a.port())
            ),
        },
        // curl names the scheme once a connection stands: not after a failed resolve or dial.
        Var::Scheme if info.is_none() && record.tls_peer.is_none() => Ok(()),
        Var::Scheme => write!(
            out,
            "{}",
            record
                .url
                .split_once("://")
                .map_or("", |(scheme, _)| scheme)
                .to_ascii_uppercase()
        ),
        Var::SizeDownload => write!(out, "{}", record.size_download),
        Var::SizeHeader => write!(out, "{}", record.size_header),
        Var::SizeRequest => write!(out, "{}", record.size_request),
        Var::SizeUpload => write!(out, "{}", record.size_upload),
        Var::SpeedDownload => write!(out, "{}", per_second(record.size_download, record)),
        Var::SpeedUpload => write!(out, "{}", per_second(record.size_upload, record)),
        Var::HttpConnect => write!(out, "{:03}", record.http_connect),
        // An FTP variable: empty for HTTP, as in curl.
        Var::FtpEntryPath => Ok(()),
        Var::TimeAppConnect => seconds(out, timings.and_then(|t| t.tls)),
        Var::TimeConnect => seconds(out, timings.map(|t| t.connect)),
        Var::TimeNameLookup => seconds(out, timings.map(|t| t.resolve)),
        Var::TimePreTransfer => seconds(out, timings.map(|t| t.handshake)),
        Var::TimeRedirect => seconds(out, Some(record.redirect_time)),
        Var::TimeStartTransfer => seconds(out, record.head_at),
        Var::TimeTotal => seconds(out, Some(record.total_time())),
        Var::Url => write!(out, "{}", record.input_url),
        Var::UrlEffective => write!(out, "{}", record.url),
        Var::UrlNum => write!(out, "{}", record.url_num),
        Var::Referer => write!(out, "{}", record.referer.as_deref().unwrap_or("")),
        // The chain the server presented on the last connection this transfer opened with a
        // handshake, as curl writes it (nothing when every hop reused a connection or spoke
        // cleartext).
        Var::Certs => {
            let chain = record
                .handshaken
                .as_ref()
                .and_then(|c| c.info().peer_chain());
            out.push_str(&chain.map(super::cert_text::chain_text).unwrap_or_default());
            Ok(())
        }
        // Certificates the server presented there, as curl counts them.
        Var::NumCerts => write!(
            out,
            "{}",
            record
                .handshaken
                .as_ref()
                .and_then(|c| c.info().tls())
                .map_or(0, |tls| tls.peer_certificates)
        ),
        Var::SslVerifyResult => {
            let check = match record.certificate_failure {
                Some((check, Through::Origin)) => Some(check),
                Some((_, Through::Proxy)) => None,
                None => info
                    .and_then(|i| i.tls())
                    .or_else(|| record.handshaken.as_ref().and_then(|c| c.info().tls()))
                    .map(|tls| tls.certificate),
            };
            write!(out, "{}", check.map_or(0, verify_result))
        }
        Var::ProxySslVerifyResult => {
            let check = match record.certificate_failure {
                Some((check, Through::Proxy)) => Some(check),
                _ => None,
            };
            write!(out, "{}", check.map_or(0, verify_result))
        }
    };
}

/// The OpenSSL verification code curl prints for a certificate check (`X509_V_OK` is 0); curl
/// itself reports 1 for a certificate that does not name the host, which it checks apart from
/// OpenSSL.
fn verify_result(check: pool::CertificateCheck) -> u32 {
    use pool::CertificateCheck as C;
    match check {
        C::Valid => 0,
        C::BadSignature => 7,
        C::NotYetValid => 9,
        C::Expired => 10,
        C::SelfSigned => 18,
        C::SelfSignedInChain => 19,
        C::UnknownIssuer => 20,
        C::Revoked => 23,
        // WrongName, Other, and anything a later pool adds.
        _ => 1,
    }
}

/// Seconds with six decimals, as curl prints times; `None` is 0.
fn seconds(out: &mut String, time: Option<Duration>) -> std::fmt::Result {
    write!(out, "{:.6}", time.unwrap_or_default().as_secs_f64())
}

/// A Unix socket as curl shows it for `%{remote_ip}` and in `-v`: its path, or nothing for
/// a name in the abstract namespace (a path starting with a NUL byte).
pub(crate) fn socket_shown(path: &std::path::Path) -> String {
    let shown = path.to_string_lossy();
    if shown.starts_with('\0') {
        String::new()
    } else {
        shown.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderValue, Method, StatusCode};

    fn record() -> TransferRecord {
        let mut r = TransferRecord::start("http://a.test/x", Method::GET);
        r.status = Some(StatusCode::NOT_FOUND);
        r.num_connects = 1;
        r.size_download = 5;
        r.finished_at = Some(Duration::from_millis(1500));
        r.head_at = Some(Duration::from_micros(1_234_567));
        r.headers
            .insert("content-type", HeaderValue::from_static("text/plain"));
        r
    }

    fn render(format: &str) -> String {
        let (w, unknown) = WriteOut::parse(format);
        assert!(
            unknown.is_empty(),
            "unexpected unknown variables {unknown:?}"
        );
        w.render(&record())
    }

    #[test]
    fn variables_and_escapes() {
        assert_eq!(render("%{http_code} %{num_connects}\\n"), "404 1\n");
        // Only \n, \r and \t are escapes: another pair goes out whole, as curl 7.88 writes it.
        assert_eq!(render("%{response_code}\\t%%\\\\"), "404\t%\\\\");
        assert_eq!(render("\\%{http_code}\\x"), "\\%{http_code}\\x");
        assert_eq!(
            render("%{time_total}|%{time_starttransfer}"),
            "1.500000|1.234567"
        );
        // No connection stood: no scheme, as in curl; a failed handshake's server has one.
        assert_eq!(
            render("%{url_effective} %{scheme} %{method}"),
            "http://a.test/x  GET"
        );
        let mut shook = record();
        shook.tls_peer = Some("127.0.0.1:8443".parse().unwrap());
        let (w, _) = WriteOut::parse("%{scheme} %{remote_ip} %{remote_port}");
        assert_eq!(w.render(&shook), "HTTP 127.0.0.1 8443");
        assert_eq!(
            render("%header{content-type}/%{content_type}"),
            "text/plain/text/plain"
        );
    }

    #[test]
    fn onerror_cuts_a_successful_transfers_format_short() {
        let (w, unknown) = WriteOut::parse("%{http_connect} a%{onerror}b %{exitcode}");
        assert!(unknown.is_empty());
        let mut r = record();
        r.exit_code = 0;
        assert_eq!(w.render(&r), "000 a");
        r.exit_code = 7;
        r.http_connect = 407;
        assert_eq!(w.render(&r), "407 ab 7");
    }

    #[test]
    fn without_a_connection() {
        assert_eq!(
            render("%{conn_id} %{conn_reused} %{http_version} [%{remote_ip}] %{time_connect}"),
            "-1 0 0 [] 0.000000"
        );
        let mut r = TransferRecord::start("http://a.test/", Method::GET);
        r.finished_at = Some(Duration::ZERO);
        let (w, _) = WriteOut::parse("%{http_code} %{speed_download}");
        assert_eq!(w.render(&r), "000 0");
    }

    #[test]
    fn unknown_variables_are_reported_and_expand_to_nothing() {
        let (w, unknown) = WriteOut::parse("a%{bogus}b%{http_code}");
        assert_eq!(unknown, ["bogus"]);
        assert_eq!(w.render(&record()), "ab404");
    }

    #[test]
    fn stderr_and_stdout_switch_streams() {
        let (w, _) = WriteOut::parse("a%{stderr}b%{http_code}%{stdout}c");
        let (pieces, unknown) = w.render_streams(&record());
        assert_eq!(
            pieces,
            [
                (Stream::Stdout, "a".to_owned()),
                (Stream::Stderr, "b404".to_owned()),
                (Stream::Stdout, "c".to_owned())
            ]
        );
        assert!(unknown.is_empty());
        let (w, _) = WriteOut::parse("%{nope}x%{nope}");
        assert_eq!(w.render_streams(&record()).1, ["nope", "nope"]);
    }

    #[test]
    fn stray_percent_and_backslash_are_literal() {
        assert_eq!(render("100% \\x %{unterminated"), "100% \\x %{unterminated");
    }
}
