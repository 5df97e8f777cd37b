//! What the CLI test binaries share: how a `poolcurl` child is started.

/// A `poolcurl` command for a test: stdin closed, killed if the test drops it, without the
/// proxy variables poolcurl reads (the runs talk to loopback peers; a proxy configured in the
/// test's environment must not apply), without a `POOLCURL_LOG` that would add the libraries'
/// log to stderr, and with a home of its own (empty), so that the tester's `~/.curlrc` and
/// `~/.netrc` do not apply either.
pub(crate) fn poolcurl_command() -> tokio::process::Command {
    command(env!("CARGO_BIN_EXE_poolcurl"))
}

/// `program` (curl, beside poolcurl) as [`poolcurl_command`] runs poolcurl.
#[allow(dead_code)] // Each test binary compiles this module; not each uses it.
pub(crate) fn command(program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
    // One empty directory for every run (nothing writes there), so none is left per process.
    let home = std::env::temp_dir().join("poolcurl-test-home");
    std::fs::create_dir_all(&home).expect("a temporary directory");
    let mut command = tokio::process::Command::new(program);
    for var in ["HOME", "CURL_HOME", "XDG_CONFIG_HOME"] {
        command.env(var, &home);
    }
    for var in [
        "http_proxy",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "POOLCURL_LOG",
    ] {
        command.env_remove(var);
    }
    command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    command
}

/// The password of the Digest routes' user.
#[allow(dead_code)] // Each test binary compiles this module; not each uses it.
pub(crate) const DIGEST_PASSWORD: &str = "s3cret";

/// A Digest-protected reply, as a server checks it: `ok` when `request` carries a Digest
/// `Authorization` whose response the server recomputes from the user's password (the method,
/// the `uri` it names and, for `auth-int`, the body), else `401` with a challenge. The
/// `digest_auth` crate computes the server's side too; the challenge is fixed, so the two runs
/// of a parity case see the same one.
#[allow(dead_code)]
pub(crate) fn digest_reply(
    request: &pool_tests::h1::RecordedRequest,
    ok: pool_tests::h1::Reply,
) -> pool_tests::h1::Reply {
    guarded_reply(request, ok, Guard::Server)
}

/// [`digest_reply`] as a forward proxy checks it: `Proxy-Authorization`, and `407` with a
/// `Proxy-Authenticate` challenge.
#[allow(dead_code)]
pub(crate) fn proxy_digest_reply(
    request: &pool_tests::h1::RecordedRequest,
    ok: pool_tests::h1::Reply,
) -> pool_tests::h1::Reply {
    guarded_reply(request, ok, Guard::Proxy)
}

/// Who asks for the credentials of [`guarded_reply`].
#[derive(Clone, Copy)]
enum Guard {
    Server,
    Proxy,
}

fn guarded_reply(
    request: &pool_tests::h1::RecordedRequest,
    ok: pool_tests::h1::Reply,
    guard: Guard,
) -> pool_tests::h1::Reply {
    let (asked, status, challenge) = match guard {
        Guard::Server => ("authorization", 401, "WWW-Authenticate"),
        Guard::Proxy => ("proxy-authorization", 407, "Proxy-Authenticate"),
    };
    let verified = request
        .header(asked)
        .filter(|value| value.starts_with("Digest "))
        .and_then(|value| digest_auth::AuthorizationHeader::parse(value).ok())
        .is_some_and(|mut answer| {
            let claimed = answer.response.clone();
            let context = digest_auth::AuthContext::new_with_method(
                answer.username.clone(),
                DIGEST_PASSWORD,
                answer.uri.clone(),
                Some(&request.body[..]),
                digest_auth::HttpMethod::from(request.method.as_str()),
            );
            answer.digest(&context);
            answer.response == claimed && answer.username == "alice"
        });
    if verified {
        return ok;
    }
    pool_tests::h1::Reply::new(status)
        .header(
            challenge,
            "Digest realm=\"parity\", nonce=\"bm9uY2U\", qop=\"auth\", algorithm=MD5, opaque=\"op\"",
        )
        .body(format!("denied {}\n", request.body.len()))
}
