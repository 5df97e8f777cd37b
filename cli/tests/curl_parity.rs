//! curl parity: the same command lines through curl (7.88 on the CI image) and poolcurl,
//! against loopback servers, comparing exit codes, stdout bytes and the files each run wrote.
//!
//! Every case starts a fresh scripted HTTP/1.1 server for each of the two runs (so stateful
//! routes, like one that fails once, see the same sequence) and a fresh directory (`%DIR%`) for
//! output files; `%BASE%` is the server's `http://127.0.0.1:PORT` (`%CLOSED%` a URL whose
//! port refuses connections, `%CLOSEDPORT%` that port; `%TLS%`,
//! `https://localhost:PORT`, for the TLS servers, whose CA is `%CA%` and whose CRL revoking
//! the server's certificate is `%CRL%`, the self-signed server's certificate `%SELF%`, the server's own (CA-issued) certificate `%LEAF%`; `%UNIX%` is a Unix socket path piped to the case's
//! server, `%ABSTRACT%` a name in the abstract namespace, `%SOCKS%` the `HOST:PORT` of a
//! SOCKS proxy (SOCKS5 and SOCKS4) started for the run, `%DPROXY%` and `%DPROXYC%` the URL of
//! a Digest proxy started for the run (keeping its connection after a `407`, or saying
//! `Connection: close` and closing it), `%NPROXY%` that of an NTLM proxy; the `h2c` cases run against an HTTP/2
//! server, `%BASE%` naming it). The cases are listed by area in [`cases`], the routes in
//! [`routes`]. Cases with `Extra` checks also compare something stderr shows (the order of `-v`
//! request headers, a warning).
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

#[path = "curl_parity/cases/mod.rs"]
mod cases;
mod common;
#[path = "curl_parity/routes/mod.rs"]
mod routes;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use pool_tests::h1::{ConnPlan, ScriptedH1Server};
use pool_tests::h2::ScriptedH2Server;
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
    /// stderr's `Warning: ` and `Note: ` lines (curl's `warnf`, `notef`), in order.
    Warnings,
    /// stderr byte for byte, `poolcurl:` read as `curl:` (for cases under `-s`, where only
    /// what curl prints regardless remains, such as a password prompt).
    Stderr,
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
    /// `-v`'s `--alt-svc` notes (`Added alt-svc: ...`, `Alt-svc connecting from ...`), in
    /// order, ports masked (each run has its own server).
    VerboseAltSvc,
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
    /// What both programs read on stdin (nothing: `/dev/null`).
    stdin: Option<&'static str>,
    /// The `.curlrc` both programs find in their home directory (none: curl runs with `-q`).
    curlrc: Option<&'static str>,
}

fn case(name: &'static str, args: &[&'static str]) -> Case {
    Case {
        name,
        args: args.to_vec(),
        extra: Extra::None,
        server: Server::Routes,
        stdin: None,
        curlrc: None,
    }
}

fn with_stdin(name: &'static str, stdin: &'static str, args: &[&'static str]) -> Case {
    Case {
        stdin: Some(stdin),
        ..case(name, args)
    }
}

fn with_curlrc(name: &'static str, curlrc: &'static str, args: &[&'static str]) -> Case {
    Case {
        curlrc: Some(curlrc),
        ..case(name, args)
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

/// The cases ([`cases::all`]).
fn cases() -> Vec<Case> {
    cases::all()
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
        ConnPlan::serve_with(move |req| routes::routes(&flaky, req))
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
    let self_signed = dir.with_extension("self.pem");
    let leaf = dir.with_extension("leaf.pem");
    let public_key = dir.with_extension("pub.pem");
    let key_encrypted = dir.with_extension("key-enc.pem");
    let tls = |server: Server| {
        let pki = TestPki::new();
        std::fs::write(&public_key, pki.server_public_key_pem()).unwrap();
        std::fs::write(&ca, pki.ca_pem()).unwrap();
        std::fs::write(&leaf, pki.server_cert_pem()).unwrap();
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
            Server::TlsSelfSigned => {
                let (config, pem) = pki.self_signed_server(&[b"http/1.1"], true);
                std::fs::write(&self_signed, pem).unwrap();
                config
            }
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
        Server::H2c => Some(
            ScriptedH2Server::builder()
                .handler(routes::h2_routes)
                .start()
                .await,
        ),
        _ => None,
    };
    let (_server, port) = match case.server {
        Server::Routes => {
            // As nginx does: a request that asks for `100 Continue` gets it (curl's uploads
            // ask, and so do poolcurl's).
            let server = ScriptedH1Server::builder()
                .continue_expected()
                .default_plan(plan)
                .start()
                .await;
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
                .continue_expected()
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
    // An NTLM proxy (NTLMv2, password s3cret) for the cases that name one (`%NPROXY%`).
    let nproxy = match uses("%NPROXY%") {
        true => Some(ScriptedProxy::start_ntlm(ConnectScript::Tunnel, "s3cret", true).await),
        false => None,
    };
    let nproxy_url = nproxy.as_ref().map_or(String::new(), ScriptedProxy::url);
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
                .replace("%SELF%", &self_signed.to_string_lossy())
                .replace("%LEAF%", &leaf.to_string_lossy())
                .replace("%CERTDER%", &cert_der.to_string_lossy())
                .replace("%KEYDER%", &key_der.to_string_lossy())
                .replace("%KEYENC%", &key_encrypted.to_string_lossy())
                .replace("%CERT%", &cert.to_string_lossy())
                .replace("%CRL%", &crl.to_string_lossy())
                .replace("%KEY%", &key.to_string_lossy())
                .replace("%PUBKEY%", &public_key.to_string_lossy())
                .replace("%PIN%", &routes::pin_of(&public_key))
                .replace("%UNIX%", &unix_path)
                .replace("%ABSTRACT%", &abstract_name)
                .replace("%SOCKS%", &socks_addr)
                .replace("%NPROXY%", &nproxy_url)
                .replace("%DPROXYC%", &dproxy_url)
                .replace("%DPROXY%", &dproxy_url)
        })
        .collect();
    // A home of each run's own, beside the case's directory, holding the case's `.curlrc`.
    let home = dir.with_extension("home");
    std::fs::create_dir_all(&home).unwrap();
    if let Some(text) = case.curlrc {
        std::fs::write(home.join(".curlrc"), text).unwrap();
    }
    let mut command = match tool {
        Tool::Curl => {
            let mut c = tokio::process::Command::new("curl");
            // No ~/.curlrc unless the case has one, no proxy from the environment.
            if case.curlrc.is_none() {
                c.arg("-q");
            }
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
    for var in ["HOME", "CURL_HOME", "XDG_CONFIG_HOME"] {
        command.env(var, &home);
    }
    command.args(&args).current_dir(&dir);
    if let Some(input) = case.stdin {
        // Beside the case's directory, whose files are compared.
        let file = dir.with_extension("stdin");
        std::fs::write(&file, input).unwrap();
        command.stdin(std::fs::File::open(&file).unwrap());
    }
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
        files: files_in(&dir, &port)
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
fn files_in(dir: &Path, port: &str) -> Vec<(String, Vec<u8>)> {
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
            if name.ends_with("altsvc.txt") {
                // The comments are each tool's own; an expiry is a time of the run, and the
                // server's port differs between the runs.
                let text = String::from_utf8_lossy(&bytes);
                bytes = text
                    .lines()
                    .filter(|l| !l.starts_with('#'))
                    .map(|l| match l.split_once(" \"") {
                        Some((head, tail)) => {
                            let tail = tail.split_once('"').map_or("", |(_, t)| t);
                            let head = format!("{head} ").replace(&format!(" {port} "), " %PORT% ");
                            format!("{head}\"EXPIRY\"{tail}\n")
                        }
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

/// `line` with every port (the digits after a colon) written `PORT`.
fn mask_ports(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == ':' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push_str("PORT");
        }
    }
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
    // Data over curl's 1 MiB: a POST of it asks for `100 Continue`.
    std::fs::write(root.path().join("big.txt"), vec![b'b'; 1024 * 1024 + 1]).unwrap();
    std::fs::write(
        root.path().join("form-headers.txt"),
        "X-First: 1\n# a comment\nX-Second: two\n  folded\n",
    )
    .unwrap();
    std::fs::write(root.path().join("etag.txt"), "\"v1\"\n").unwrap();
    std::fs::write(root.path().join("next.cfg"), "next\ndata = \"k=v\"\n").unwrap();
    // curl's config syntax: comment lines, a flag given a value, an unquoted value followed by
    // more words, a quoted value holding a `#`.
    std::fs::write(
        root.path().join("syntax.cfg"),
        "/ slash comment\n* star comment\ninclude yes\nheader X-E:a b\n\
         header = \"X-Q: 1 # kept\"\nsilent\n",
    )
    .unwrap();
    // Lines curl refuses in a config file are warnings, muted once `silent` was read.
    std::fs::write(
        root.path().join("lenient.cfg"),
        "bogus-thing\nno-http2\nheader\ninclude\nsilent\nnope\n",
    )
    .unwrap();
    // A -K line naming a file that cannot be read is a line curl warns about and passes over.
    std::fs::write(
        root.path().join("nested.cfg"),
        "-K missing-nested.cfg\nheader = \"X-N: 1\"\n",
    )
    .unwrap();
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
    // -d @FILE as text: line ends go, and what follows a CR or a NUL on a line.
    std::fs::write(
        root.path().join("text-data.txt"),
        b"a\x00b\r\nc=1\rjunk\nd\n",
    )
    .unwrap();
    // A -w file: its line ends go, and what follows a CR on a line.
    std::fs::write(
        root.path().join("format.txt"),
        "%{http_code}\r junk\n|\\%{http_code}|\\n\n",
    )
    .unwrap();
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
            Extra::VerboseAltSvc => {
                let notes = |stderr: &str| -> Vec<String> {
                    stderr_lines(stderr)
                        .filter(|l| l.starts_with("* Added alt-svc") || l.starts_with("* Alt-svc"))
                        .map(mask_ports)
                        .collect()
                };
                let (a, b) = (notes(&curl.stderr), notes(&ours.stderr));
                if a != b || a.is_empty() {
                    problems.push(format!("-v alt-svc notes: curl {a:?} poolcurl {b:?}"));
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
            Extra::Stderr => {
                let ours = ours
                    .stderr
                    .replace("poolcurl: ", "curl: ")
                    .replace("'poolcurl --help'", "'curl --help'")
                    .replace("poolcurl failed to verify", "curl failed to verify");
                // poolcurl has no manual to point at.
                let theirs = curl.stderr.replace(" or 'curl --manual'", "");
                if theirs != ours {
                    problems.push(format!(
                        "stderr:\n  curl     {:?}\n  poolcurl {ours:?}",
                        curl.stderr
                    ));
                }
            }
            Extra::Warnings => {
                let warnings = |stderr: &str| -> Vec<String> {
                    stderr
                        .lines()
                        .filter(|l| l.starts_with("Warning: ") || l.starts_with("Note: "))
                        .map(str::to_owned)
                        .collect()
                };
                let (theirs, mine) = (warnings(&curl.stderr), warnings(&ours.stderr));
                if theirs != mine {
                    problems.push(format!(
                        "warnings:\n  curl     {theirs:?}\n  poolcurl {mine:?}"
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
