//! HTTP/2 against Node.js's server (`node:http2`), which sheds load it never announces as a
//! limit: while the memory a session holds is over `maxSessionMemory` (10 MB by default) it
//! resets every new stream with `ENHANCE_YOUR_CALM`, and the queued bodies of a few large
//! responses are that much.
//!
//! * **2 MB downloads, `-z 4s -c 32`** over TLS with ALPN h2: every request must succeed, and
//!   the server must have shed load (`enhance_your_calm` re-sends above 0, or the check proved
//!   nothing). The pool re-sends the refused requests (they are GETs) and opens only as many
//!   streams on a connection as the server took; before it did, about half of these requests
//!   failed, as for h2load.
//!
//! Node runs a script written into the temp dir, with nginx's test certificate. Without
//! `node` the check is one "skip" row. `.ci/run` installs Debian's `nodejs`.

use super::*;

/// The check, in table order.
const CHECKS: [&str; 1] = ["Node.js http2 TLS ALPN h2, 2 MB bodies, -z 4s -c 32: sheds load"];

/// Answers every request with 2 MB once its body is read.
const SERVER: &str = r#"
const http2 = require('http2');
const fs = require('fs');
const [key, cert, port] = process.argv.slice(2);
const body = Buffer.alloc(2000000, 120);
http2.createSecureServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-length': body.length });
    res.end(body);
  });
}).listen(Number(port), '127.0.0.1');
"#;

/// The Node.js check; `certs` is the directory holding nginx's `ca.pem`, `server.pem` and
/// `server.key`.
pub(crate) fn node_checks(poolcurl: &Path, certs: &Path, dir: &Path) -> Vec<Row> {
    let Some(node) = find_binary("node").or_else(|| find_binary("nodejs")) else {
        return vec![Row::skipped(
            "skipped: Node.js".into(),
            Some("the Node.js checks need node"),
        )];
    };
    let [name] = announce(CHECKS);
    let (_server, port) = match start_node(&node, certs, dir) {
        Ok(started) => started,
        Err(e) => return vec![Row::broken(name, &e)],
    };
    let mut args = strings(&["-z", "4s", "-c", "32"]);
    args.extend(tls_h2_target(port, certs));
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    match calmed(&run) {
        Some(0) => problems.push("no enhance_your_calm re-send: the server never shed load".into()),
        Some(_) => {}
        None => problems.push("no `enhance_your_calm` count in the summary".into()),
    }
    vec![Row::judge(name, run, None, "h2", problems)]
}

/// The requests a run re-sent after the server reset their stream with `ENHANCE_YOUR_CALM`.
fn calmed(run: &Result<Finished, String>) -> Option<u64> {
    let json: serde_json::Value = serde_json::from_str(&run.as_ref().ok()?.stdout).ok()?;
    json.pointer("/connections/resends/enhance_your_calm")?
        .as_u64()
}

/// Writes the script into `dir`, starts it on a free port and waits until it listens.
fn start_node(node: &Path, certs: &Path, dir: &Path) -> Result<(Server, u16), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let script = dir.join("server.js");
    std::fs::write(&script, SERVER).map_err(|e| format!("write {}: {e}", script.display()))?;
    let [port] = free_ports::<1>()?;
    let mut cmd = Command::new(node);
    cmd.arg(&script)
        .arg(certs.join("server.key"))
        .arg(certs.join("server.pem"))
        .arg(port.to_string());
    let log = dir.join("node.log");
    let mut server = Server::start("node", cmd, log.clone(), &log)?;
    server.wait_ready(&[port])?;
    Ok((server, port))
}
