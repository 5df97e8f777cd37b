//! curl parity: the same command lines through curl (7.88 on the CI image) and poolcurl,
//! against loopback servers, comparing exit codes, stdout bytes and the files each run wrote.
//!
//! Every case starts a fresh scripted HTTP/1.1 server for each of the two runs (so stateful
//! routes, like one that fails once, see the same sequence) and a fresh directory (`%DIR%`) for
//! output files; `%BASE%` is the server's `http://127.0.0.1:PORT` (`%CLOSED%` a URL whose
//! port refuses connections, `%CLOSEDPORT%` that port; `%TLS%`,
//! `https://localhost:PORT`, for the TLS servers, whose CA is `%CA%` and whose CRL revoking
//! the server's certificate is `%CRL%`; `%UNIX%` is a Unix socket path piped to the case's
//! server, `%ABSTRACT%` a name in the abstract namespace, `%SOCKS%` the `HOST:PORT` of a
//! SOCKS proxy (SOCKS5 and SOCKS4) started for the run, `%DPROXY%` and `%DPROXYC%` the URL of
//! a Digest proxy started for the run (keeping its connection after a `407`, or saying
//! `Connection: close` and closing it); the `h2c` cases run against an HTTP/2
//! server, `%BASE%` naming it). Two routes check what a request carries as a real server would:
//! `/sigv4` verifies an `--aws-sigv4` signature by AWS's rules, `/dns-query` answers
//! `--doh-url`'s DNS queries, and `/ntlm` and `/ntlm2` authenticate `--ntlm` as a server does. Cases with `Extra` checks
//! also compare something stderr shows (the order of `-v` request headers, a warning).
//!
//! Where curl is not installed the test prints one line saying so and passes: parity with a
//! program that is not there cannot be checked. `.ci/run` installs curl when it can.
//!
//! HTTP/1 header names keep the case the server wrote them in (`/mixed` answers with
//! `Content-Type`, `X-Request-ID`, `x-lower` and a repeated name spelled two ways) in `-i`, `-I`,
//! `-D` and `-v`. A message `--stderr` sends to stdout or a file is compared with its `poolcurl: `
//! prefix read as `curl: `. Known differences not covered here: the times and ports in `-w` differ
//! by nature; curl 7.88 cuts a Unix socket's path in `%{remote_ip}` at 45 characters where poolcurl
//! prints it whole; a response head that breaks HTTP/1 after its status line (a bad header) gives
//! the same exit code, but curl's `%{http_code}` is the status it read and poolcurl's 000 (hyper
//! refuses the head whole), and curl's `-i` prints a folded header's lines or a space before a
//! colon as sent where poolcurl prints the header as read, and trailers' names as sent where
//! poolcurl prints them in lower case (the cases here send lower-case ones); and curl
//! 7.88 opens a new connection for every URL through an abstract Unix socket, where poolcurl reuses
//! one as it does for a socket path.

mod common;
#[path = "curl_parity/doh.rs"]
mod doh;
#[path = "curl_parity/ntlm.rs"]
mod ntlm;
#[path = "curl_parity/sigv4.rs"]
mod sigv4;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use pool_tests::h1::{ConnPlan, RecordedRequest, Reply, ScriptedH1Server};
use pool_tests::h2::{H2Request, Reason, ScriptedH2Server, StreamPlan};
use pool_tests::ocsp::{Signer, Staple, Status};
use pool_tests::proxy::{ConnectScript, ScriptedProxy};
use pool_tests::refused::RefusedAddr;
use pool_tests::socks::ScriptedSocks;
use pool_tests::tls::{TempDir, TestPki};
use pool_tests::unix::UnixBridge;

/// Upper bound for one run; runs take milliseconds (a `--retry` case about a second).
const LIMIT: Duration = Duration::from_secs(30);

/// The body of `/range`.
const DIGITS: &[u8] = b"0123456789";

/// What a case checks beyond exit code, stdout and files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extra {
    None,
    /// The names of the request headers `-v` shows, in order (values differ: User-Agent).
    VerboseHeaderOrder,
    /// stderr warns about an unknown `-w` variable.
    UnknownVariableWarning,
    /// Selected fields of `%{json}` (times and ports differ by nature).
    JsonFields,
    /// The response head lines `-v` shows (`< ...`), byte for byte.
    VerboseResponseHead,
    /// `-v`'s notes of the data sent and received (`} [N bytes data]`, `{ [...]`).
    VerboseDataNotes,
    /// `-v`'s notes of the TLS handshake's outcome (`* SSL connection using ...`, `* ALPN:
    /// server accepted ...`, the server certificate's subject, dates, matched name, issuer and
    /// verdict), byte for byte.
    VerboseTls,
    /// `-v`'s notes of the credentials each request carries (`* Server auth using Basic with
    /// user 'NAME'`), in order.
    VerboseAuth,
    /// stdout with `-w '%{certs}'`'s values that differ between the two runs' certificates
    /// masked ([`without_run_specifics`]: serial numbers, key identifiers, signatures, PEM
    /// bodies, the CA's number); the unit tests of `cert_text` compare those bytes with curl's.
    CertsText,
    /// stdout without the trace's `== Info:` lines (their text is each tool's own: curl's
    /// `Trying`, poolcurl's partition and connection), byte for byte.
    TraceWithoutInfo,
}

/// Which server a case runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// The routes of [`routes`].
    Routes,
    /// An HTTP/1.1 server that answers anything with `400` and closes, as nginx answers the
    /// HTTP/2 preface.
    Refuses,
    /// The routes over TLS (ALPN http/1.1), with a certificate for `localhost` and
    /// `127.0.0.1` from a CA of the run (`%CA%`, not trusted by the system).
    Tls,
    /// As [`Server::Tls`], with a certificate that has expired.
    TlsExpired,
    /// As [`Server::Tls`], with a self-signed certificate.
    TlsSelfSigned,
    /// As [`Server::Tls`], sending the CA's own (self-signed) certificate after its own.
    TlsWithRoot,
    /// As [`Server::Tls`], requiring a client certificate from the run's CA (`%CERT%`,
    /// `%KEY%`).
    TlsClientAuth,
    /// As [`Server::Tls`], with P-384 as its only key exchange group.
    TlsP384Only,
    /// As [`Server::Tls`] (sending the CA's certificate after its own), stapling an OCSP
    /// response with this status, signed by this signer.
    TlsStapled(Status, Signer),
    /// HTTP/2 over cleartext (prior knowledge), answering by [`h2_routes`].
    H2c,
}

/// One command line to run through both programs.
#[derive(Debug, Clone)]
struct Case {
    name: &'static str,
    args: Vec<&'static str>,
    extra: Extra,
    server: Server,
}

fn case(name: &'static str, args: &[&'static str]) -> Case {
    Case {
        name,
        args: args.to_vec(),
        extra: Extra::None,
        server: Server::Routes,
    }
}

fn h2c(name: &'static str, args: &[&'static str]) -> Case {
    Case {
        server: Server::H2c,
        ..case(name, args)
    }
}

fn tls(name: &'static str, args: &[&'static str]) -> Case {
    Case {
        server: Server::Tls,
        ..case(name, args)
    }
}

fn with_server(server: Server, extra: Extra, name: &'static str, args: &[&'static str]) -> Case {
    Case {
        server,
        extra,
        ..case(name, args)
    }
}

fn with(extra: Extra, name: &'static str, args: &[&'static str]) -> Case {
    Case {
        extra,
        ..case(name, args)
    }
}

/// The cases; each bug of issue 19 has at least one.
fn cases() -> Vec<Case> {
    vec![
        case("get", &["%BASE%/hello"]),
        case("include", &["-i", "%BASE%/hello"]),
        case("head", &["-I", "%BASE%/hello"]),
        case("several urls", &["%BASE%/hello", "%BASE%/status/404"]),
        // Issue 19: the exit code is the last transfer's.
        case(
            "last transfer wins: fail then ok",
            &["%CLOSED%/", "%BASE%/hello"],
        ),
        case(
            "last transfer wins: ok then fail",
            &["%BASE%/hello", "%CLOSED%/"],
        ),
        case(
            "last transfer wins: -f 404 then ok",
            &["-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case("fail 404", &["-f", "%BASE%/status/404"]),
        case("fail with body", &["--fail-with-body", "%BASE%/status/404"]),
        case("404 without -f", &["%BASE%/status/404"]),
        case(
            "redirect not followed",
            &["-w", "%{http_code} %{redirect_url}", "%BASE%/redirect"],
        ),
        case(
            "redirect followed",
            &["-L", "-w", " %{num_redirects}", "%BASE%/redirect"],
        ),
        case("redirect include", &["-L", "-i", "%BASE%/redirect"]),
        // Issue 19: EOF mid-body exits 18 (a declared length and chunked).
        case("eof mid body", &["%BASE%/truncated"]),
        case("eof mid chunked body", &["%BASE%/truncated-chunked"]),
        case("empty reply", &["%BASE%/empty"]),
        // Issue 19: prior knowledge to an HTTP/1.1-only server that answers exits 52.
        Case {
            server: Server::Refuses,
            ..case(
                "h2 prior knowledge to an answering http/1.1 server",
                &["--http2-prior-knowledge", "%BASE%/hello"],
            )
        },
        // TLS: what checking the server's certificate found, as OpenSSL's code, and how many
        // certificates a new connection's server presented.
        Case {
            server: Server::Tls,
            ..case(
                "tls verified, then reused",
                &[
                    "--cacert",
                    "%CA%",
                    "-w",
                    " %{num_certs} %{ssl_verify_result} %{proxy_ssl_verify_result}\\n",
                    "%TLS%/hello",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls untrusted",
                &["-w", "%{num_certs} %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls untrusted with -k",
                &[
                    "-k",
                    "-w",
                    " %{num_certs} %{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls wrong name",
                &[
                    "--cacert",
                    "%CA%",
                    "--resolve",
                    "other.test:%PORT%:127.0.0.1",
                    "-w",
                    "%{ssl_verify_result}",
                    "https://other.test:%PORT%/hello",
                ],
            )
        },
        // --hsts: an https:// response's Strict-Transport-Security switches the next http://
        // URL to the host to https:// (its port kept), and the cache is written.
        Case {
            server: Server::Tls,
            ..case(
                "hsts",
                &[
                    "--hsts",
                    "%DIR%/hsts.txt",
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{url_effective}\n",
                    "%TLS%/sts",
                    "http://localhost:%PORT%/hello",
                ],
            )
        },
        // --cert-status: a stapled OCSP response from the CA (good, revoked, unknown) or none;
        // curl checks the same staple through OpenSSL. (A second connection is left out: curl
        // 7.88 resumes its session there and then finds no staple, exit 91; poolcurl turns
        // resumption off under --cert-status and checks every connection.)
        Case {
            server: Server::TlsStapled(Status::Good, Signer::Ca),
            extra: Extra::VerboseTls,
            ..case(
                "cert-status good",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--cert-status",
                    "%TLS%/hello",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Good, Signer::Delegated),
            ..case(
                "cert-status from a delegated responder",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Good, Signer::NotAResponder),
            ..case(
                "cert-status signed by a certificate that is no responder",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Revoked, Signer::Ca),
            ..case(
                "cert-status revoked",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Unknown, Signer::Ca),
            ..case(
                "cert-status unknown",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "cert-status without a staple",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Revoked, Signer::Ca),
            ..case(
                "a staple not asked for",
                &["--cacert", "%CA%", "%TLS%/hello"],
            )
        },
        // Flags curl built with OpenSSL takes and ignores (Schannel's, TLS 1.0's, deprecated
        // ones); --ssl-no-revoke leaves a --crlfile in force there.
        Case {
            server: Server::Tls,
            ..case(
                "tls flags with no effect",
                &[
                    "--cacert",
                    "%CA%",
                    "--false-start",
                    "--ssl-allow-beast",
                    "--ssl-auto-client-cert",
                    "--ssl-revoke-best-effort",
                    "--egd-file",
                    "%DIR%/egd",
                    "--random-file",
                    "%DIR%/random",
                    "--proxy-ssl-allow-beast",
                    "--proxy-ssl-auto-client-cert",
                    "--proxy-tlsv1",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ssl-no-revoke keeps the crl",
                &[
                    "--cacert",
                    "%CA%",
                    "--crlfile",
                    "%CRL%",
                    "--ssl-no-revoke",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls revoked by a crl",
                &[
                    "--cacert",
                    "%CA%",
                    "--crlfile",
                    "%CRL%",
                    "-w",
                    "%{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        // The handshake's offers: --ciphers as an OpenSSL cipher string (the server's key is
        // ECDSA, and it follows the client's order), --tls13-ciphers, --curves (against a
        // server with P-384 alone), --no-alpn, --no-sessionid; lists that pick nothing are
        // exit 59 for https:// only, and suites the key cannot use a handshake failure (35).
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "ciphers by name",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "ciphers by alias",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "DEFAULT:!AES256:+AES128",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "tls13 ciphers",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls13-ciphers",
                    "BOGUS:TLS_CHACHA20_POLY1305_SHA256",
                    "%TLS%/hello",
                ],
            )
        },
        // The server certificate's account: checked, by name and by address, and under -k
        // for a self-signed certificate (the verdict with OpenSSL's code, no name line).
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "server certificate by address",
                &["--cacert", "%CA%", "-v", "https://127.0.0.1:%PORT%/hello"],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            extra: Extra::VerboseTls,
            ..case(
                "server certificate unverified",
                &["-k", "-v", "%TLS%/hello"],
            )
        },
        // A second connection to the same host resumes the first one's session (the route
        // closes each connection), on TLS 1.3 and 1.2, unless --no-sessionid.
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "session resumed",
                &["--cacert", "%CA%", "-v", "%TLS%/close", "%TLS%/close"],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "session resumed on tls 1.2",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "%TLS%/close",
                    "%TLS%/close",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "no session id",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--no-sessionid",
                    "%TLS%/close",
                    "%TLS%/close",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ciphers the key cannot use",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "ECDHE-RSA-AES128-GCM-SHA256",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ciphers picking nothing",
                &["--cacert", "%CA%", "--ciphers", "RC4:BOGUS", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls13 ciphers picking nothing",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls13-ciphers",
                    "BOGUS",
                    "%TLS%/hello",
                ],
            )
        },
        case(
            "cipher lists over cleartext",
            &["--ciphers", "BOGUS", "--curves", "BOGUS", "%BASE%/hello"],
        ),
        Case {
            server: Server::TlsP384Only,
            ..case(
                "curves the server has",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "x25519:P-384",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsP384Only,
            ..case(
                "curves the server lacks",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "X25519:prime256v1",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "curves not known",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "X25519:bogus",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "no alpn",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--no-alpn",
                    "--no-sessionid",
                    "-w",
                    " %{http_version}",
                    "%TLS%/hello",
                ],
            )
        },
        // Untrusted certificates say which kind, verified (exit 60) or not (-k): self-signed
        // (18), a chain ending in the server's own untrusted root (19).
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate",
                &["-w", "%{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate with -k",
                &["-k", "-w", " %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsWithRoot,
            ..case(
                "self-signed root in the chain",
                &["-w", "%{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsWithRoot,
            ..case(
                "self-signed root in the chain with -k",
                &["-k", "-w", " %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        // -w '%{certs}': the chain a new connection's server sent, in OpenSSL's text (nothing
        // for the reused connection), alone, with the CA sent after the leaf, and in %{json}.
        with_server(
            Server::Tls,
            Extra::CertsText,
            "certs of a new connection, then none on reuse",
            &[
                "--cacert",
                "%CA%",
                "-w",
                "%{certs}[%{num_certs}]\\n",
                "%TLS%/hello",
                "%TLS%/hello",
            ],
        ),
        with_server(
            Server::TlsWithRoot,
            Extra::CertsText,
            "certs of a chain of two",
            &["-k", "-w", "%{certs}", "%TLS%/hello"],
        ),
        with_server(
            Server::Tls,
            Extra::JsonFields,
            "certs in json",
            &[
                "--cacert",
                "%CA%",
                "-w",
                "%{json}",
                "-o",
                "/dev/null",
                "%TLS%/hello",
            ],
        ),
        Case {
            server: Server::TlsExpired,
            ..case(
                "tls expired",
                &[
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        // A key encrypted with a passphrase (%KEYENC%, PKCS #8, passphrase s3cret), opened by
        // --pass or by the password after --cert's colon; a wrong one is 58, and a passphrase
        // for a key that is not encrypted is ignored.
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with --pass",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEYENC%",
                    "--pass",
                    "s3cret",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with the password in --cert",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%:s3cret",
                    "--key",
                    "%KEYENC%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with a wrong passphrase",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEYENC%",
                    "--pass",
                    "wrong",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "passphrase for a plain key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEY%",
                    "--pass",
                    "unused",
                    "%TLS%/hello",
                ],
            )
        },
        // --cert-type and --key-type DER (%CERTDER%, %KEYDER%), in any case, mixed with PEM,
        // and types poolcurl does not read.
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "der client certificate and key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERTDER%",
                    "--cert-type",
                    "DER",
                    "--key",
                    "%KEYDER%",
                    "--key-type",
                    "der",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "der client certificate and pem key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERTDER%",
                    "--cert-type",
                    "DER",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "unknown client certificate type",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--cert-type",
                    "XYZ",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        // --pinnedpubkey: the server key's digest (%PIN%), alone or among others, its PEM file
        // (%PUBKEY%) under -k, and what pins nothing (another digest, a certificate file):
        // exit 90, verified or not; an http:// URL is not concerned.
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey matching",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "%PIN%",
                    "-w",
                    " %{http_code}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey among others",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "sha256//bm9wZQ==;%PIN%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey mismatch",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                    "-w",
                    "%{http_code}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey file with -k",
                &["-k", "--pinnedpubkey", "%PUBKEY%", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey of a certificate file pins nothing",
                &["-k", "--pinnedpubkey", "%CA%", "%TLS%/hello"],
            )
        },
        case(
            "pinnedpubkey does not concern http",
            &["--pinnedpubkey", "sha256//x", "%BASE%/hello"],
        ),
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate missing",
                &["--cacert", "%CA%", "%TLS%/hello"],
            )
        },
        // TLS versions: bounds the server meets, bounds no TLS connection can meet (exit 35
        // for https://), and the same bounds on an http:// URL, which they do not concern.
        Case {
            server: Server::Tls,
            ..case(
                "tls max 1.2 and min 1.3",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls-max",
                    "1.2",
                    "%TLS%/hello",
                    "--next",
                    "--cacert",
                    "%CA%",
                    "--tlsv1.3",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls max below 1.2",
                &["--cacert", "%CA%", "--tls-max", "1.1", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls min above max",
                &["--tlsv1.3", "--tls-max", "1.2", "%TLS%/hello"],
            )
        },
        case(
            "tls bounds on http",
            &["--tlsv1.3", "--tls-max", "1.0", "%BASE%/hello"],
        ),
        case("tls max bad value", &["--tls-max", "9", "%BASE%/hello"]),
        // -j: the jar's session cookies stay behind.
        case(
            "cookie jar loaded",
            &["-b", "%DIR%/../jar.txt", "%BASE%/echo"],
        ),
        case(
            "cookie jar without session cookies",
            &["-j", "-b", "%DIR%/../jar.txt", "%BASE%/echo"],
        ),
        // -z: the condition's header (a date in curl's manual spellings, a file's time, or
        // "-" for unmodified), and curl's own 304 when the server answers 200 anyway.
        case(
            "time cond date",
            &["-z", "20 Oct 2015", "-H", "X-After: 1", "%BASE%/echo"],
        ),
        // curl's date grammar: a zone by name or offset, the month first, a two-digit year,
        // a date before 1970, and an ISO date, which curl does not take for one.
        case(
            "time cond with a zone name",
            &["-z", "21 Oct 2015 07:28:00 PST", "%BASE%/echo"],
        ),
        case(
            "time cond with an offset",
            &["-z", "21-Oct-2015 07:28 +0200", "%BASE%/echo"],
        ),
        case(
            "time cond month first, two-digit year",
            &["-z", "Oct 21 15", "%BASE%/echo"],
        ),
        case(
            "time cond before 1970",
            &["-z", "21 Oct 1969", "%BASE%/echo"],
        ),
        case(
            "time cond ISO date is none",
            &["-z", "2015-10-21", "-w", " %{http_code}", "%BASE%/echo"],
        ),
        case(
            "time cond unmodified",
            &["-z", "-Wed, 21 Oct 2015 07:28:00 GMT", "%BASE%/echo"],
        ),
        case(
            "time cond from a file",
            &["-z", "%DIR%/../stamp.txt", "%BASE%/echo"],
        ),
        case(
            "time cond met",
            &[
                "-z",
                "2015-10-20",
                "-o",
                "%DIR%/out",
                "-w",
                "%{http_code} %{size_download}",
                "%BASE%/dated",
            ],
        ),
        case(
            "time cond not met is a simulated 304",
            &[
                "-z",
                "22 Oct 2015",
                "-o",
                "%DIR%/out",
                "-w",
                "%{http_code} %{size_download}",
                "%BASE%/dated",
            ],
        ),
        case(
            "time cond that is neither date nor file",
            &["-z", "not a date", "-w", " %{http_code}", "%BASE%/hello"],
        ),
        // -J: the file named after Content-Disposition, without directories, never over an
        // existing file; -o still wins, and without a filename the URL names the file.
        case(
            "remote header name",
            &["-OJ", "-w", "%{filename_effective}", "%BASE%/attachment"],
        ),
        case(
            "remote header name in an output dir",
            &[
                "-OJ",
                "--output-dir",
                "%DIR%/d",
                "--create-dirs",
                "-w",
                "%{filename_effective}",
                "%BASE%/attachment-plain",
            ],
        ),
        case(
            "remote header name without directories",
            &["-OJ", "%BASE%/attachment-path"],
        ),
        case(
            "remote header name with -i",
            &["-OJ", "-i", "%BASE%/attachment"],
        ),
        case(
            "remote header name without a name",
            &["-OJ", "%BASE%/hello"],
        ),
        case(
            "remote header name never overwrites",
            &["-OJ", "%BASE%/attachment", "-OJ", "%BASE%/attachment"],
        ),
        case(
            "remote header name loses to -o",
            &["-J", "-o", "given.txt", "%BASE%/attachment"],
        ),
        // Credentials stay behind on a redirect to another host name; with --location-trusted
        // they follow (and -L is implied). (The route builds its Location from the Host the
        // request names, so no case here sets one.)
        case(
            "redirect to another host drops credentials",
            &[
                "-L",
                "-u",
                "user:pw",
                "-H",
                "Cookie: c=1",
                "%BASE%/to-localhost",
            ],
        ),
        case(
            "location trusted keeps credentials",
            &[
                "--location-trusted",
                "-u",
                "user:pw",
                "-H",
                "Cookie: c=1",
                "%BASE%/to-localhost",
            ],
        ),
        // Pace flags on a transfer they do not hold back (their effect is timed in
        // cli/tests/curl.rs).
        case(
            "limit rate and speed limit",
            &["--limit-rate", "100K", "-Y", "1", "-y", "5", "%BASE%/hello"],
        ),
        case(
            "limit rate bad value",
            &["--limit-rate", "fast", "%BASE%/hello"],
        ),
        // Issue 19: a malformed --resolve exits 49.
        case("malformed resolve", &["--resolve", "bad", "%BASE%/hello"]),
        case(
            "resolve",
            &[
                "--resolve",
                "parity.test:%PORT%:127.0.0.1",
                "http://parity.test:%PORT%/echo",
            ],
        ),
        // --connect-to: the socket goes elsewhere, Host keeps the URL's (/echo shows it).
        case(
            "connect-to",
            &[
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "connect-to any host and port",
            &[
                "--connect-to",
                "::127.0.0.1:%PORT%",
                "http://parity.test:81/echo",
            ],
        ),
        case(
            "connect-to an ip-literal url, port only",
            &[
                "--connect-to",
                "127.0.0.1:1::%PORT%",
                "http://127.0.0.1:1/echo",
            ],
        ),
        case(
            "connect-to a name given by resolve",
            &[
                "--resolve",
                "backend.test:%PORT%:127.0.0.1",
                "--connect-to",
                "PARITY.test:80:backend.test:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "connect-to skips entries that never match",
            &[
                "--connect-to",
                "junk",
                "--connect-to",
                "other.test:80:127.0.0.1:bad",
                "--connect-to",
                "parity.test:http:127.0.0.1:1",
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/hello",
            ],
        ),
        case(
            "connect-to bad port, next url still runs",
            &[
                "--connect-to",
                "parity.test:80:127.0.0.1:99999",
                "http://parity.test/hello",
                "%BASE%/hello",
            ],
        ),
        // --unix-socket: every URL goes through the path (`%UNIX%`, piped to the server);
        // Host, TLS and reuse keep the URL's name, the proxy is ignored, --next resets it.
        // (`%{remote_ip}` is the path; curl 7.88 cuts it at 45 characters, so it is checked
        // in `curl.rs` instead.)
        case(
            "unix socket",
            &[
                "--unix-socket",
                "%UNIX%",
                "-w",
                "%{remote_port} [%{local_ip}] %{local_port} %{num_connects}\\n",
                "http://daemon.test/echo",
                "http://daemon.test/hello",
            ],
        ),
        case(
            "unix socket ignores the proxy",
            &[
                "-x",
                "http://127.0.0.1:1",
                "--unix-socket",
                "%UNIX%",
                "http://daemon.test/echo",
            ],
        ),
        case(
            "unix socket for one group of --next",
            &[
                "--unix-socket",
                "%UNIX%",
                "http://daemon.test/hello",
                "--next",
                "%BASE%/echo",
            ],
        ),
        case(
            "unix socket missing",
            &[
                "--unix-socket",
                "%DIR%/absent.sock",
                "http://daemon.test/hello",
            ],
        ),
        case(
            "abstract unix socket",
            &[
                "--abstract-unix-socket",
                "%ABSTRACT%",
                "-w",
                "[%{remote_ip}] %{remote_port} %{num_connects}\\n",
                "http://daemon.test/echo",
            ],
        ),
        case(
            "abstract unix socket, the later flag wins",
            &[
                "--unix-socket",
                "%DIR%/absent.sock",
                "--abstract-unix-socket",
                "%ABSTRACT%",
                "http://daemon.test/hello",
            ],
        ),
        Case {
            server: Server::Tls,
            ..case(
                "unix socket with tls inside",
                &[
                    "--cacert",
                    "%CA%",
                    "--unix-socket",
                    "%UNIX%",
                    "-w",
                    " %{ssl_verify_result} %{remote_port}",
                    "https://localhost/hello",
                ],
            )
        },
        case("port over 65535", &["http://127.0.0.1:99999/"]),
        // An https:// proxy (the TLS server, which answers absolute-form requests as a
        // forward proxy) is trusted by its own flags; --cacert and -k are the origin's.
        // --proxy-pinnedpubkey is the proxy's: its key passes, and --pinnedpubkey does not
        // reach the proxy. (curl 7.88 does not check the proxy's pin at all: another pin passes
        // there, where poolcurl exits 90; the pool's proxy tests hold that.)
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-pinnedpubkey",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-insecure",
                    "--proxy-pinnedpubkey",
                    "%PIN%",
                    "--pinnedpubkey",
                    "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-cacert",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-cacert",
                    "%CA%",
                    "-w",
                    " %{proxy_ssl_verify_result}",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-insecure",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-insecure",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy, --cacert is the origin's",
                &[
                    "-x",
                    "%TLS%",
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{proxy_ssl_verify_result}",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy, -k is the origin's",
                &["-x", "%TLS%", "-k", "http://origin.test/hello"],
            )
        },
        // --local-port: badly used ranges are exit 2; a port that is taken (the refusing
        // address's, bound by this test) is 45.
        case(
            "local port over 65535",
            &["--local-port", "70000", "%BASE%/hello"],
        ),
        case(
            "local port reversed range",
            &["--local-port", "5-3", "%BASE%/hello"],
        ),
        case(
            "local port taken",
            &["--local-port", "%CLOSEDPORT%", "%BASE%/hello"],
        ),
        // SOCKS5: -x socks5:// and socks5h://, --socks5 and --socks5-hostname (the last of
        // them and -x wins), no CONNECT (%{http_connect} 0), a target the proxy cannot reach
        // exits 97.
        case(
            "socks5h proxy",
            &[
                "-x",
                "socks5h://%SOCKS%",
                "-w",
                " %{http_connect}",
                "%BASE%/echo",
            ],
        ),
        case(
            "socks5 flag",
            &["--socks5", "%SOCKS%", "-w", " %{http_code}", "%BASE%/hello"],
        ),
        case(
            "socks5-hostname resolves at the proxy",
            &[
                "--socks5-hostname",
                "%SOCKS%",
                "http://localhost:%PORT%/hello",
            ],
        ),
        case(
            "-x after --socks5 wins",
            &[
                "--socks5",
                "127.0.0.1:1",
                "-x",
                "socks5://%SOCKS%",
                "%BASE%/hello",
            ],
        ),
        case(
            "socks5 target refused",
            &["-x", "socks5://%SOCKS%", "%CLOSED%/"],
        ),
        case(
            "socks5 user without a password",
            &["-x", "socks5h://bob@%SOCKS%", "%BASE%/hello"],
        ),
        case(
            "socks5 origin name does not resolve",
            &["-x", "socks5://%SOCKS%", "http://nonexistent.invalid/"],
        ),
        // SOCKS4 and 4a: -x socks4:// (socks:// too) and socks4a://, --socks4 and --socks4a,
        // the user id from -U, an IPv6 target SOCKS4 cannot carry, a refusal.
        case(
            "socks4 proxy",
            &[
                "-x",
                "socks4://%SOCKS%",
                "-w",
                " %{http_connect}",
                "%BASE%/echo",
            ],
        ),
        case(
            "socks:// is socks4",
            &["-x", "socks://%SOCKS%", "%BASE%/hello"],
        ),
        case(
            "socks4a flag resolves at the proxy",
            &["--socks4a", "%SOCKS%", "http://localhost:%PORT%/hello"],
        ),
        case(
            "socks4 flag with a user id, after -x",
            &[
                "-x",
                "socks5://127.0.0.1:1",
                "--socks4",
                "%SOCKS%",
                "-U",
                "bob:pw",
                "%BASE%/hello",
            ],
        ),
        case(
            "socks4 cannot carry IPv6",
            &["--socks4", "%SOCKS%", "http://[::1]:1/"],
        ),
        case(
            "socks4 target refused",
            &["-x", "socks4://%SOCKS%", "%CLOSED%/"],
        ),
        // .netrc: the host's first entry, the URL's user's own, the default; -u and
        // --netrc-optional's URL password win; curl's dialect (quotes, comments, keywords in
        // any case); a quote left open exits 26.
        case(
            "netrc first entry",
            &["--netrc-file", "%DIR%/../netrc.txt", "%BASE%/echo"],
        ),
        case(
            "netrc entry of the url's user",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc password over the url's",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob:pw@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc optional keeps the url's password",
            &[
                "--netrc-optional",
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob:pw@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc under -u",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "-u",
                "x:y",
                "%BASE%/echo",
            ],
        ),
        case(
            "netrc default entry",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "netrc file missing",
            &["--netrc-file", "%DIR%/../no-netrc.txt", "%BASE%/echo"],
        ),
        case(
            "netrc dialect",
            &["--netrc-file", "%DIR%/../netrc-dialect.txt", "%BASE%/echo"],
        ),
        case(
            "netrc open quote",
            &["--netrc-file", "%DIR%/../netrc-bad.txt", "%BASE%/echo"],
        ),
        case(
            "netrc with digest",
            &[
                "--digest",
                "--netrc-file",
                "%DIR%/../netrc-digest.txt",
                "%BASE%/digest",
            ],
        ),
        // --digest: a challenge answered once, the data sent with the answer only (the
        // server recomputes each answer from the password).
        case(
            "digest",
            &["--digest", "-u", "alice:s3cret", "%BASE%/digest?x=1"],
        ),
        case(
            "digest with -i",
            &["-i", "--digest", "-u", "alice:s3cret", "%BASE%/digest"],
        ),
        case(
            "digest with data",
            &[
                "--digest",
                "-u",
                "alice:s3cret",
                "-d",
                "hello",
                "-w",
                "%{http_code} %{size_upload} %{num_connects}\\n",
                "%BASE%/digest",
            ],
        ),
        case(
            "digest, wrong password",
            &[
                "--digest",
                "-u",
                "alice:wrong",
                "-w",
                "%{http_code} %{num_connects}\\n",
                "%BASE%/digest",
            ],
        ),
        case(
            "digest, wrong password with -f",
            &["-f", "--digest", "-u", "alice:wrong", "%BASE%/digest"],
        ),
        case("digest without a user", &["--digest", "%BASE%/digest"]),
        // --aws-sigv4: a date and a Host given with -H make the signature the same in both
        // runs (each runs against a server of its own port; curl sends the date header twice),
        // and /echo shows it; signatures made with the clock and the URL's host are checked by
        // /sigv4, as a server checks them.
        case(
            "sigv4, a given date and curl's header rules",
            &[
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20150830T123600Z",
                "-H",
                "Host: sigv4.test",
                "-H",
                "X-B:  a   b ",
                "-H",
                "X-B-C: 1",
                "-H",
                "Accept:",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, data and a query as given",
            &[
                "--aws-sigv4",
                "aws:amz:eu-west-1:s3",
                "-u",
                "AK:SE:CRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "-d",
                "a=1&b=2",
                "%BASE%/echo/p?z=1&a=2",
            ],
        ),
        case(
            "sigv4, --json and a given payload hash",
            &[
                "--aws-sigv4",
                "aws:amz:eu-west-1:s3",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "-H",
                "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD",
                "--json",
                "{\"a\":1}",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, a Date header and -F",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "-H",
                "Date: Thu, 01 Jan 2015 00:00:00 GMT",
                "-H",
                "Host: sigv4.test",
                "-F",
                "f=v",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4 with -G, over --digest, the URL's key",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "--digest",
                "-G",
                "-d",
                "q=1",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "http://AK:SECRET@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "sigv4, service and region from the host name",
            &[
                "--aws-sigv4",
                "aws:amz",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "--resolve",
                "svc.reg.localhost:%PORT%:127.0.0.1",
                "http://svc.reg.localhost:%PORT%/echo",
            ],
        ),
        case(
            "sigv4 signed now, checked by the server",
            &[
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Custom:  spaced   out ",
                "%BASE%/sigv4?b=2&a=1",
            ],
        ),
        case(
            "sigv4 again after a redirect to the same host",
            &[
                "-L",
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "%BASE%/sigv4-redirect",
            ],
        ),
        case(
            "sigv4 not sent to another host",
            &[
                "-L",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "%BASE%/to-localhost",
            ],
        ),
        case(
            "sigv4 with a wrong secret is refused",
            &[
                "-f",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:WRONG",
                "%BASE%/sigv4",
            ],
        ),
        case(
            "sigv4 without credentials signs nothing",
            &["--aws-sigv4", "aws:amz:r:s", "%BASE%/echo"],
        ),
        case(
            "sigv4 gives way to -H Authorization",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "-H",
                "Authorization: Token t",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, no service in the argument or the host name",
            &[
                "--aws-sigv4",
                "aws",
                "-u",
                "AK:SECRET",
                "http://localhost:%PORT%/echo",
            ],
        ),
        case(
            "sigv4, no region in the host name",
            &[
                "--aws-sigv4",
                "aws",
                "-u",
                "AK:SECRET",
                "--resolve",
                "svc.localhost:%PORT%:127.0.0.1",
                "http://svc.localhost:%PORT%/echo",
            ],
        ),
        // --doh-url: names resolved by the case's server (/dns-query) over TLS, which the
        // transfers' --cacert lets both tools trust; -k does not reach the DoH queries.
        tls(
            "doh, a name only the DoH server knows",
            &[
                "--cacert",
                "%CA%",
                "-k",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, the answer is where it connects",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "http://far.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an IPv6 answer only",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "http://v6.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, no such name",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "https://nx.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an untrusted server and -k",
            &[
                "-k",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, --doh-insecure",
            &[
                "-k",
                "--doh-insecure",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, a stapled status required and none sent",
            &[
                "--cacert",
                "%CA%",
                "-k",
                "--doh-cert-status",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, --resolve wins",
            &[
                "-k",
                "--resolve",
                "nx.test:%PORT%:127.0.0.1",
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "https://nx.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, localhost is never asked",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "%TLS%/hello",
            ],
        ),
        tls(
            "doh, an unreachable server",
            &[
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an http URL",
            &[
                "--doh-url",
                "http://localhost:%PORT%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        // --ntlm: the negotiate message first (no data), the challenge answered on the same
        // connection. /ntlm's answer is NTLMv1 (no randomness: the server quotes it whole),
        // /ntlm2's NTLMv2, checked by the server.
        case(
            "ntlm v1, quoted whole",
            &["--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm"],
        ),
        case(
            "ntlm v2 with a domain and data",
            &[
                "--ntlm",
                "-u",
                "CORP\\alice:s3cret",
                "-d",
                "a=1",
                "%BASE%/ntlm2",
            ],
        ),
        case(
            "ntlm v2, -i shows both heads",
            &["-i", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        case(
            "ntlm, the URL's credentials",
            &["--ntlm", "http://alice:s3cret@127.0.0.1:%PORT%/ntlm2"],
        ),
        case(
            "ntlm, a wrong password",
            &["--ntlm", "-u", "alice:wrong", "%BASE%/ntlm2"],
        ),
        case(
            "ntlm, a wrong password with -f",
            &["-f", "--ntlm", "-u", "alice:wrong", "%BASE%/ntlm2"],
        ),
        case("ntlm without a user", &["--ntlm", "%BASE%/ntlm2"]),
        case(
            "ntlm, two URLs",
            &[
                "--ntlm",
                "-u",
                "alice:s3cret",
                "%BASE%/ntlm2",
                "%BASE%/ntlm",
            ],
        ),
        case(
            "ntlm after --digest: the last wins",
            &["--digest", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the NTLM user for each message",
            &["-v", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        // -v names the scheme and the user of each request's credentials.
        with(
            Extra::VerboseAuth,
            "-v names Basic credentials, for every request",
            &["-v", "-u", "a:b", "%BASE%/echo", "%BASE%/hello"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the URL's user",
            &["-v", "http://us%40er:pw@127.0.0.1:%PORT%/echo"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names a bearer token's user",
            &["-v", "--oauth2-bearer", "tok", "%BASE%/echo"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the signing key",
            &[
                "-v",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "%BASE%/sigv4",
            ],
        ),
        case(
            "sigv4, an empty first provider",
            &["--aws-sigv4", ":amz", "-u", "AK:SECRET", "%BASE%/echo"],
        ),
        // --proxy-digest and --proxy-anyauth: a forward proxy's 407 (this server, with -x)
        // answered once, the data sent with the answer only; a tunnel's answered by the pool
        // before the request, through a Digest proxy that keeps its connection after the 407
        // (%DPROXY%) and one that says `Connection: close` and closes it (%DPROXYC%). Unlike the
        // server's flags, the proxy's do not override by order: curl ranks them.
        case(
            "proxy digest, forward proxy, 2 URLs",
            &[
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "-w",
                " %{http_code} %{num_connects}\\n",
                "http://origin.test/proxy-digest?x=1",
                "http://origin.test/proxy-digest",
            ],
        ),
        case(
            "proxy digest with -i and data",
            &[
                "-i",
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "-d",
                "hello",
                "http://origin.test/proxy-digest",
            ],
        ),
        case(
            "proxy digest, wrong password",
            &[
                "--proxy-digest",
                "-U",
                "alice:wrong",
                "-x",
                "%BASE%",
                "-w",
                " %{http_code}",
                "http://origin.test/proxy-digest",
            ],
        ),
        case(
            "proxy anyauth to a basic-only proxy",
            &[
                "--proxy-anyauth",
                "-U",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "-w",
                " %{http_code}",
                "http://origin.test/proxy-basic",
            ],
        ),
        case(
            "proxy digest to a basic-only proxy",
            &[
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "-w",
                " %{http_code}",
                "http://origin.test/proxy-basic",
            ],
        ),
        case(
            "proxy-digest wins over a later proxy-basic",
            &[
                "--proxy-digest",
                "--proxy-basic",
                "-U",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "http://origin.test/proxy-basic",
            ],
        ),
        case(
            "proxy digest and server digest",
            &[
                "--proxy-anyauth",
                "-U",
                "alice:s3cret",
                "--digest",
                "-u",
                "alice:s3cret",
                "-x",
                "%BASE%",
                "-d",
                "abc",
                "-w",
                " %{http_code}",
                "http://origin.test/proxy-and-server",
            ],
        ),
        case(
            "proxy digest through a tunnel",
            &[
                "-p",
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%DPROXY%",
                "-w",
                " %{http_code} %{http_connect} %{num_connects}\\n",
                "%BASE%/hello",
                "%BASE%/hello",
            ],
        ),
        case(
            "proxy anyauth through a tunnel the proxy closes after its 407",
            &[
                "-p",
                "--proxy-anyauth",
                "-U",
                "alice:s3cret",
                "-x",
                "%DPROXYC%",
                "-w",
                " %{http_code} %{http_connect} %{num_connects}\\n",
                "%BASE%/hello",
                "%BASE%/hello",
            ],
        ),
        // The proxy's answers to a tunnel's CONNECT come before the response's head in -i,
        // -I and -D (both the 407 and the 200 after a challenge), count in %{size_header},
        // and stay out with --suppress-connect-headers; a reused tunnel shows none.
        case(
            "-i through a Digest tunnel",
            &[
                "-i",
                "-p",
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%DPROXY%",
                "-w",
                "%{size_header}\\n",
                "%BASE%/hello",
                "%BASE%/hello",
            ],
        ),
        case(
            "-I through a tunnel the proxy closes after its 407",
            &[
                "-I",
                "-p",
                "--proxy-anyauth",
                "-U",
                "alice:s3cret",
                "-x",
                "%DPROXYC%",
                "%BASE%/hello",
            ],
        ),
        case(
            "--suppress-connect-headers",
            &[
                "-i",
                "--suppress-connect-headers",
                "-p",
                "--proxy-digest",
                "-U",
                "alice:s3cret",
                "-x",
                "%DPROXY%",
                "-D",
                "%DIR%/heads.txt",
                "-w",
                "%{size_header}",
                "%BASE%/hello",
            ],
        ),
        case(
            "-D through a refused tunnel",
            &[
                "-s",
                "-p",
                "--proxy-digest",
                "-U",
                "alice:wrong",
                "-x",
                "%DPROXY%",
                "-D",
                "-",
                "%BASE%/hello",
            ],
        ),
        case(
            "proxy digest through a tunnel, wrong password",
            &[
                "-p",
                "--proxy-digest",
                "-U",
                "alice:wrong",
                "-x",
                "%DPROXY%",
                "-w",
                "%{http_code} %{http_connect}",
                "%BASE%/hello",
            ],
        ),
        // --anyauth: Digest where offered, Basic where only Basic is; --basic, --digest and
        // --anyauth: the last one given wins.
        case(
            "anyauth to digest",
            &[
                "--anyauth",
                "-u",
                "alice:s3cret",
                "-d",
                "x",
                "%BASE%/digest",
            ],
        ),
        case(
            "anyauth to basic",
            &[
                "--anyauth",
                "-u",
                "alice:s3cret",
                "-w",
                " %{num_connects}",
                "%BASE%/basic",
            ],
        ),
        case(
            "digest to a basic-only server",
            &[
                "--digest",
                "-u",
                "alice:s3cret",
                "-w",
                " %{http_code}",
                "%BASE%/basic",
            ],
        ),
        case(
            "basic after digest wins",
            &["--digest", "--basic", "-u", "alice:s3cret", "%BASE%/basic"],
        ),
        case(
            "digest after basic wins",
            &["--basic", "--digest", "-u", "alice:s3cret", "%BASE%/digest"],
        ),
        case(
            "digest with the url's user",
            &["--digest", "http://alice:s3cret@127.0.0.1:%PORT%/digest"],
        ),
        case(
            "digest with -X PUT",
            &[
                "--digest",
                "-u",
                "alice:s3cret",
                "-X",
                "PUT",
                "-d",
                "zz",
                "%BASE%/digest",
            ],
        ),
        // --stderr: the messages go to the file (or stdout with "-"); %{stderr} and the
        // unknown-variable warning stay on the process's stderr, as in curl 7.88.
        case(
            "stderr to a file",
            &["-sS", "--stderr", "%DIR%/err.txt", "http://exa mple/"],
        ),
        case(
            "stderr to stdout",
            &["-sS", "--stderr", "-", "http://exa mple/"],
        ),
        case("trace-time without -v", &["--trace-time", "%BASE%/hello"]),
        case(
            "stderr keeps write-out's stderr",
            &[
                "-s",
                "--stderr",
                "-",
                "-w",
                "%{stderr}not here%{bogus}",
                "%BASE%/hello",
            ],
        ),
        case(
            "stderr, the last one wins",
            &[
                "--stderr",
                "%DIR%/first.txt",
                "-sS",
                "http://exa mple/",
                "--stderr",
                "%DIR%/second.txt",
            ],
        ),
        case("port with a sign", &["http://127.0.0.1:+%PORT%/hello"]),
        case("unsupported scheme", &["nosuch://127.0.0.1/"]),
        // curl takes one to three slashes after the scheme's colon; four are malformed.
        case(
            "one slash after the scheme",
            &["http:/127.0.0.1:%PORT%/hello"],
        ),
        case(
            "three slashes after the scheme",
            &["http:///127.0.0.1:%PORT%/hello"],
        ),
        case(
            "four slashes after the scheme",
            &["http:////127.0.0.1:%PORT%/hello"],
        ),
        case("unknown scheme with one slash", &["foo:/127.0.0.1/"]),
        // An empty path goes out as `/`, also before a fragment or a query.
        case("fragment right after the authority", &["%BASE%#frag"]),
        case("query right after the authority", &["%BASE%?q=1#frag"]),
        // Dot segments resolve before the request goes out, unless --path-as-is.
        case("dot segments", &["%BASE%/a/./b/../../echo/./x?q=/../y"]),
        case("path as is", &["--path-as-is", "%BASE%/echo/a/./b/../c"]),
        case("unknown flag", &["--bogus-flag", "%BASE%/hello"]),
        // Issue 19: -v shows Host first, as sent.
        with(
            Extra::VerboseHeaderOrder,
            "verbose header order",
            &["-v", "%BASE%/hello"],
        ),
        // Issue 19: -w json, header_json, stderr; unknown variables warn.
        case(
            "write-out header_json",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{header_json}",
                "%BASE%/headers",
            ],
        ),
        with(
            Extra::JsonFields,
            "write-out json",
            &["-s", "-o", "/dev/null", "-w", "%{json}", "%BASE%/hello"],
        ),
        case(
            "write-out stderr",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "a%{stderr}b%{stdout}c",
                "%BASE%/hello",
            ],
        ),
        with(
            Extra::UnknownVariableWarning,
            "write-out unknown",
            &["-s", "-w", "[%{bogus}]", "%BASE%/hello"],
        ),
        case(
            "write-out basics",
            &[
                "-w",
                "\\n%{http_code} %{size_download} %{content_type} %{method} %{num_headers}",
                "%BASE%/hello",
            ],
        ),
        case("user agent", &["-A", "parity/1", "%BASE%/echo"]),
        case("referer", &["-e", "http://from.test/", "%BASE%/echo"]),
        case("basic auth", &["-u", "user:secret", "%BASE%/echo"]),
        case(
            "url credentials",
            &["http://us%40r:p%3Ass@127.0.0.1:%PORT%/echo"],
        ),
        case("data", &["-d", "a=1", "-d", "b=2", "%BASE%/echo"]),
        case(
            "data urlencode",
            &[
                "--data-urlencode",
                "q=hello world&more",
                "--data-urlencode",
                "=x/y",
                "%BASE%/echo",
            ],
        ),
        case(
            "get with data",
            &[
                "-G",
                "-d",
                "a=1",
                "--data-urlencode",
                "b=c d",
                "%BASE%/echo",
            ],
        ),
        case("json", &["--json", "{\"a\":1}", "%BASE%/echo"]),
        case("put method", &["-X", "PUT", "-d", "x", "%BASE%/echo"]),
        case(
            "form",
            &[
                "-F",
                "name=value",
                "-F",
                "file=@%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "upload",
            &["-H", "Expect:", "-T", "%DIR%/../upload.txt", "%BASE%/echo/"],
        ),
        // -F's grammar as curl reads it: names and file names escaped (percent by default,
        // backslashes with --form-escape), quoted words, type parameters, unknown modifiers
        // skipped, headers inline and from a file, encoders, several files in one field,
        // standard input, nested parts, and a type that is no type.
        case(
            "form escapes names",
            &[
                "-F",
                "a\"b=1",
                "-F",
                "up=@%DIR%/../upload.txt;filename=x\"y.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form-escape",
            &[
                "--form-escape",
                "-F",
                "a\"b\\c=1",
                "-F",
                "up=@%DIR%/../upload.txt;filename=x\"y.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form quoted words",
            &[
                "-F",
                "up=@\"%DIR%/../upload.txt\";filename=\"a,b;c \\\"d\\\".txt\"",
                "-F",
                "t=\"quoted;value\"",
                "%BASE%/echo",
            ],
        ),
        case(
            "form type parameters and unknown modifiers",
            &[
                "-F",
                "up=@%DIR%/../upload.txt;type=text/plain;charset=utf-8",
                "-F",
                "a=x;y",
                "-F",
                "b= spaced ;type=text/x-b",
                "%BASE%/echo",
            ],
        ),
        case(
            "form headers",
            &[
                "-F",
                "a=1;headers=\"X-One: 1\"",
                "-F",
                "b=2;headers=@%DIR%/../form-headers.txt",
                "-F",
                "c=3;headers=Content-Type: text/x-c",
                "%BASE%/echo",
            ],
        ),
        case(
            "form encoders",
            &[
                "-F",
                "a=hello there;encoder=base64",
                "-F",
                "b=bin;encoder=binary",
                "-F",
                "c=eight;encoder=8bit",
                "-F",
                "d=seven;encoder=7bit",
                "%BASE%/echo",
            ],
        ),
        case(
            "form quoted-printable",
            &[
                "-F",
                "q=\"a=b caf\u{e9} and a long line that goes on and on past the seventy-six characters a line may hold\r\nnext\tline \r\nlone\nlf\";encoder=quoted-printable",
                "%BASE%/echo-body",
            ],
        ),
        case(
            "form several files",
            &[
                "-F",
                "up=@%DIR%/../upload.txt,%DIR%/../data.json;type=text/x-j",
                "%BASE%/echo",
            ],
        ),
        case("form stdin", &["-F", "up=@-", "-F", "v=<-", "%BASE%/echo"]),
        case(
            "form text from a file",
            &[
                "-F",
                "v=<%DIR%/../upload.txt",
                "-F",
                "w=text;filename=named.html",
                "%BASE%/echo",
            ],
        ),
        case(
            "form 8-bit data in 7bit",
            &["-F", "d=caf\u{e9};encoder=7bit", "%BASE%/echo"],
        ),
        case(
            "form file types",
            &[
                "-F",
                "j=@%DIR%/../data.json",
                "-F",
                "h=@%DIR%/../form-headers.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "form nested parts",
            &[
                "-F",
                "n=(;type=multipart/alternative",
                "-F",
                "=plain",
                "-F",
                "= <b>html</b>;type=text/html",
                "-F",
                "=)",
                "-F",
                "after=1",
                "%BASE%/echo",
            ],
        ),
        case("form bad type", &["-F", "a=1;type=bogus", "%BASE%/echo"]),
        case(
            "form bad encoder",
            &["-F", "a=1;encoder=rot13", "%BASE%/echo"],
        ),
        case("cookie string", &["-b", "a=1; b=2", "%BASE%/echo"]),
        case(
            "cookie engine",
            &["-c", "%DIR%/jar.txt", "-L", "%BASE%/setcookie"],
        ),
        // --xattr: the effective URL without credentials and the Content-Type, in the output
        // file's extended attributes (compared with the files).
        case(
            "xattr",
            &[
                "--xattr",
                "-L",
                "-o",
                "%DIR%/moved.txt",
                "http://user:secret@127.0.0.1:%PORT%/redirect",
                "--xattr",
                "-o",
                "%DIR%/untyped.txt",
                "%BASE%/",
            ],
        ),
        // A cookie that replaces another keeps its creation: the jar lists the newest first
        // and requests send, among equal lengths, the newest first.
        case(
            "cookie order",
            &[
                "-c",
                "%DIR%/jar.txt",
                "%BASE%/cookies",
                "%BASE%/cookies2",
                "%BASE%/echo",
            ],
        ),
        // --next: each group its own options; global options everywhere.
        case(
            "next: a GET then a POST on the same connection",
            &[
                "-w",
                "%{num_connects}",
                "%BASE%/echo",
                "--next",
                "-w",
                "%{num_connects}",
                "-d",
                "x=1",
                "%BASE%/echo",
            ],
        ),
        case(
            "next: options stay in their group",
            &[
                "-o",
                "%DIR%/a.txt",
                "-w",
                "[%{urlnum}]",
                "%BASE%/hello",
                "-:",
                "-w",
                "(%{urlnum} %{http_code})",
                "%BASE%/hello",
            ],
        ),
        case(
            "next: -f belongs to its group",
            &["-f", "%BASE%/status/404", "--next", "%BASE%/status/404"],
        ),
        case(
            "next: the last group's transfer decides",
            &["%BASE%/status/404", "--next", "-f", "%BASE%/status/404"],
        ),
        case(
            "next: fail early is global",
            &[
                "-f",
                "%BASE%/status/404",
                "--next",
                "--fail-early",
                "%BASE%/hello",
            ],
        ),
        case(
            "next before a URL starts nothing",
            &["-w", "%{http_code}", "--next", "%BASE%/hello"],
        ),
        case(
            "next: a last group without a URL",
            &["%BASE%/hello", "--next", "-o", "%DIR%/x.txt"],
        ),
        case(
            "next: groups share the cookie engine",
            &[
                "-c",
                "%DIR%/jar.txt",
                "%BASE%/setcookie",
                "--next",
                "-b",
                "%DIR%/no-such-jar.txt",
                "%BASE%/echo",
                "--next",
                "%BASE%/echo",
            ],
        ),
        case(
            "next from a config file",
            &["%BASE%/echo", "-K", "%DIR%/../next.cfg", "%BASE%/echo"],
        ),
        case("range", &["-r", "2-5", "%BASE%/range"]),
        case("compressed gzip", &["--compressed", "%BASE%/gzip"]),
        case("compressed deflate", &["--compressed", "%BASE%/deflate"]),
        case("compressed br", &["--compressed", "%BASE%/br"]),
        case("compressed zstd", &["--compressed", "%BASE%/zstd"]),
        case("not compressed without the flag", &["%BASE%/gzip"]),
        case("output file", &["-o", "%DIR%/out.txt", "%BASE%/hello"]),
        case("remote name", &["-O", "%BASE%/files/remote.txt"]),
        case(
            "create dirs",
            &["--create-dirs", "-o", "%DIR%/a/b/c.txt", "%BASE%/hello"],
        ),
        case("dump header", &["-D", "%DIR%/head.txt", "%BASE%/hello"]),
        // Issue 19: HTTP/1 header names as the server wrote them.
        case("mixed case include", &["-i", "%BASE%/mixed"]),
        case("mixed case head", &["-I", "%BASE%/mixed"]),
        case(
            "mixed case dump header",
            &[
                "-D",
                "%DIR%/head.txt",
                "-o",
                "%DIR%/body.txt",
                "%BASE%/mixed",
            ],
        ),
        case(
            "mixed case after a redirect",
            &["-L", "-i", "%BASE%/mixed-redirect"],
        ),
        with(
            Extra::VerboseResponseHead,
            "mixed case verbose",
            &["-v", "-o", "/dev/null", "%BASE%/mixed"],
        ),
        // --trace and --trace-ascii: the same blocks, bytes and layout as curl's.
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii to stdout",
            &["--trace-ascii", "-", "-A", "parity", "%BASE%/hello"],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace in hex with data",
            // The hex shows the port's digits: a fixed Host keeps them out.
            &[
                "--trace",
                "-",
                "-A",
                "parity",
                "-H",
                "Host: parity.test",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii of an upload",
            // curl 7.88 sends `Expect: 100-continue` with any `-T` upload; poolcurl does not.
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-H",
                "Expect:",
                "-T",
                "%DIR%/../headers.txt",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii through a redirect",
            // Without -i: with the trace on stdout too, curl writes each header line after its
            // block, poolcurl the head after the last block.
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-L",
                "%BASE%/redirect",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii after -v wins",
            &["-v", "--trace-ascii", "-", "-A", "parity", "%BASE%/mixed"],
        ),
        case(
            "-v after trace-ascii wins",
            &["--trace-ascii", "-", "-v", "%BASE%/hello"],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii is global across --next",
            &[
                "-A",
                "parity",
                "%BASE%/hello",
                "--next",
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "%BASE%/mixed",
            ],
        ),
        with(
            Extra::VerboseDataNotes,
            "verbose data notes",
            &["-v", "-d", "a=b", "-o", "/dev/null", "%BASE%/echo"],
        ),
        case("glob braces", &["%BASE%/files/{a,b}"]),
        case(
            "glob range to files",
            &["-o", "%DIR%/n_#1.txt", "%BASE%/files/[1-3]"],
        ),
        case("globoff", &["-g", "-w", "%{http_code}", "%BASE%/files/x"]),
        case("url flag", &["--url", "%BASE%/hello", "%BASE%/files/z"]),
        case(
            "retry transient",
            &["--retry", "1", "--retry-delay", "0", "%BASE%/flaky"],
        ),
        case(
            "no retry without flag",
            &["-w", "%{http_code}", "%BASE%/flaky"],
        ),
        case(
            "parallel",
            &[
                "-Z",
                "-o",
                "%DIR%/p1",
                "-o",
                "%DIR%/p2",
                "%BASE%/files/p1",
                "%BASE%/files/p2",
            ],
        ),
        // -Z given in a later group still applies to the whole command line, and each group
        // keeps its own options under it (output files keep the comparison independent of
        // the order the transfers finish in; that they overlap is not visible here).
        case(
            "parallel with next",
            &[
                "-o",
                "%DIR%/g1",
                "%BASE%/files/g1",
                "--next",
                "-Z",
                "-d",
                "k=v",
                "-o",
                "%DIR%/g2",
                "%BASE%/echo",
            ],
        ),
        case(
            "http 1.0",
            &["--http1.0", "-w", "%{http_version}", "%BASE%/echo"],
        ),
        case("max redirs", &["-L", "--max-redirs", "1", "%BASE%/loop"]),
        // Flags curl users reach for that are not in issue 19's list; -A pins the User-Agent
        // so that %{size_request} counts the same bytes for both programs.
        case(
            "fail shows the head with -i",
            &["-f", "-i", "%BASE%/status/404"],
        ),
        case(
            "fail shows the head with -I",
            &["-f", "-I", "%BASE%/status/500"],
        ),
        case(
            "size_request of a get, a post and a redirect",
            &[
                "-A",
                "x",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request} ",
                "%BASE%/hello",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        case(
            "size_request across a redirect",
            &[
                "-A",
                "x",
                "-L",
                "-s",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request}",
                "%BASE%/redirect",
            ],
        ),
        case(
            "size_request of a form is the head",
            &[
                "-A",
                "x",
                "-F",
                "a=b",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request}",
                "%BASE%/echo",
            ],
        ),
        case(
            "headers from a file",
            &["-H", "@%DIR%/../headers.txt", "%BASE%/echo"],
        ),
        case(
            "a header without a colon is not sent",
            &["-H", "no colon here", "-H", "X-Kept: 1", "%BASE%/echo"],
        ),
        case(
            "headers from a missing file",
            &["-H", "@%DIR%/../no-such-headers.txt", "%BASE%/echo"],
        ),
        case(
            "fail early stops at the first failure",
            &["--fail-early", "-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case(
            "without fail early the last transfer decides",
            &["-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case(
            "output dir",
            &[
                "--output-dir",
                "%DIR%/sub",
                "--create-dirs",
                "-o",
                "a.txt",
                "%BASE%/hello",
                "-O",
                "%BASE%/files/x",
            ],
        ),
        case(
            "output dir that does not exist",
            &["--output-dir", "%DIR%/none", "-o", "a.txt", "%BASE%/hello"],
        ),
        case(
            "no clobber numbers the names",
            &[
                "--no-clobber",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/hello",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/files/2",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/files/3",
            ],
        ),
        case(
            "remove on error",
            &["--remove-on-error", "-o", "%DIR%/t.txt", "%BASE%/truncated"],
        ),
        case(
            "oauth2 bearer wins over user",
            &["--oauth2-bearer", "tok", "-u", "a:b", "%BASE%/echo"],
        ),
        case(
            "disallow username in url",
            &["--disallow-username-in-url", "http://u:p@127.0.0.1:9/"],
        ),
        case("proto denies http", &["--proto", "=https", "%BASE%/hello"]),
        case(
            "proto list with modifiers",
            &["--proto", "-all,+https,http", "%BASE%/hello"],
        ),
        case(
            "proto redir refuses the redirect's scheme",
            &["-L", "--proto-redir", "=https", "%BASE%/redirect"],
        ),
        case(
            "url query encodes and appends",
            &[
                "--url-query",
                "a=b c",
                "--url-query",
                "+d=e",
                "%BASE%/echo?q=1",
            ],
        ),
        case(
            "data ascii is data",
            &["--data-ascii", "k=v", "%BASE%/echo"],
        ),
        case(
            "post302 keeps the post",
            &[
                "-L",
                "--post302",
                "-d",
                "k=v",
                "-A",
                "x",
                "-w",
                "%{method}",
                "%BASE%/redirect",
            ],
        ),
        case(
            "request target instead of the URL's path",
            &["--request-target", "/echo/t?q=1", "%BASE%/hello"],
        ),
        case(
            "request target OPTIONS *",
            &["-X", "OPTIONS", "--request-target", "*", "%BASE%/hello"],
        ),
        case(
            "request target counted in size_request",
            &[
                "--request-target",
                "/echo/longer/target",
                "-o",
                "%DIR%/out.txt",
                "-w",
                "%{size_request} %{url_effective}",
                "-A",
                "agent",
                "%BASE%/hello",
            ],
        ),
        case(
            "request target through a forward proxy",
            &[
                "-x",
                "%BASE%",
                "--request-target",
                "/echo/via",
                "http://origin.test/hello",
            ],
        ),
        case(
            "proxy header on a forward proxy's request",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "X-Proxy-Header: 1",
                "http://origin.test/echo",
            ],
        ),
        case(
            "onerror and the variables of other protocols",
            &[
                "-w",
                "%{http_connect} [%{ftp_entry_path}] %{onerror}failed %{exitcode}",
                "%BASE%/hello",
                "%CLOSED%/",
            ],
        ),
        case(
            "etag save",
            &["--etag-save", "%DIR%/tag.txt", "%BASE%/etag"],
        ),
        case(
            "etag save to stdout, none sent",
            &["--etag-save", "-", "%BASE%/etag", "%BASE%/hello"],
        ),
        case(
            "etag save without an etag empties the file",
            &["--etag-save", "%DIR%/tag.txt", "%BASE%/hello"],
        ),
        case(
            "etag save that cannot be written",
            &["--etag-save", "%DIR%/no/dir/tag.txt", "%BASE%/etag"],
        ),
        case(
            "etag compare matches",
            &[
                "--etag-compare",
                "%DIR%/../etag.txt",
                "-w",
                "%{http_code}",
                "%BASE%/etag",
            ],
        ),
        case(
            "etag compare with a missing file",
            &["--etag-compare", "%DIR%/none.txt", "%BASE%/etag"],
        ),
        case(
            "etag compare with a missing file while saving",
            &[
                "--etag-compare",
                "%DIR%/tag.txt",
                "--etag-save",
                "%DIR%/tag.txt",
                "-w",
                "%{http_code}",
                "%BASE%/etag",
            ],
        ),
        case(
            "rate paces transfers",
            &["--rate", "50/s", "%BASE%/hello", "%BASE%/files/1"],
        ),
        case("rate of zero", &["--rate", "0", "%BASE%/hello"]),
        case(
            "flags that change nothing",
            &[
                "--basic",
                "--tcp-nodelay",
                "--no-npn",
                "--no-keepalive",
                "--styled-output",
                "--expect100-timeout",
                "2",
                "--no-progress-meter",
                "--happy-eyeballs-timeout-ms",
                "100",
                "%BASE%/hello",
            ],
        ),
        // --max-filesize: a body announced over the limit is refused (exit 63) with the head's
        // lines written but not its blank line, and no output file; the next URL still runs.
        case(
            "max filesize exceeded",
            &["--max-filesize", "3", "%BASE%/hello"],
        ),
        case(
            "max filesize include",
            &["-i", "--max-filesize", "3", "%BASE%/mixed"],
        ),
        case(
            "max filesize head",
            &["-I", "--max-filesize", "3", "%BASE%/hello"],
        ),
        case(
            "max filesize to a file",
            &["--max-filesize", "3", "-o", "%DIR%/big.txt", "%BASE%/hello"],
        ),
        case(
            "max filesize within the limit",
            &["--max-filesize", "1k", "%BASE%/hello"],
        ),
        case(
            "max filesize then the next url",
            &["--max-filesize", "3", "%BASE%/hello", "%BASE%/headers"],
        ),
        case(
            "max filesize bad value",
            &["--max-filesize", "lots", "%BASE%/hello"],
        ),
        case(
            "write-out to file output",
            &[
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{filename_effective}",
                "%BASE%/hello",
            ],
        ),
        // Servers that lie: curl's code for each part of a head that breaks HTTP/1 (the routes
        // under /lie/), and what curl reads though hyper would not by default.
        case("http/0.9 reply refused", &["%BASE%/lie/h09"]),
        case(
            "http/0.9 reply allowed",
            &[
                "--http0.9",
                "-i",
                "-w",
                "%{http_code} %{http_version} %{num_headers}",
                "%BASE%/lie/h09",
            ],
        ),
        with(
            Extra::VerboseResponseHead,
            "http/0.9 reply verbose",
            &["-v", "--http0.9", "%BASE%/lie/h09"],
        ),
        case("http/1.2 status line", &["%BASE%/lie/http12"]),
        case("letters for a status code", &["%BASE%/lie/status-letters"]),
        case("status code under 100", &["%BASE%/lie/status-099"]),
        case("header without colon", &["%BASE%/lie/no-colon"]),
        case("nul byte in a header", &["%BASE%/lie/nul"]),
        case("content-length not a number", &["%BASE%/lie/length"]),
        case("space before a header colon", &["%BASE%/lie/space-colon"]),
        case("folded header line", &["%BASE%/lie/folded"]),
        case("150 headers", &["-i", "%BASE%/lie/many"]),
        case("a head over 300 kB", &["%BASE%/lie/huge"]),
        case("1xx before the response", &["-i", "%BASE%/lie/continue"]),
        // curl's Proxy-Connection on a forwarded request, and a --proxy-header that removes or
        // replaces it.
        case(
            "forward proxy request headers",
            &["-x", "%BASE%", "http://origin.test/echo"],
        ),
        case(
            "forward proxy without proxy-connection",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "Proxy-Connection:",
                "http://origin.test/echo",
            ],
        ),
        case(
            "forward proxy with proxy-connection close",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "Proxy-Connection: close",
                "http://origin.test/echo",
            ],
        ),
        case(
            "trailers included",
            &["-i", "-w", "%{size_header}", "%BASE%/lie/trailers"],
        ),
        case(
            "trailers dumped",
            &["-D", "%DIR%/h.txt", "%BASE%/lie/trailers"],
        ),
        case(
            "two 1xx heads dumped",
            &["-D", "-", "-w", "%{size_header}", "%BASE%/lie/early-hints"],
        ),
        with(
            Extra::VerboseResponseHead,
            "1xx heads verbose",
            &["-v", "%BASE%/lie/early-hints"],
        ),
        h2c("h2c response", &["--http2-prior-knowledge", "%BASE%/hello"]),
        h2c(
            "h2c stream reset",
            &["--http2-prior-knowledge", "%BASE%/reset"],
        ),
        h2c(
            "h2c trailers included",
            &["-i", "--http2-prior-knowledge", "%BASE%/trailers"],
        ),
        h2c(
            "h2c stream reset mid body",
            &["--http2-prior-knowledge", "%BASE%/reset-mid"],
        ),
        h2c(
            "h2c stream refused",
            &["--http2-prior-knowledge", "%BASE%/refused"],
        ),
    ]
}

/// The routes of the HTTP/2 server: a response, and streams the server resets before or
/// after the response began.
fn h2_routes(req: &H2Request) -> StreamPlan {
    match req.path() {
        "/hello" => StreamPlan::ok("hello\n"),
        "/reset" => StreamPlan::reset(Reason::INTERNAL_ERROR),
        "/reset-mid" => StreamPlan::new().head(200).data("part").rst(Reason::CANCEL),
        "/refused" => StreamPlan::reset(Reason::REFUSED_STREAM),
        "/trailers" => {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("x-checksum", http::HeaderValue::from_static("42"));
            StreamPlan::new()
                .head(200)
                .data("body\n")
                .trailers(trailers)
        }
        _ => StreamPlan::status(404),
    }
}

/// A reply to `/lie/NAME` that breaks HTTP/1 (or bends it), then the close.
fn lie(name: &str) -> Reply {
    let ok = "Content-Length: 2\r\n\r\nok";
    let head = match name {
        "h09" => "a body without a head\n".to_owned(),
        "http12" => format!("HTTP/1.2 200 OK\r\n{ok}"),
        "status-letters" => format!("HTTP/1.1 abc OK\r\n{ok}"),
        "status-099" => format!("HTTP/1.1 099 Low\r\n{ok}"),
        "no-colon" => format!("HTTP/1.1 200 OK\r\nno colon here\r\n{ok}"),
        "nul" => format!("HTTP/1.1 200 OK\r\nX-A: a\0b\r\n{ok}"),
        "length" => "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok".to_owned(),
        "space-colon" => format!("HTTP/1.1 200 OK\r\nX-Spaced : v\r\n{ok}"),
        "folded" => format!("HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\n{ok}"),
        "many" => {
            let lines: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
            format!("HTTP/1.1 200 OK\r\n{lines}{ok}")
        }
        // 1xx heads before the response, their names as written.
        "continue" => format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n{ok}"),
        "early-hints" => format!(
            "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
             HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: 1\r\n{ok}"
        ),
        // Trailers after a chunked body (in lower case, as poolcurl prints them).
        "trailers" => "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                       2\r\nok\r\n0\r\nx-checksum: 42\r\nx-more: yes\r\n\r\n"
            .to_owned(),
        "huge" => {
            let line = format!("X-Pad: {}\r\n", "p".repeat(100));
            format!("HTTP/1.1 200 OK\r\n{}{ok}", line.repeat(4000))
        }
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
    };
    Reply::raw(Bytes::from(head)).then_close()
}

/// `sha256//BASE64` of the public key in the PEM file at `path` (empty when there is none):
/// the pin of the TLS server's key, computed from the key as `--pinnedpubkey FILE` reads it.
fn pin_of(path: &Path) -> String {
    use base64::Engine as _;
    use rustls_pki_types::pem::PemObject as _;
    let Ok(spki) = rustls_pki_types::SubjectPublicKeyInfoDer::from_pem_file(path) else {
        return String::new();
    };
    let pin = pool::PublicKeyPin::of_spki_der(spki.as_ref());
    format!(
        "sha256//{}",
        base64::engine::general_purpose::STANDARD.encode(pin.sha256())
    )
}

/// The routes every case's server answers.
fn routes(flaky: &AtomicUsize, req: &RecordedRequest) -> Reply {
    // A request through a forward proxy (this server, with -x) names its origin too.
    let target = match req.target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => &req.target,
    };
    let path = target.split('?').next().unwrap_or_default();
    match path {
        // Not the 404 of an unknown path: an empty request target must not pass for `/`.
        "/" => Reply::ok("root\n"),
        "/hello" => Reply::ok("hello\n").header("content-type", "text/plain"),
        "/headers" => Reply::ok("h")
            .header("x-one", "1")
            .header("x-two", "a")
            .header("x-two", "b"),
        "/redirect" => Reply::new(302).header("location", "/hello").body("moved\n"),
        "/basic" if req.header("authorization") == Some("Basic YWxpY2U6czNjcmV0") => {
            Reply::ok("ok basic\n")
        }
        "/basic" => Reply::new(401)
            .header("WWW-Authenticate", "Basic realm=\"parity\"")
            .body("denied\n"),
        "/digest" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::digest_reply(req, ok)
        }
        // As a forward proxy (-x): a Digest proxy, a Basic-only one, and a Digest proxy in
        // front of a Digest server.
        "/proxy-digest" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::proxy_digest_reply(req, ok)
        }
        "/proxy-basic" if req.header("proxy-authorization") == Some("Basic YWxpY2U6czNjcmV0") => {
            Reply::ok("ok proxy basic\n")
        }
        "/proxy-basic" => Reply::new(407)
            .header("Proxy-Authenticate", "Basic realm=\"parity\"")
            .body("denied\n"),
        "/proxy-and-server" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::proxy_digest_reply(req, common::digest_reply(req, ok))
        }
        "/etag" if req.header("if-none-match") == Some("\"v1\"") => Reply::new(304),
        "/close" => Reply::ok("closing\n")
            .header("connection", "close")
            .then_close(),
        "/etag" => Reply::ok("tagged\n").header("etag", "\"v1\""),
        "/mixed" => Reply::ok("mixed\n")
            .header("Content-Type", "text/plain")
            .header("X-Request-ID", "abc")
            .header("x-lower", "l")
            .header("X-Dup", "1")
            .header("Cache-Control", "no-store")
            .header("x-DUP", "2")
            .header("Content-Length", "6"),
        "/mixed-redirect" => Reply::new(302)
            .header("Location", "/mixed")
            .header("Content-Length", "0"),
        "/loop" => Reply::new(301).header("location", "/loop"),
        "/dated" => Reply::ok("dated\n").header("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT"),
        "/attachment" => Reply::ok("attached\n")
            .header("content-disposition", "attachment; filename=\"report.txt\""),
        "/attachment-plain" => Reply::ok("plain\n").header(
            "content-disposition",
            "attachment; filename=plain.txt; size=6",
        ),
        "/attachment-path" => Reply::ok("contained\n").header(
            "content-disposition",
            "attachment; filename=\"../up/evil.txt\"",
        ),
        // To the same server under another host name.
        "/to-localhost" => {
            let host = req.header("host").unwrap_or_default();
            let port = host.rsplit(':').next().unwrap_or_default();
            let location = format!("http://localhost:{port}/echo");
            Reply::new(302).header("location", &location)
        }
        "/truncated" => Reply::ok("0123456789").declared_length(100).then_close(),
        "/truncated-chunked" => Reply::ok("0123456789")
            .chunked()
            .unterminated()
            .then_close(),
        "/empty" => Reply::raw(Bytes::new()).then_close(),
        p if p.starts_with("/lie/") => lie(&p["/lie/".len()..]),
        "/setcookie" => Reply::new(302)
            .header("set-cookie", "session=abc; Path=/")
            .header("location", "/echo"),
        "/sts" => Reply::ok("strict\n").header("strict-transport-security", "max-age=1000"),
        "/cookies" => Reply::ok("set\n")
            .header("set-cookie", "a=1; Path=/")
            .header("set-cookie", "b=2; Path=/"),
        "/cookies2" => Reply::ok("set again\n")
            .header("set-cookie", "a=3; Path=/")
            .header("set-cookie", "c=4; Path=/"),
        "/range" => range(req),
        "/gzip" => encoded("gzip", gzip(b"gzipped body\n")),
        "/deflate" => encoded("deflate", deflate(b"deflated body\n")),
        "/br" => encoded("br", brotli_encode(b"brotli body\n")),
        "/zstd" => encoded(
            "zstd",
            zstd::stream::encode_all(&b"zstd body\n"[..], 3).unwrap(),
        ),
        "/flaky" => {
            if flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                Reply::new(503).body("try again\n")
            } else {
                Reply::ok("recovered\n")
            }
        }
        p if p.starts_with("/status/") => {
            let code: u16 = p["/status/".len()..].parse().unwrap_or(500);
            Reply::new(code).body(format!("status {code}\n"))
        }
        p if p.starts_with("/files/") => Reply::ok(format!("file {}\n", &p["/files/".len()..])),
        "/echo-body" => echo_body(req),
        "/sigv4" => sigv4::check(req),
        "/dns-query" => doh::answer(req),
        "/ntlm" => ntlm::answer(req, false),
        "/ntlm2" => ntlm::answer(req, true),
        "/sigv4-redirect" => Reply::new(302).header("location", "/sigv4?after=redirect"),
        p if p.starts_with("/echo") => echo(req),
        // `OPTIONS *` (--request-target '*').
        "*" => echo(req),
        _ => Reply::new(404).body("no such route\n"),
    }
}

/// The request as the server saw it, minus what differs between the two clients by nature
/// (the User-Agent value, a multipart boundary).
fn echo(req: &RecordedRequest) -> Reply {
    let mut text = format!("{} {} {:?}\n", req.method, req.target, req.version);
    for name in [
        "host",
        "authorization",
        "range",
        "accept",
        "accept-encoding",
        "referer",
        "cookie",
        "if-modified-since",
        "if-unmodified-since",
        "content-length",
        "content-type",
        "x-proxy-header",
        "proxy-connection",
        "x-amz-date",
        "x-amz-content-sha256",
        "date",
    ] {
        for value in req.headers.get_all(name) {
            text.push_str(&format!("{name}: {}\n", value.to_str().unwrap_or("?")));
        }
    }
    text.push_str(&String::from_utf8_lossy(&req.body));
    Reply::ok(without_boundaries(text))
}

/// The body of a request as the server saw it, after its `Content-Type` (no other header:
/// curl sends a body it cannot count ahead chunked, where poolcurl sends its length).
fn echo_body(req: &RecordedRequest) -> Reply {
    let content_type = req.header("content-type").unwrap_or_default();
    let text = format!(
        "content-type: {content_type}\n{}",
        String::from_utf8_lossy(&req.body)
    );
    Reply::ok(without_boundaries(text))
}

/// `text` with every multipart boundary, the head's and those of parts nested in the body,
/// named in the order they first appear: BOUNDARY, BOUNDARY2, ...
fn without_boundaries(mut text: String) -> String {
    let mut boundaries: Vec<String> = Vec::new();
    for piece in text.split("boundary=").skip(1) {
        let end = piece
            .find(|c: char| c.is_ascii_whitespace() || c == ';')
            .unwrap_or(piece.len());
        let boundary = piece[..end].to_owned();
        if !boundary.is_empty() && !boundaries.contains(&boundary) {
            boundaries.push(boundary);
        }
    }
    for (i, boundary) in boundaries.iter().enumerate() {
        let name = match i {
            0 => "BOUNDARY".to_owned(),
            i => format!("BOUNDARY{}", i + 1),
        };
        text = text.replace(boundary.as_str(), &name);
    }
    text
}

fn range(req: &RecordedRequest) -> Reply {
    let Some(spec) = req.header("range").and_then(|r| r.strip_prefix("bytes=")) else {
        return Reply::ok(Bytes::from_static(DIGITS));
    };
    let (from, to) = spec.split_once('-').unwrap_or((spec, ""));
    let from: usize = from.parse().unwrap_or(0);
    let to: usize = to.parse().unwrap_or(DIGITS.len() - 1).min(DIGITS.len() - 1);
    Reply::new(206)
        .header(
            "content-range",
            &format!("bytes {from}-{to}/{}", DIGITS.len()),
        )
        .body(Bytes::copy_from_slice(&DIGITS[from..=to]))
}

fn encoded(coding: &str, body: Vec<u8>) -> Reply {
    Reply::ok(body).header("content-encoding", coding)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn deflate(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn brotli_encode(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(data).unwrap();
    }
    out
}

/// A server that answers whatever arrives with `400 Bad Request` and closes, reading what the
/// client still sends until it closes (a lingering close, so the client sees the answer
/// rather than a reset). Returns its port; it serves until the test ends.
async fn refusing_server() -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                if !matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {
                    return;
                }
                let refusal = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\
                    connection: close\r\n\r\nbad request\n";
                let _ = socket.write_all(refusal).await;
                let _ = socket.shutdown().await;
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    port
}

/// What one run produced.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    code: i32,
    stdout: Vec<u8>,
    files: Vec<(String, Vec<u8>)>,
    stderr: String,
}

/// Which program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Curl,
    Poolcurl,
}

/// A PKCS #8 key (DER) encrypted with the passphrase `s3cret` (PBKDF2-SHA256, AES-256-CBC,
/// as `openssl pkcs8 -topk8` writes it), in PEM.
fn encrypted_pem(pkcs8_der: &[u8]) -> String {
    use base64::Engine as _;
    let info = pkcs8::PrivateKeyInfo::try_from(pkcs8_der).unwrap();
    let iv = [9u8; 16];
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, b"parity-salt", &iv)
            .unwrap();
    let encrypted = info.encrypt_with_params(params, "s3cret").unwrap();
    let text = base64::engine::general_purpose::STANDARD.encode(encrypted.as_bytes());
    let mut pem = String::from("-----BEGIN ENCRYPTED PRIVATE KEY-----\n");
    for line in text.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap());
        pem.push('\n');
    }
    pem + "-----END ENCRYPTED PRIVATE KEY-----\n"
}

/// Runs `case` with `tool` against a fresh server; `root` holds `upload.txt`.
async fn run(tool: Tool, case: &Case, root: &Path, closed_port: u16) -> Outcome {
    let flaky = Arc::new(AtomicUsize::new(0));
    let dir = root.join(format!("{}-{:?}", case.name.replace(' ', "_"), tool));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = {
        let flaky = flaky.clone();
        ConnPlan::serve_with(move |req| routes(&flaky, req))
    };
    // Beside the case's directory, whose files are compared: each run has a CA of its own.
    let ca = dir.with_extension("ca.pem");
    let (cert, key) = (
        dir.with_extension("cert.pem"),
        dir.with_extension("key.pem"),
    );
    let (cert_der, key_der) = (
        dir.with_extension("cert.der"),
        dir.with_extension("key.der"),
    );
    let crl = dir.with_extension("crl.pem");
    let public_key = dir.with_extension("pub.pem");
    let key_encrypted = dir.with_extension("key-enc.pem");
    let tls = |server: Server| {
        let pki = TestPki::new();
        std::fs::write(&public_key, pki.server_public_key_pem()).unwrap();
        std::fs::write(&ca, pki.ca_pem()).unwrap();
        std::fs::write(&crl, pki.crl_pem(true)).unwrap();
        let (cert_pem, key_pem) = pki.client_identity_pem();
        std::fs::write(&cert, cert_pem).unwrap();
        std::fs::write(&key, key_pem).unwrap();
        let (chain, private_key) = pki.client_identity();
        std::fs::write(&cert_der, &chain[0]).unwrap();
        std::fs::write(&key_der, private_key.secret_der()).unwrap();
        std::fs::write(&key_encrypted, encrypted_pem(private_key.secret_der())).unwrap();
        match server {
            Server::TlsExpired => pki.expired_server_config(&[b"http/1.1"]),
            Server::TlsSelfSigned => pki.self_signed_server_config(&[b"http/1.1"], true),
            Server::TlsWithRoot => pki.server_config_with_root(&[b"http/1.1"]),
            Server::TlsClientAuth => pki.server_config_with_client_auth(&[b"http/1.1"]),
            Server::TlsP384Only => {
                pki.server_config_with_groups(&[b"http/1.1"], &[rustls::NamedGroup::secp384r1])
            }
            Server::TlsStapled(status, signer) => {
                let staple = Staple {
                    signer,
                    ..Staple::new(status)
                };
                pki.server_config_with_ocsp(&[b"http/1.1"], staple.response(&pki), true)
            }
            _ => pki.server_config(&[b"http/1.1"]),
        }
    };
    // The HTTP/2 server, for the h2c cases, lives as long as the run.
    let h2_server = match case.server {
        Server::H2c => Some(ScriptedH2Server::builder().handler(h2_routes).start().await),
        _ => None,
    };
    let (_server, port) = match case.server {
        Server::Routes => {
            let server = ScriptedH1Server::start_with(plan).await;
            let port = server.addr().port();
            (Some(server), port)
        }
        Server::Tls
        | Server::TlsExpired
        | Server::TlsSelfSigned
        | Server::TlsWithRoot
        | Server::TlsP384Only
        | Server::TlsStapled(..)
        | Server::TlsClientAuth => {
            let config = tls(case.server);
            let server = ScriptedH1Server::builder()
                .tls(config)
                .default_plan(plan)
                .start()
                .await;
            let port = server.addr().port();
            (Some(server), port)
        }
        Server::Refuses => (None, refusing_server().await),
        Server::H2c => (None, h2_server.as_ref().unwrap().addr().port()),
    };
    // Started only for the cases that use one: a path, or an abstract name, piped to the
    // case's server.
    let uses = |placeholder: &str| case.args.iter().any(|a| a.contains(placeholder));
    // A SOCKS proxy for the cases that name one (`%SOCKS%` is its HOST:PORT).
    let socks = match uses("%SOCKS%") {
        true => Some(ScriptedSocks::start().await),
        false => None,
    };
    let socks_addr = socks
        .as_ref()
        .map_or(String::new(), |p| p.addr().to_string());
    // Digest proxies for the cases that name one: `%DPROXY%` keeps its connection after a
    // 407, `%DPROXYC%` closes it without saying so.
    let digest_proxy = |keep_open| {
        ScriptedProxy::start_digest(
            ConnectScript::Tunnel,
            ("alice", common::DIGEST_PASSWORD),
            keep_open,
        )
    };
    let dproxy = match (uses("%DPROXY%"), uses("%DPROXYC%")) {
        (true, _) => Some(digest_proxy(true).await),
        (_, true) => Some(digest_proxy(false).await),
        _ => None,
    };
    let dproxy_url = dproxy.as_ref().map_or(String::new(), ScriptedProxy::url);
    let unix = match &_server {
        Some(server) if uses("%UNIX%") => Some(UnixBridge::start(server.addr()).await),
        Some(server) if uses("%ABSTRACT%") => Some(UnixBridge::start_abstract(server.addr()).await),
        _ => None,
    };
    let unix_path = unix
        .as_ref()
        .filter(|bridge| bridge.name().is_none())
        .map_or(String::new(), |bridge| {
            bridge.path().to_string_lossy().into_owned()
        });
    let abstract_name = unix
        .as_ref()
        .and_then(UnixBridge::name)
        .unwrap_or_default()
        .to_owned();
    let port = port.to_string();
    let base = format!("http://127.0.0.1:{port}");
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("%BASE%", &base)
                .replace("%PORT%", &port)
                .replace("%CLOSED%", &format!("http://127.0.0.1:{closed_port}"))
                .replace("%CLOSEDPORT%", &closed_port.to_string())
                .replace("%DIR%", &dir.to_string_lossy())
                .replace("%TLS%", &format!("https://localhost:{port}"))
                .replace("%CA%", &ca.to_string_lossy())
                .replace("%CERTDER%", &cert_der.to_string_lossy())
                .replace("%KEYDER%", &key_der.to_string_lossy())
                .replace("%KEYENC%", &key_encrypted.to_string_lossy())
                .replace("%CERT%", &cert.to_string_lossy())
                .replace("%CRL%", &crl.to_string_lossy())
                .replace("%KEY%", &key.to_string_lossy())
                .replace("%PUBKEY%", &public_key.to_string_lossy())
                .replace("%PIN%", &pin_of(&public_key))
                .replace("%UNIX%", &unix_path)
                .replace("%ABSTRACT%", &abstract_name)
                .replace("%SOCKS%", &socks_addr)
                .replace("%DPROXYC%", &dproxy_url)
                .replace("%DPROXY%", &dproxy_url)
        })
        .collect();
    let mut command = match tool {
        Tool::Curl => {
            let mut c = tokio::process::Command::new("curl");
            // No ~/.curlrc, no proxy from the environment.
            c.arg("-q").env("HOME", &dir).env("CURL_HOME", &dir);
            for var in [
                "http_proxy",
                "https_proxy",
                "HTTPS_PROXY",
                "all_proxy",
                "ALL_PROXY",
            ] {
                c.env_remove(var);
            }
            c.stdin(Stdio::null()).kill_on_drop(true);
            c
        }
        Tool::Poolcurl => common::poolcurl_command(),
    };
    command.args(&args).current_dir(&dir);
    let out = tokio::time::timeout(LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("{:?} {} finished in time", tool, case.name))
        .expect("the program ran");
    // The two runs differ in server port and directory by construction; nothing else may.
    let dir_text = dir.to_string_lossy().into_owned();
    let normalize = |bytes: Vec<u8>| {
        let mut text = String::from_utf8_lossy(&bytes).replace(&dir_text, "%DIR%");
        if !unix_path.is_empty() {
            text = text.replace(&unix_path, "%UNIX%");
        }
        let text = program_named_curl(&text)
            .replace(&format!("127.0.0.1:{port}"), "127.0.0.1:%PORT%")
            .replace(&format!("parity.test:{port}"), "parity.test:%PORT%")
            .replace(&format!("localhost:{port}"), "localhost:%PORT%");
        if text.as_bytes() == bytes.as_slice() {
            bytes
        } else if std::str::from_utf8(&bytes).is_ok() {
            text.into_bytes()
        } else {
            bytes
        }
    };
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: normalize(out.stdout),
        files: files_in(&dir)
            .into_iter()
            .map(|(name, bytes)| (name, normalize(bytes)))
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `text` with each line's `poolcurl: ` prefix (a message `--stderr` sent to stdout or a file)
/// spelled as curl's, the one difference such a message has by nature.
fn program_named_curl(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_prefix("poolcurl: ") {
            Some(rest) => format!("curl: {rest}"),
            None => line.to_owned(),
        })
        .collect()
}

/// Every file under `dir` (relative name, contents), sorted; cookie jars without comments.
fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let mut bytes = std::fs::read(&path).unwrap();
            if name.ends_with("hsts.txt") {
                // The comments are each tool's own; an expiry is a time of the run.
                let text = String::from_utf8_lossy(&bytes);
                bytes = text
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .map(|l| match l.split_once(" \"") {
                        Some((host, _)) => format!("{host} \"EXPIRY\"\n"),
                        None => format!("{l}\n"),
                    })
                    .collect::<String>()
                    .into_bytes();
            }
            if name.ends_with("jar.txt") {
                let text = String::from_utf8_lossy(&bytes);
                bytes = text
                    .lines()
                    .filter(|l| {
                        !l.is_empty() && (!l.starts_with('#') || l.starts_with("#HttpOnly_"))
                    })
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
                    .into_bytes();
            }
            // Extended attributes (`--xattr`) count as more of the file.
            for attr in xattr::list(&path).into_iter().flatten() {
                let attr = attr.to_string_lossy().into_owned();
                if attr.starts_with("user.") {
                    let value = xattr::get(&path, &attr).ok().flatten().unwrap_or_default();
                    out.push((format!("{name} [{attr}]"), value));
                }
            }
            out.push((name, bytes));
        }
    }
    out.sort();
    out
}

/// The lines of a run's stderr as a terminal shows them. curl's progress meter redraws itself
/// after a carriage return without ending its line, so a `-v` line written after a redraw
/// follows the meter's figures on the same line, and whether one does depends on when the
/// meter last ran; the figures are dropped here, leaving the `-v` line.
fn stderr_lines(stderr: &str) -> impl Iterator<Item = &str> {
    stderr.split('\n').map(|line| match line.starts_with('\r') {
        true => line.trim_start_matches(|c: char| {
            c == '\r' || c.is_ascii_digit() || " :-.kMGTPB".contains(c)
        }),
        false => line,
    })
}

/// `> Name:` lines of a `-v` trace, names only.
fn verbose_header_names(stderr: &str) -> Vec<String> {
    stderr_lines(stderr)
        .filter_map(|l| l.strip_prefix("> "))
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.to_owned()))
        .collect()
}

/// The `< ` lines of a `-v` trace, CR included: the response heads as shown.
fn verbose_response_lines(stderr: &str) -> Vec<String> {
    stderr_lines(stderr)
        .filter(|l| l.starts_with("< "))
        .map(str::to_owned)
        .collect()
}

/// A trace on stdout without its `== Info:` lines (one may follow a body that does not end
/// in a newline on the same line).
fn without_info(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .split_inclusive('\n')
        .map(|l| l.find("== Info: ").map_or(l, |at| &l[..at]))
        .collect()
}

/// The `%{json}` fields both programs must agree on.
fn json_fields(stdout: &[u8]) -> Vec<(String, serde_json::Value)> {
    let value: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "%{{json}} is JSON ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    });
    [
        "certs",
        "content_type",
        "errormsg",
        "exitcode",
        "http_code",
        "method",
        "num_certs",
        "num_connects",
        "num_headers",
        "num_redirects",
        "proxy_ssl_verify_result",
        "response_code",
        "scheme",
        "size_download",
        "ssl_verify_result",
        "url_effective",
        "urlnum",
    ]
    .into_iter()
    .map(|k| match (k, &value[k]) {
        ("certs", serde_json::Value::String(text)) => (
            k.to_owned(),
            serde_json::Value::String(without_run_specifics(text)),
        ),
        (_, v) => (k.to_owned(), v.clone()),
    })
    .collect()
}

/// `-w '%{certs}'` text with what differs between two runs' certificates (each run has a
/// PKI of its own) masked: serial numbers, key identifiers, RSA moduli, signatures, PEM
/// bodies and the CA's number.
fn without_run_specifics(text: &str) -> String {
    const PER_RUN: [&str; 5] = [
        "Serial Number:",
        "Signature:",
        "X509v3 Subject Key Identifier:",
        "X509v3 Authority Key Identifier:",
        "rsa(n):",
    ];
    let mut in_pem = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("-----BEGIN") || line.starts_with("-----END") {
            in_pem = line.starts_with("-----BEGIN");
        } else if in_pem {
            continue;
        }
        let line = match PER_RUN.iter().find(|label| line.starts_with(*label)) {
            Some(label) => format!("{label}<per run>"),
            None => match line.split_once("pool-tests CA ") {
                Some((head, _)) => format!("{head}pool-tests CA N"),
                None => line.to_owned(),
            },
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Whether a `curl` to compare with is installed.
fn curl_installed() -> bool {
    std::process::Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn poolcurl_matches_curl_byte_for_byte() {
    if !curl_installed() {
        println!("skipped: curl is not installed, so there is nothing to compare poolcurl with");
        return;
    }
    let root = TempDir::new("poolcurl-parity");
    std::fs::write(root.path().join("upload.txt"), "uploaded file\n").unwrap();
    std::fs::write(root.path().join("data.json"), "{\"a\": 1}\n").unwrap();
    std::fs::write(
        root.path().join("form-headers.txt"),
        "X-First: 1\n# a comment\nX-Second: two\n  folded\n",
    )
    .unwrap();
    std::fs::write(root.path().join("etag.txt"), "\"v1\"\n").unwrap();
    std::fs::write(root.path().join("next.cfg"), "next\ndata = \"k=v\"\n").unwrap();
    // -b FILE with -j: a session cookie (expiry 0) and two that last until 2100, one with a
    // longer path (curl sends it first, then the newer of equal paths).
    std::fs::write(
        root.path().join("jar.txt"),
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\t1\n\
         127.0.0.1\tFALSE\t/\tFALSE\t4102444800\tlasting\t2\n\
         127.0.0.1\tFALSE\t/echo\tFALSE\t4102444800\tdeep\t3\n",
    )
    .unwrap();
    // -z FILE: a file modified at a known second (Wed, 21 Oct 2015 07:28:00 GMT).
    let stamp = std::fs::File::create(root.path().join("stamp.txt")).unwrap();
    stamp
        .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_445_412_480))
        .unwrap();
    for (name, text) in [
        (
            "netrc.txt",
            "machine 127.0.0.1 login alice password one\n\
             machine 127.0.0.1 login bob password two\n\
             default login dflt password three\n",
        ),
        (
            "netrc-dialect.txt",
            "# machine 127.0.0.1 login no password no\n\
             macdef init\n\
             machine 127.0.0.1 login inside password macro\n\
             \n\
             MACHINE 127.0.0.1 # login no\n\
             Login \"al ice\"\n\
             account acc PASSWORD \"o\\\"ne\" unknown token\n",
        ),
        (
            "netrc-bad.txt",
            "machine 127.0.0.1 login a password \"open\n",
        ),
        (
            "netrc-digest.txt",
            "machine 127.0.0.1 login alice password s3cret\n",
        ),
    ] {
        std::fs::write(root.path().join(name), text).unwrap();
    }
    std::fs::write(
        root.path().join("headers.txt"),
        "X-From-File: 1\r\n\r\nnot a header\nAccept: text/plain\n",
    )
    .unwrap();
    let refused = RefusedAddr::new();
    let closed_port = refused.port();
    let cases = cases();
    assert!(cases.len() >= 40, "the suite keeps at least 40 cases");
    let mut failures = Vec::new();
    for case in &cases {
        let curl = run(Tool::Curl, case, root.path(), closed_port).await;
        let ours = run(Tool::Poolcurl, case, root.path(), closed_port).await;
        let mut problems = Vec::new();
        if curl.code != ours.code {
            // The end of each stderr: the message that goes with the code.
            let tail = |text: &str| {
                let start = text.len().saturating_sub(300);
                let start = (start..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(start);
                text[start..].to_owned()
            };
            problems.push(format!(
                "exit code: curl {} poolcurl {}\n  curl stderr     {:?}\n  poolcurl stderr {:?}",
                curl.code,
                ours.code,
                tail(&curl.stderr),
                tail(&ours.stderr)
            ));
        }
        let stdout_compared =
            ![Extra::JsonFields, Extra::TraceWithoutInfo, Extra::CertsText].contains(&case.extra);
        if stdout_compared && curl.stdout != ours.stdout {
            problems.push(format!(
                "stdout:\n  curl     {:?}\n  poolcurl {:?}",
                String::from_utf8_lossy(&curl.stdout),
                String::from_utf8_lossy(&ours.stdout)
            ));
        }
        if curl.files != ours.files {
            problems.push(format!(
                "files:\n  curl     {:?}\n  poolcurl {:?}",
                curl.files, ours.files
            ));
        }
        match case.extra {
            Extra::None => {}
            Extra::VerboseHeaderOrder => {
                let (a, b) = (
                    verbose_header_names(&curl.stderr),
                    verbose_header_names(&ours.stderr),
                );
                if a != b {
                    problems.push(format!("-v request headers: curl {a:?} poolcurl {b:?}"));
                }
            }
            Extra::VerboseAuth => {
                let notes = |stderr: &str| -> Vec<String> {
                    stderr_lines(stderr)
                        .filter(|l| l.starts_with("* Server auth using"))
                        .map(str::to_owned)
                        .collect()
                };
                let (a, b) = (notes(&curl.stderr), notes(&ours.stderr));
                if a != b || a.is_empty() {
                    problems.push(format!("-v auth notes: curl {a:?} poolcurl {b:?}"));
                }
            }
            Extra::UnknownVariableWarning => {
                let warning = "unknown --write-out variable: 'bogus'";
                if !curl.stderr.contains(&format!("curl: {warning}"))
                    || !ours.stderr.contains(&format!("poolcurl: {warning}"))
                {
                    problems.push(format!(
                        "warning:\n  curl     {:?}\n  poolcurl {:?}",
                        curl.stderr, ours.stderr
                    ));
                }
            }
            Extra::VerboseTls => {
                let tls_lines = |stderr: &str| -> Vec<String> {
                    stderr_lines(stderr)
                        .filter(|l| {
                            [
                                "* SSL connection using",
                                "* SSL re-using session ID",
                                "* ALPN: server accepted",
                                "* Server certificate:",
                                "*  subject:",
                                "*  start date:",
                                "*  expire date:",
                                "*  subjectAltName:",
                                "*  issuer:",
                                "*  SSL certificate verify",
                                "* SSL certificate status:",
                            ]
                            .iter()
                            .any(|start| l.starts_with(start))
                        })
                        // Each run has a CA of its own, numbered: the issuer's number differs
                        // by nature.
                        .map(|l| match l.split_once("CN=pool-tests CA ") {
                            Some((head, _)) => format!("{head}CN=pool-tests CA N"),
                            None => l.to_owned(),
                        })
                        .collect()
                };
                let (a, b) = (tls_lines(&curl.stderr), tls_lines(&ours.stderr));
                if a != b || a.is_empty() {
                    problems.push(format!("-v TLS notes: curl {a:?} poolcurl {b:?}"));
                }
            }
            Extra::VerboseResponseHead => {
                let (a, b) = (
                    verbose_response_lines(&curl.stderr),
                    verbose_response_lines(&ours.stderr),
                );
                if a != b {
                    problems.push(format!("-v response head: curl {a:?} poolcurl {b:?}"));
                }
            }
            Extra::VerboseDataNotes => {
                let notes = |stderr: &str| -> Vec<String> {
                    stderr_lines(stderr)
                        .filter(|l| l.starts_with("} [") || l.starts_with("{ ["))
                        .map(str::to_owned)
                        .collect()
                };
                let (a, b) = (notes(&curl.stderr), notes(&ours.stderr));
                if a != b || a.is_empty() {
                    problems.push(format!("-v data notes: curl {a:?} poolcurl {b:?}"));
                }
            }
            Extra::TraceWithoutInfo => {
                let (a, b) = (without_info(&curl.stdout), without_info(&ours.stdout));
                if a != b || !a.contains("<= Recv header") {
                    problems.push(format!(
                        "trace without Info lines:\n  curl     {a:?}\n  poolcurl {b:?}"
                    ));
                }
            }
            Extra::CertsText => {
                let masked = |out: &[u8]| without_run_specifics(&String::from_utf8_lossy(out));
                let (a, b) = (masked(&curl.stdout), masked(&ours.stdout));
                if a != b || !a.contains("Subject:") {
                    problems.push(format!("certs:\n  curl     {a:?}\n  poolcurl {b:?}"));
                }
            }
            Extra::JsonFields => {
                let (a, b) = (json_fields(&curl.stdout), json_fields(&ours.stdout));
                if a != b {
                    problems.push(format!(
                        "%{{json}} fields:\n  curl     {a:?}\n  poolcurl {b:?}"
                    ));
                }
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "case {:?} ({:?}):\n{}",
                case.name,
                case.args,
                problems.join("\n")
            ));
        }
    }
    println!(
        "{} parity cases run, {} differ",
        cases.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
