//! `--digest` beside curl against Apache httpd with `mod_auth_digest`: HTTP Digest
//! authentication checked by a server nobody here wrote.
//!
//! One httpd in the foreground (`apache2 -f CONF -DFOREGROUND`), its config, log, password
//! file and document in the temp dir: `/secret/` is protected by Digest for the user `alice`.
//! Two rows, each curl and poolcurl on the same command line with the same stdout and exit
//! code: the right password on two URLs (the second challenged anew on the reused
//! connection, as curl does), and a wrong one (httpd's `401`).
//!
//! Without httpd (`apache2` or `httpd`) with `mod_auth_digest`, or without curl, the checks are
//! one "skip" row. `.ci/run` installs Debian's `apache2-bin`.

use super::*;

/// The realm and the password file's line for `alice` with the password `s3cret`: the hash is
/// MD5 of `alice:interop:s3cret` (`printf 'alice:interop:s3cret' | md5sum`), the format of
/// httpd's `htdigest`.
const REALM: &str = "interop";
const HTDIGEST: &str = "alice:interop:8dec95327f9b9f2bb41f27f5190f1816\n";

/// Where Debian and Fedora keep httpd's modules.
const MODULE_DIRS: [&str; 2] = ["/usr/lib/apache2/modules", "/usr/lib64/httpd/modules"];

/// The checks, in table order.
const CHECKS: [&str; 2] = [
    "curl vs poolcurl --digest to Apache httpd, 2 URLs",
    "curl vs poolcurl --digest to Apache httpd, wrong password",
];

pub(crate) fn apache_digest(poolcurl: &Path, dir: &Path) -> Vec<Row> {
    let httpd = find_binary("apache2").or_else(|| find_binary("httpd"));
    let modules = MODULE_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("mod_auth_digest.so").is_file());
    let (Some(httpd), Some(modules), Some(curl)) = (httpd, modules, find_binary("curl")) else {
        return vec![Row::skipped(
            "skipped: Apache httpd with mod_auth_digest, or curl".into(),
            Some("the Digest checks need apache2 (or httpd) and curl"),
        )];
    };
    let names = announce(CHECKS);
    let [right, wrong] = names;
    let (_server, port) = match start_httpd(&httpd, &modules, dir) {
        Ok(started) => started,
        Err(e) => return vec![Row::broken(right, &e), Row::broken(wrong, &e)],
    };
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
    vec![
        beside_curl(right, &curl, poolcurl, &two),
        beside_curl(wrong, &curl, poolcurl, &refused),
    ]
}

/// Writes the document, the password file and `httpd.conf` into `dir`, starts httpd in the
/// foreground and waits until it listens. Returns the server (stopped on drop with `-k stop`,
/// so its workers go too) and its port.
fn start_httpd(httpd: &Path, modules: &Path, dir: &Path) -> Result<(Server, u16), String> {
    let docs = dir.join("htdocs/secret");
    std::fs::create_dir_all(&docs).map_err(|e| format!("create {}: {e}", docs.display()))?;
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))
    };
    write(docs.join("index.txt"), "digest ok\n")?;
    write(dir.join("htdigest"), HTDIGEST)?;
    let [port] = free_ports::<1>()?;
    // As root httpd hands its workers to `User`; `nobody` can read the temp dir's files.
    let user = if running_as_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    let (d, m) = (dir.display(), modules.display());
    let load: String = [
        ("mpm_event", "mod_mpm_event"),
        ("authz_core", "mod_authz_core"),
        ("authz_user", "mod_authz_user"),
        ("authn_core", "mod_authn_core"),
        ("authn_file", "mod_authn_file"),
        ("auth_digest", "mod_auth_digest"),
    ]
    .map(|(module, file)| format!("LoadModule {module}_module {m}/{file}.so\n"))
    .concat();
    let conf = format!(
        "ServerRoot {d}\nServerName localhost\nListen 127.0.0.1:{port}\nPidFile {d}/httpd.pid\n\
         ErrorLog {d}/error.log\n{user}{load}DocumentRoot {d}/htdocs\n\
         <Location /secret>\n  AuthType Digest\n  AuthName \"{REALM}\"\n\
         AuthDigestProvider file\n  AuthUserFile {d}/htdigest\n  Require valid-user\n\
         </Location>\n"
    );
    let conf_path = dir.join("httpd.conf");
    write(conf_path.clone(), &conf)?;
    let mut cmd = Command::new(httpd);
    cmd.arg("-f").arg(&conf_path).arg("-DFOREGROUND");
    let mut server = Server::start("httpd", cmd, dir.join("error.log"), &dir.join("stderr.log"))?;
    let mut stop = Command::new(httpd);
    stop.arg("-f").arg(&conf_path).args(["-k", "stop"]);
    server.stop = Some(stop);
    server.wait_ready(&[port])?;
    Ok((server, port))
}
