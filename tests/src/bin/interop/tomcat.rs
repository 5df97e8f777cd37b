//! Concurrent HTTP/2 uploads to Apache Tomcat, whose overhead protection ends a connection
//! with `GOAWAY(ENHANCE_YOUR_CALM)` once uploads overlap on it (two small DATA frames in a row,
//! which hyper's body pipe sends when several uploads share the window Tomcat opens a little
//! at a time).
//!
//! * **200 KB POSTs over h2c, `-z 4s -c 16`** to a JSP that reads the body: the first
//!   connection's overlapping uploads fail (POSTs are not sent again, unless Tomcat's GOAWAY
//!   proved it did not process them), and teach the pool to send one body at a time per
//!   connection (`pool-h2/src/uploads.rs`). Check: failures only until the run settles (the
//!   first second with successes, no failure and no connection closed), at most `-c` of them
//!   per connection closed by then (one connection's worth for the lesson's), none after;
//!   every connection h2; the summary lists the origin under `uploads_one_at_a_time` (the
//!   pool did learn it); and every partition opened at least three connections (uploads
//!   spread, one per connection and at most one waiting). Before the pool learnt this, every
//!   upload of such a run failed (14 of 18,177 succeeded in 3 s at `-c 16`), as for h2load
//!   and curl.
//!
//! Tomcat runs from Debian's `tomcat10` (`CATALINA_HOME` `/usr/share/tomcat10`) with a
//! `CATALINA_BASE` of its own in the temp dir: a `server.xml` with one plain connector that
//! speaks h2c by prior knowledge, Debian's default `web.xml`, and the JSP. The JSP is compiled
//! by a request before the run. Without Tomcat (or Java) the check is one "skip" row.
//! `.ci/run` installs `tomcat10`.

use super::*;

/// The check, in table order.
const CHECKS: [&str; 1] = ["Tomcat h2c, 200 KB POSTs, -z 4s -c 16: one body at a time"];

/// Concurrent uploads in the run.
const CONCURRENCY: u64 = 16;

/// Where Debian's `tomcat10` keeps Tomcat (`bin/catalina.sh`, `lib/`) and its default
/// configuration (`etc/`).
const CATALINA_HOME: &str = "/usr/share/tomcat10";

/// One plain connector on `PORT` with HTTP/2 (h2c by prior knowledge, or by upgrade).
const SERVER_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector port="PORT" address="127.0.0.1" protocol="org.apache.coyote.http11.Http11NioProtocol" maxThreads="50">
      <UpgradeProtocol className="org.apache.coyote.http2.Http2Protocol" />
    </Connector>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false" />
    </Engine>
  </Service>
</Server>
"#;

/// Reads the whole request body and says how many bytes it read.
const READ_JSP: &str = "<%@ page contentType=\"text/plain\" %><% java.io.InputStream in = \
    request.getInputStream(); byte[] b = new byte[8192]; long n = 0; int r; \
    while ((r = in.read(b)) > 0) n += r; %>read <%= n %>\n";

/// The Tomcat check.
pub(crate) fn tomcat_checks(poolcurl: &Path, dir: &Path) -> Vec<Row> {
    let catalina = Path::new(CATALINA_HOME).join("bin/catalina.sh");
    if !catalina.is_file() || find_binary("java").is_none() {
        return vec![Row::skipped(
            "skipped: Tomcat".into(),
            Some("the Tomcat check needs Debian's tomcat10 and java"),
        )];
    }
    let [name] = announce(CHECKS);
    let (_server, port) = match start_tomcat(&catalina, dir) {
        Ok(started) => started,
        Err(e) => return vec![Row::broken(name, &e)],
    };
    let url = format!("http://127.0.0.1:{port}/read.jsp");
    let body = dir.join("post.bin");
    if let Err(e) = std::fs::write(&body, vec![b'x'; 200_000]) {
        return vec![Row::broken(name, &format!("write {}: {e}", body.display()))];
    }
    let data = format!("@{}", body.display());
    // One upload alone first, over HTTP/1.1: it compiles the JSP, and says Tomcat reads bodies.
    let mut warm = without_proxy_env(Command::new(poolcurl));
    warm.args(["-s", "--http1.1", "--data-binary", &data, &url]);
    match Running::start(warm).map(Running::finish) {
        Ok(done) if done.stdout.trim() == "read 200000" => {}
        Ok(done) => {
            let why = format!(
                "the JSP answered {:?} {:?}",
                done.stdout,
                done.stderr.trim()
            );
            return vec![Row::broken(name, &why)];
        }
        Err(e) => return vec![Row::broken(name, &e)],
    }
    let c = CONCURRENCY.to_string();
    let args = strings(&[
        "-z",
        "4s",
        "-c",
        &c,
        "--http2-prior-knowledge",
        "-X",
        "POST",
        "--data-binary",
        &data,
        &url,
    ]);
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let learnt = move |json: &Value| lesson_problems(json, port);
    vec![Row::judge_lesson(name, run, "h2", CONCURRENCY, &learnt)]
}

/// What the run's summary says against the lesson: it must list the Tomcat on `port` under
/// `uploads_one_at_a_time`, and every partition must have spread its uploads over at least
/// [`SPREAD`] connections (the lesson's own, then one upload and at most one waiting per
/// connection: with the uploads queued on one connection, as before, a partition opened two).
fn lesson_problems(json: &Value, port: u16) -> Vec<String> {
    let mut problems: Vec<String> = unlisted_lesson(json, "uploads_one_at_a_time", port)
        .into_iter()
        .collect();
    let opened: Vec<u64> = json
        .get("partitions")
        .and_then(Value::as_array)
        .map(|partitions| {
            partitions
                .iter()
                .map(|p| {
                    p.get("connections_opened")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                })
                .collect()
        })
        .unwrap_or_default();
    if opened.is_empty() || opened.iter().any(|&n| n < SPREAD) {
        problems.push(format!(
            "uploads not spread over connections: opened per partition {opened:?}, want >= {SPREAD}"
        ));
    }
    problems
}

/// Connections each partition must open at least: the lesson's, and two to spread its uploads.
const SPREAD: u64 = 3;

/// Writes the `CATALINA_BASE` into `dir`, starts Tomcat on a free port and waits until it
/// listens.
fn start_tomcat(catalina: &Path, dir: &Path) -> Result<(Server, u16), String> {
    let [port] = free_ports::<1>()?;
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))
    };
    for sub in ["conf", "logs", "temp", "work", "webapps/ROOT"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    }
    write(
        dir.join("conf/server.xml"),
        &SERVER_XML.replace("PORT", &port.to_string()),
    )?;
    let defaults = Path::new(CATALINA_HOME).join("etc/web.xml");
    std::fs::copy(&defaults, dir.join("conf/web.xml"))
        .map_err(|e| format!("copy {}: {e}", defaults.display()))?;
    write(dir.join("webapps/ROOT/read.jsp"), READ_JSP)?;
    let mut cmd = Command::new(catalina);
    cmd.arg("run")
        .env("CATALINA_HOME", CATALINA_HOME)
        .env("CATALINA_BASE", dir)
        .env("CATALINA_TMPDIR", dir.join("temp"));
    let log = dir.join("catalina.log");
    let mut server = Server::start("tomcat", cmd, log.clone(), &log)?;
    // `catalina.sh run` execs the JVM: a SIGTERM stops Tomcat cleanly.
    server.stop_with_sigterm();
    server.wait_ready(&[port])?;
    Ok((server, port))
}
