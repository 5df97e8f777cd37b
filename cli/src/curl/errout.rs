//! Where curl mode's diagnostics go: the process's stderr, or the file `--stderr FILE` names
//! (`-`: stdout), as curl redirects "all writes to stderr".
//!
//! The redirection is process-wide, as curl's is: `-v` traces, warnings, error messages,
//! usage errors found after the option and the `-#` bar all go through [`write()`]. `-w`'s
//! `%{stderr}` and its warning about an unknown variable do not: curl 7.88 writes those to the
//! process's stderr whatever `--stderr` says. The redirection is set while the command line is
//! prepared ([`redirect_from`]), before anything is printed that it should catch. Each file
//! named is created (or emptied) when the option is read and the last one is used; one that
//! cannot be created leaves stderr in place, as with curl.
//!
//! What this module does not do: catch panics' messages (those are Rust's, on stderr) or the
//! output of `poolcurl load` and `serve`, which are not curl.

use std::fs::File;
use std::io::{self, Write as _};
use std::sync::{Mutex, OnceLock};

use super::argv::{self, Kind};

/// The redirection, once `--stderr` was read; unset means the process's stderr.
static TARGET: OnceLock<Target> = OnceLock::new();

enum Target {
    Stdout,
    File(Mutex<File>),
}

/// Reads the `--stderr FILE`s of a prepared command line and redirects to the last one. Each
/// file is created (or emptied) as it is read, as curl opens each.
pub(crate) fn redirect_from(args: &[String], takes_value: &dyn Fn(&str) -> bool) {
    let mut target = None;
    for arg in argv::read(args.to_vec(), takes_value) {
        let Kind::Long {
            name,
            value: Some(path),
        } = arg.kind
        else {
            continue;
        };
        if name != "stderr" {
            continue;
        }
        target = match path.as_str() {
            "-" => Some(Target::Stdout),
            path => File::create(path)
                .ok()
                .map(|file| Target::File(Mutex::new(file))),
        };
    }
    if let Some(target) = target {
        let _ = TARGET.set(target);
    }
}

/// Writes `bytes` where diagnostics go; a closed stream is not worth failing a transfer for.
pub(crate) fn write(bytes: &[u8]) {
    let _ = match TARGET.get() {
        None => io::stderr().lock().write_all(bytes),
        Some(Target::Stdout) => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Some(Target::File(file)) => match file.lock() {
            Ok(mut file) => file.write_all(bytes),
            Err(_) => Ok(()),
        },
    };
}

/// Writes `line` and a newline where diagnostics go, in one write.
pub(crate) fn line(line: &str) {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    write(text.as_bytes());
}
