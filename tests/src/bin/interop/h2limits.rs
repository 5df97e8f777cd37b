//! HTTP/2 limits against nginx, where hyper's defaults fail requests that HTTP/1.1 serves.
//!
//! **Responses left unread.** Three `GET`s of a 2.5 MiB file over nginx's h2c listener are
//! left unread (each response head taken, its body not), then a small `GET` on the same
//! connection must complete. Every stream draws on the connection's window, and an unread
//! response keeps what it received of it, so with hyper's 5 MiB connection window nginx sends
//! 2 MiB on each of the first two streams, 1 MiB on the third, and nothing more on the
//! connection. The checks:
//!
//! * the pool as built (its 1 GiB connection window): the small response arrives, on the
//!   same connection as the three;
//! * hyper's 5 MiB (`http2_initial_connection_window_size(Some(5 MiB))`), a reference row that
//!   shows the failure is real against this server: the small response's body does not come
//!   within a few seconds. It neither passes nor fails, as it measures hyper's default, not
//!   the pool's.
//!
//! These run the pool as a library (no poolcurl mode leaves responses unread).
//!
//! **A large response head.** nginx answers `/large-head` with forty 1 KB cookies (a 40 KiB
//! head). curl and poolcurl, over h2c and TLS h2, must print the same status and header count
//! and exit 0: with hyper's 16 KiB header-list limit the pool failed it (and its connection),
//! which a reference row shows against the same listener.

use super::*;

use http_body_util::BodyExt;

/// The large file's size: over a stream's 2 MiB window, so each unread response holds a whole
/// stream window of the connection's.
pub(crate) const BIG: usize = 5 * 1024 * 1024 / 2;
/// hyper's own connection window.
const HYPER_CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
/// hyper's own header-list limit.
const HYPER_HEADER_LIST_LIMIT: u32 = 16 * 1024;
/// How long the small response may take once its request is sent.
const SMALL_DEADLINE: Duration = Duration::from_secs(5);

/// The file the checks fetch, written into nginx's directory before nginx starts.
pub(crate) fn write_big_file(dir: &Path) -> Result<(), String> {
    std::fs::write(dir.join("big.bin"), vec![b'b'; BIG]).map_err(|e| format!("write big.bin: {e}"))
}

pub(crate) fn nginx_unread_responses(started: &Nginx) -> Vec<Row> {
    let names = announce([
        "nginx h2c, 3 responses of 2.5 MiB left unread, then a small one (the pool's window)",
        "nginx h2c, the same with hyper's 5 MiB connection window (reference)",
    ]);
    let port = match started {
        Ok((_, _, ports)) => ports[1],
        Err(e) => return names.map(|name| Row::broken(name, e)).into(),
    };
    let [pooled, hypers] = names;
    let base = format!("http://127.0.0.1:{port}");
    let ours = block_on(unread_then_small(&base, None));
    let mut row = Row::new(pooled, Some(ours.is_ok()));
    row.details.push(ours.unwrap_or_else(|e| e));
    let theirs = block_on(unread_then_small(&base, Some(HYPER_CONNECTION_WINDOW)));
    let mut reference = Row::new(hypers, None);
    reference
        .details
        .push(format!("hyper's window: {}", theirs.unwrap_or_else(|e| e)));
    vec![row, reference]
}

/// Leaves three large responses unread on one h2c connection, then fetches a small one; what
/// happened, as `Ok` if the small response's body came in time.
async fn unread_then_small(base: &str, window: Option<u32>) -> Result<String, String> {
    let (_pool, client) = h2c_client(|b| b.http2_initial_connection_window_size(window))?;
    let get = |path: &str| get(&format!("{base}{path}"));
    let mut unread = Vec::new();
    for _ in 0..3 {
        let response = tokio::time::timeout(SMALL_DEADLINE, client.request(get("/big")?))
            .await
            .map_err(|_| "no head for a large response".to_string())?
            .map_err(|e| format!("large response: {e}"))?;
        if response.status() != 200 {
            return Err(format!("large response: status {}", response.status()));
        }
        unread.push(response);
    }
    let small = async {
        let response = client.request(get("/")?).await.map_err(|e| e.to_string())?;
        let id = response.body().connection().id();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((id, body.to_bytes()))
    };
    let outcome = match tokio::time::timeout(SMALL_DEADLINE, small).await {
        Err(_) => Err(format!(
            "the small response's body did not come within {} s",
            SMALL_DEADLINE.as_secs()
        )),
        Ok(Err(e)) => Err(format!("small response: {e}")),
        Ok(Ok((_, body))) if body != "ok\n" => Err(format!("small response body {body:?}")),
        Ok(Ok((id, _))) if unread.iter().any(|r| r.body().connection().id() != id) => {
            Err("the small response came on another connection".into())
        }
        Ok(Ok(_)) => Ok("the small response came on the same connection".to_string()),
    };
    // The large responses are read last, whole: nothing was lost by leaving them.
    for response in unread {
        let collected = tokio::time::timeout(SMALL_DEADLINE, response.into_body().collect()).await;
        match collected.map(|body| body.map(|b| b.to_bytes().len())) {
            Ok(Ok(BIG)) => {}
            Ok(Ok(_)) => return Err("a large response came short".into()),
            Ok(Err(e)) => return Err(format!("a large response failed: {e}")),
            Err(_) if outcome.is_err() => return outcome,
            Err(_) => return Err("a large response did not finish".into()),
        }
    }
    outcome
}

/// Cookies in the large head, and the size of each.
const COOKIES: usize = 40;
const COOKIE_BYTES: usize = 1000;

/// nginx's `location = /large-head`: [`COOKIES`] `Set-Cookie` lines of about [`COOKIE_BYTES`]
/// each, with a short body.
pub(crate) fn large_head_location() -> String {
    let value = "v".repeat(COOKIE_BYTES);
    let headers: String = (0..COOKIES)
        .map(|i| format!(r#"add_header Set-Cookie "c{i}={value}"; "#))
        .collect();
    format!(r#"location = /large-head {{ {headers} return 200 "ok\n"; }}"#)
}

/// curl and poolcurl fetching the large head over h2c and over TLS h2: the same output (status
/// and header count) and exit 0.
pub(crate) fn nginx_large_head(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let names = announce([
        "curl vs poolcurl, a 40 KiB response head from nginx over h2c",
        "curl vs poolcurl, a 40 KiB response head from nginx over TLS h2",
    ]);
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return names.map(|name| Row::broken(name, e)).into(),
    };
    let Some(curl) = find_binary("curl") else {
        return vec![Row::skipped(
            "skipped: curl not found (the large response head beside curl)".into(),
            None,
        )];
    };
    let ca = dir.join("ca.pem").display().to_string();
    let (h2c, tls) = (
        format!("http://127.0.0.1:{}/large-head", ports[1]),
        format!("https://localhost:{}/large-head", ports[2]),
    );
    let write_out = "%{http_code} %{http_version} %{num_headers}\n";
    let [cleartext, encrypted] = names;
    vec![
        beside_curl(
            cleartext,
            &curl,
            poolcurl,
            &[
                "-s",
                "--http2-prior-knowledge",
                "-o",
                "/dev/null",
                "-w",
                write_out,
                &h2c,
            ],
        ),
        beside_curl(
            encrypted,
            &curl,
            poolcurl,
            &[
                "-s",
                "--http2",
                "--cacert",
                &ca,
                "-o",
                "/dev/null",
                "-w",
                write_out,
                &tls,
            ],
        ),
    ]
}

/// A reference row: the pool with hyper's 16 KiB header-list limit asks nginx's h2c listener
/// for the large head. It shows the failure the pool's default avoids is real against this
/// server; it neither passes nor fails.
pub(crate) fn nginx_large_head_with_hypers_limit(started: &Nginx) -> Row {
    let name = "nginx h2c, the 40 KiB head with hyper's 16 KiB header-list limit (reference)";
    eprintln!("interop: {name} ...");
    let port = match started {
        Ok((_, _, ports)) => ports[1],
        Err(e) => return Row::broken(name.into(), e),
    };
    let outcome = block_on(async {
        let (_pool, client) =
            h2c_client(|b| b.http2_max_header_list_size(HYPER_HEADER_LIST_LIMIT))?;
        let request = get(&format!("http://127.0.0.1:{port}/large-head"))?;
        Ok(
            match tokio::time::timeout(SMALL_DEADLINE, client.request(request)).await {
                Err(_) => "no answer".to_string(),
                Ok(Ok(response)) => format!("status {}", response.status()),
                Ok(Err(e)) => format!("failed: {e:#}"),
            },
        )
    });
    let mut row = Row::new(name.into(), None);
    row.details.push(match outcome {
        Ok(what) => format!("hyper's limit: {what}"),
        Err(e) => format!("could not run: {e}"),
    });
    row
}

/// Runs `task` on a current-thread runtime of its own (the interop binary has none).
pub(crate) fn block_on<T>(
    task: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?
        .block_on(task)
}

/// A pool speaking h2c with prior knowledge, with `settings` applied, and its client.
pub(crate) fn h2c_client(
    settings: impl FnOnce(pool::Builder) -> pool::Builder,
) -> Result<(pool::ConnectionPool, pool::Client), String> {
    let builder =
        pool::ConnectionPool::builder().protocol(pool::ProtocolPolicy::Http2PriorKnowledge);
    let pool = settings(builder)
        .build()
        .map_err(|e| format!("pool: {e}"))?;
    let client = pool.client().map_err(|e| format!("client: {e}"))?;
    Ok((pool, client))
}

/// A `GET` of `url` with no body.
pub(crate) fn get(url: &str) -> Result<http::Request<pool::RequestBody>, String> {
    http::Request::get(url)
        .body(pool::RequestBody::empty())
        .map_err(|e| e.to_string())
}
