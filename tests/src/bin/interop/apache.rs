//! `--digest` and `--proxy-digest` beside curl against Apache httpd with `mod_auth_digest`:
//! HTTP Digest authentication checked by a server nobody here wrote, as the origin and as a
//! proxy.
//!
//! One httpd in the foreground (`apache2 -f CONF -DFOREGROUND`), its config, log, password
//! file and documents in the temp dir, on two ports: the first serves `/secret/`, protected by
//! Digest for the user `alice`, and `/open.txt`; the second is a forward and `CONNECT` proxy
//! (`mod_proxy`, `mod_proxy_http`, `mod_proxy_connect`) that asks the same user for Digest
//! proxy authentication, in front of the first. Each row runs curl and poolcurl on the same
//! command line and wants the same stdout and exit code: the right password on two URLs (the
//! second challenged anew on the reused connection, as curl does) and a wrong one (httpd's
//! `401`); through the proxy, two URLs forwarded and two through a `CONNECT` tunnel (`-p`,
//! `--proxy-anyauth`), and a wrong password, forwarded (the `407` is the response) and
//! tunnelled (exit 56); and `poolcurl load` through Digest tunnels, where httpd's log (the
//! proxy's `CustomLog`) must show one challenge and one tunnel per connection the pool opened.
//!
//! Without httpd (`apache2` or `httpd`) with `mod_auth_digest` and the proxy modules, or
//! without curl, the checks are one "skip" row. `.ci/run` installs Debian's `apache2-bin`.

use super::*;

/// The realm and the password file's line for `alice` with the password `s3cret`: the hash is
/// MD5 of `alice:interop:s3cret` (`printf 'alice:interop:s3cret' | md5sum`), the format of
/// httpd's `htdigest`.
const REALM: &str = "interop";
const HTDIGEST: &str = "alice:interop:8dec95327f9b9f2bb41f27f5190f1816\n";

/// Where Debian and Fedora keep httpd's modules.
pub(crate) const MODULE_DIRS: [&str; 2] = ["/usr/lib/apache2/modules", "/usr/lib64/httpd/modules"];

/// The checks, in table order.
const CHECKS: [&str; 7] = [
    "curl vs poolcurl --digest to Apache httpd, 2 URLs",
    "curl vs poolcurl --digest to Apache httpd, wrong password",
    "curl vs poolcurl --proxy-digest, httpd forward proxy, 2 URLs",
    "curl vs poolcurl -p --proxy-anyauth, httpd CONNECT, 2 URLs",
    "curl vs poolcurl --proxy-digest, httpd forward proxy, wrong password",
    "curl vs poolcurl -p --proxy-digest, httpd CONNECT, wrong password",
    "poolcurl load -p --proxy-digest through httpd, -n 400 -c 8",
];

/// The modules httpd loads, with their files.
const MODULES: [(&str, &str); 9] = [
    ("mpm_event", "mod_mpm_event"),
    ("authz_core", "mod_authz_core"),
    ("authz_user", "mod_authz_user"),
    ("authn_core", "mod_authn_core"),
    ("authn_file", "mod_authn_file"),
    ("auth_digest", "mod_auth_digest"),
    ("proxy", "mod_proxy"),
    ("proxy_http", "mod_proxy_http"),
    ("proxy_connect", "mod_proxy_connect"),
];

pub(crate) fn apache_digest(poolcurl: &Path, dir: &Path) -> Vec<Row> {
    let httpd = find_binary("apache2").or_else(|| find_binary("httpd"));
    let modules = MODULE_DIRS.iter().map(PathBuf::from).find(|d| {
        MODULES
            .iter()
            .all(|(_, file)| d.join(format!("{file}.so")).is_file())
    });
    let (Some(httpd), Some(modules), Some(curl)) = (httpd, modules, find_binary("curl")) else {
        return vec![Row::skipped(
            "skipped: Apache httpd with mod_auth_digest, or curl".into(),
            Some("the Digest checks need apache2 (or httpd) with its proxy modules, and curl"),
        )];
    };
    let names = announce(CHECKS);
    let (_server, port, proxy_port) = match start_httpd(&httpd, &modules, dir) {
        Ok(started) => started,
        Err(e) => return names.map(|name| Row::broken(name, &e)).into(),
    };
    let [
        right,
        wrong,
        forward,
        tunnel,
        forward_wrong,
        tunnel_wrong,
        load,
    ] = names;
    let url = format!("http://127.0.0.1:{port}/secret/index.txt");
    let two = [
        "-s",
        "--digest",
        "-u",
        "alice:s3cret",
        "-w",
        " %{http_code} %{num_connects}",
        &url,
        &url,
    ];
    let refused = [
        "-s",
        "--digest",
        "-u",
        "alice:wrong",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &url,
    ];
    let open = format!("http://127.0.0.1:{port}/open.txt");
    let proxy = format!("http://127.0.0.1:{proxy_port}");
    let through = |flags: &[&'static str], user: &'static str, write: &'static str| {
        let mut args: Vec<&str> = vec!["-s", "-x", &proxy, "-U", user, "-w", write];
        args.extend_from_slice(flags);
        args
    };
    let mut forwarded = through(
        &["--proxy-digest"],
        "alice:s3cret",
        " %{http_code} %{num_connects}",
    );
    forwarded.extend([open.as_str(), &open]);
    let mut tunnelled = through(
        &["-p", "--proxy-anyauth"],
        "alice:s3cret",
        " %{http_code} %{http_connect} %{num_connects}",
    );
    tunnelled.extend([open.as_str(), &open]);
    let mut forwarded_wrong = through(
        &["--proxy-digest", "-o", "/dev/null"],
        "alice:wrong",
        "%{http_code}",
    );
    forwarded_wrong.push(&open);
    let mut tunnelled_wrong = through(&["-p", "--proxy-digest"], "alice:wrong", "%{http_connect}");
    tunnelled_wrong.push(&open);
    vec![
        beside_curl(right, &curl, poolcurl, &two),
        beside_curl(wrong, &curl, poolcurl, &refused),
        beside_curl(forward, &curl, poolcurl, &forwarded),
        beside_curl(tunnel, &curl, poolcurl, &tunnelled),
        beside_curl(forward_wrong, &curl, poolcurl, &forwarded_wrong),
        beside_curl_exiting(tunnel_wrong, &curl, poolcurl, &tunnelled_wrong, 56),
        load_through_digest_tunnels(load, poolcurl, dir, (&proxy, port), &open),
    ]
}

/// `poolcurl load` through httpd's `CONNECT` with Digest: every request answered, and httpd's
/// log shows one challenge (`407`) and one opened tunnel (`200`) per connection the pool
/// opened: the pool answers each tunnel's challenge once, on the connection it came on.
fn load_through_digest_tunnels(
    check: String,
    poolcurl: &Path,
    dir: &Path,
    (proxy, port): (&str, u16),
    url: &str,
) -> Row {
    let log = dir.join("proxy.log");
    let count = |status: &str| {
        let line = format!("CONNECT 127.0.0.1:{port} HTTP/1.1 {status}");
        std::fs::read_to_string(&log).map_or(0, |text| text.lines().filter(|l| *l == line).count())
    };
    let (challenged, opened) = (count("407"), count("200"));
    let args: Vec<String> = [
        "-p",
        "--proxy-digest",
        "-U",
        "alice:s3cret",
        "-x",
        proxy,
        "--http1.1",
        "-n",
        "400",
        "-c",
        "8",
        url,
    ]
    .map(String::from)
    .into();
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let connections = run
        .as_ref()
        .ok()
        .and_then(|r| serde_json::from_str::<Value>(&r.stdout).ok())
        .and_then(|json| json.pointer("/connections/opened").and_then(Value::as_u64))
        .unwrap_or(0);
    let connections = usize::try_from(connections).unwrap_or(usize::MAX);
    // httpd logs a tunnel's `200` when the tunnel closes, which is as poolcurl exits: wait
    // (bounded) for the log to show them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while count("200") - opened < connections && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20)); // poll interval
    }
    let (challenged, opened) = (count("407") - challenged, count("200") - opened);
    let mut problems = Vec::new();
    if connections == 0 || challenged != connections || opened != connections {
        problems.push(format!(
            "httpd logged {challenged} challenge(s) and {opened} tunnel(s) for {connections} connection(s)"
        ));
    }
    let mut row = Row::judge(check, run, Some(400), "h1", problems);
    row.details.push(format!(
        "httpd logged {challenged} challenge(s) and {opened} tunnel(s) for {connections} connection(s)"
    ));
    row
}

/// The lines every httpd config here starts with: `User` and `Group` when running as root
/// (httpd hands its workers to them; `nobody` can read the temp dir's files), and a
/// `LoadModule` line for each of `modules` (name, file) in the directory `dir`.
pub(crate) fn httpd_preamble(dir: &Path, modules: &[(&str, &str)]) -> String {
    let user = if running_as_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    let m = dir.display();
    let load: String = modules
        .iter()
        .map(|(module, file)| format!("LoadModule {module}_module {m}/{file}.so\n"))
        .collect();
    format!("{user}{load}")
}

/// Writes the documents, the password file and `httpd.conf` into `dir`, starts httpd in the
/// foreground and waits until it listens. Returns the server (stopped on drop with `-k stop`,
/// so its workers go too), its port and its proxy's port.
fn start_httpd(httpd: &Path, modules: &Path, dir: &Path) -> Result<(Server, u16, u16), String> {
    let docs = dir.join("htdocs/secret");
    std::fs::create_dir_all(&docs).map_err(|e| format!("create {}: {e}", docs.display()))?;
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))
    };
    write(docs.join("index.txt"), "digest ok\n")?;
    write(dir.join("htdocs/open.txt"), "open ok\n")?;
    write(dir.join("htdigest"), HTDIGEST)?;
    let [port, proxy_port] = free_ports::<2>()?;
    let preamble = httpd_preamble(modules, &MODULES);
    let (d, m) = (dir.display(), modules.display());
    // The proxy asks for the same user with Digest, and may open tunnels to the first port only.
    let guard = format!(
        "AuthType Digest\n    AuthName \"{REALM}\"\n    AuthDigestProvider file\n    \
         AuthUserFile {d}/htdigest\n    Require valid-user\n"
    );
    // Each proxied request line with its status, for the load check (mod_log_config is built
    // into Debian's httpd and a module elsewhere).
    let proxy = format!(
        "<IfModule !log_config_module>\n  LoadModule log_config_module {m}/mod_log_config.so\n\
         </IfModule>\n<VirtualHost 127.0.0.1:{proxy_port}>\n  ProxyRequests On\n  \
         AllowCONNECT {port}\n  CustomLog {d}/proxy.log \"%r %>s\"\n  \
         <Proxy \"*\">\n    {guard}  </Proxy>\n</VirtualHost>\n"
    );
    let conf = format!(
        "ServerRoot {d}\nServerName localhost\nListen 127.0.0.1:{port}\n\
         Listen 127.0.0.1:{proxy_port}\nPidFile {d}/httpd.pid\n\
         ErrorLog {d}/error.log\n{preamble}DocumentRoot {d}/htdocs\n\
         <Location /secret>\n  AuthType Digest\n  AuthName \"{REALM}\"\n\
         AuthDigestProvider file\n  AuthUserFile {d}/htdigest\n  Require valid-user\n\
         </Location>\n{proxy}"
    );
    let (server, _) = run_httpd(httpd, dir, &conf, &[port, proxy_port])?;
    Ok((server, port, proxy_port))
}

/// Writes `conf` to `dir/httpd.conf`, starts httpd on it in the foreground (its error log
/// `dir/error.log`, as every config here says) and waits until it listens on `ports`. Returns
/// the server, stopped on drop with `-k stop` so its workers go too, and the config's path.
pub(crate) fn run_httpd(
    httpd: &Path,
    dir: &Path,
    conf: &str,
    ports: &[u16],
) -> Result<(Server, PathBuf), String> {
    let conf_path = dir.join("httpd.conf");
    std::fs::write(&conf_path, conf).map_err(|e| format!("write {}: {e}", conf_path.display()))?;
    let mut cmd = Command::new(httpd);
    cmd.arg("-f").arg(&conf_path).arg("-DFOREGROUND");
    let mut server = Server::start("httpd", cmd, dir.join("error.log"), &dir.join("stderr.log"))?;
    let mut stop = Command::new(httpd);
    stop.arg("-f").arg(&conf_path).args(["-k", "stop"]);
    server.stop = Some(stop);
    server.wait_ready(ports)?;
    Ok((server, conf_path))
}
