//! `-u USER` and `-U USER` without a password: curl asks for it before the first transfer.
//!
//! As curl 7.88's `checkpasswd` and `getpass_r`: for each `--next` group whose `-u` (unless
//! `--oauth2-bearer` is given) or `-U` holds no `:`, curl prints `Enter host password for user
//! 'USER':` (`proxy` for `-U`; `... on URL #N:` when the command line has several groups) on
//! stderr, even under `-s`, and reads one answer from the terminal (`/dev/tty`) with its echo
//! off, or from stdin when there is no terminal. It reads once, at most 2,048 bytes, and drops
//! the answer's last byte (the Enter it expects), so `echo secret | curl -u bob URL` sends
//! `bob:secret`. A newline ends the prompt's line once the answer is read. A login
//! option after the user (`-u 'bob;auth=NTLM'`) stays where it was: the password joins the
//! whole text (`bob;auth=NTLM:secret`), and a `-u` that starts with `;` asks for nothing.
//!
//! Reading stdin shares it with `-d @-` and `-T -`, as in curl: the answer is the first read,
//! taken with one `read(2)` so that nothing beyond it is buffered away from them.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;

use rustix::termios::{self, LocalModes, OptionalActions};

use super::args::CurlArgs;

/// curl's buffer for the answer.
const MAX_ANSWER: usize = 2048;

/// Asks for the missing password of every group's `-u` and `-U`, in order, and completes them
/// (`USER:PASSWORD`).
pub(crate) fn complete(groups: &mut [(CurlArgs, clap::ArgMatches)]) {
    let several = groups.len() > 1;
    for (index, (args, _)) in groups.iter_mut().enumerate() {
        let url = several.then_some(index + 1);
        if args.send.oauth2_bearer.is_none() {
            if let Some(user) = &mut args.send.user {
                ask_if_missing("host", user, url);
            }
        }
        if let Some(user) = &mut args.connect.proxy_user {
            ask_if_missing("proxy", user, url);
        }
    }
}

/// Completes `login` with an answer when it has no password (see the module docs).
fn ask_if_missing(kind: &str, login: &mut String, url: Option<usize>) {
    if login.contains(':') || login.starts_with(';') {
        return;
    }
    let user = login.split(';').next().unwrap_or_default();
    let prompt = match url {
        None => format!("Enter {kind} password for user '{user}':"),
        Some(number) => format!("Enter {kind} password for user '{user}' on URL #{number}:"),
    };
    let answer = read_answer(&prompt);
    login.push(':');
    login.push_str(&answer);
}

/// Prints `prompt` and reads one answer: from the terminal with its echo off, or from stdin.
fn read_answer(prompt: &str) -> String {
    let tty = File::open("/dev/tty").ok();
    let stdin = std::io::stdin();
    let fd = match &tty {
        Some(tty) => tty.as_fd(),
        None => stdin.as_fd(),
    };
    let echoing = termios::tcgetattr(fd).ok().filter(|_| termios::isatty(fd));
    let silenced = echoing.as_ref().is_some_and(|saved| {
        let mut quiet = saved.clone();
        quiet.local_modes -= LocalModes::ECHO;
        termios::tcsetattr(fd, OptionalActions::Now, &quiet).is_ok()
    });
    let mut stderr = std::io::stderr();
    let _ = stderr.write_all(prompt.as_bytes());
    let _ = stderr.flush();
    let mut buf = [0u8; MAX_ANSWER];
    let read = rustix::io::read(fd, &mut buf).unwrap_or(0);
    // curl ends the prompt's line whether or not there was an echo to turn off (its `ttyecho`
    // reports success without checking).
    let _ = stderr.write_all(b"\n");
    if let (true, Some(saved)) = (silenced, &echoing) {
        let _ = termios::tcsetattr(fd, OptionalActions::Now, saved);
    }
    answer_of(&buf[..read])
}

/// The answer in what was read: all but its last byte (the Enter), as curl takes it.
fn answer_of(read: &[u8]) -> String {
    let kept = read.len().saturating_sub(1);
    String::from_utf8_lossy(&read[..kept]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_drops_its_last_byte_as_curl_does() {
        assert_eq!(answer_of(b"secret\n"), "secret");
        assert_eq!(answer_of(b"secret"), "secre");
        assert_eq!(answer_of(b""), "");
        assert_eq!(answer_of(b"two\nlines\n"), "two\nlines");
    }
}
