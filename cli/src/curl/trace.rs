//! `--trace FILE` and `--trace-ascii FILE`: everything `-v` shows, plus the bytes of each
//! request and response, written to a file (`-`: stdout, `%`: stderr) in curl's layout.
//!
//! ```text
//! == Info:   Trying 127.0.0.1:8080...
//! == Info: Connected to 127.0.0.1 (127.0.0.1) port 8080 (partition anonymous, connection #1)
//! => Send header, 78 bytes (0x4e)
//! 0000: GET / HTTP/1.1
//! 0010: Host: 127.0.0.1:8080
//! ...
//! <= Recv header, 17 bytes (0x11)
//! 0000: HTTP/1.1 200 OK
//! <= Recv data, 5 bytes (0x5)
//! 0000: hello
//! ```
//!
//! Each block names what moved and its length, then dumps it: `--trace` as 16 bytes a line in
//! hex beside their characters, `--trace-ascii` as up to 64 characters a line, a new line at
//! each CRLF (which is not shown). Bytes outside printable ASCII show as `.`. The request head
//! is one block, each response header line is one, as curl 7.88 writes them; `--trace-time`
//! stamps the blocks' first lines.
//!
//! The trace is process-wide, as curl's is (both options are global): the last of `-v`,
//! `--trace` and `--trace-ascii` on the command line wins. The file is created at the first
//! line written, so a command line refused before any transfer leaves none; one that cannot
//! be created sends the trace to stderr, as curl does.
//!
//! What this does not show, unlike curl: the TLS records (`Send SSL data`; rustls does not
//! expose them), and a chunked body's framing (hyper hands over the data without it, so `Recv
//! data` blocks are the data as read, and their sizes follow hyper's reads, not curl's).

use std::fs::File;
use std::io::{self, Write as _};
use std::sync::{Mutex, OnceLock};

/// How a trace dumps bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `--trace`: hex and characters, 16 bytes a line.
    Hex,
    /// `--trace-ascii`: characters only, 64 a line, a line per CRLF.
    Ascii,
}

impl Style {
    /// Bytes on one dump line at most.
    fn width(self) -> usize {
        match self {
            Style::Hex => 16,
            Style::Ascii => 64,
        }
    }
}

/// The trace of this process: its style and where it goes.
#[derive(Debug)]
pub(crate) struct Trace {
    pub(crate) style: Style,
    /// The path as given (`-`, `%` or a file).
    path: String,
    /// The file, opened at the first write.
    file: OnceLock<Option<Mutex<File>>>,
}

static TRACE: OnceLock<Trace> = OnceLock::new();

/// Sets the process's trace (the first call wins: every group of a command line has the same
/// global options).
pub(crate) fn configure(style: Style, path: &str) {
    let _ = TRACE.set(Trace {
        style,
        path: path.to_owned(),
        file: OnceLock::new(),
    });
}

/// The process's trace, if `--trace` or `--trace-ascii` set one.
pub(crate) fn get() -> Option<&'static Trace> {
    TRACE.get()
}

impl Trace {
    /// Writes `text` to the trace in one write; a stream that fails is not worth failing a
    /// transfer for.
    pub(crate) fn write(&self, text: &str) {
        let bytes = text.as_bytes();
        match self.path.as_str() {
            "-" => {
                // The body may go to stdout too: through the same handle, in order.
                let _ = io::stdout().lock().write_all(bytes);
            }
            "%" => super::errout::write(bytes),
            path => match self
                .file
                .get_or_init(|| File::create(path).ok().map(Mutex::new))
            {
                Some(file) => {
                    if let Ok(mut file) = file.lock() {
                        let _ = file.write_all(bytes);
                    }
                }
                None => super::errout::write(bytes),
            },
        }
    }
}

/// Appends one block to `out`: `stamp`, `title` (`=> Send header` ...) with the length, then
/// `bytes` dumped in `style`.
pub(crate) fn dump(out: &mut String, style: Style, stamp: &str, title: &str, bytes: &[u8]) {
    let len = bytes.len();
    out.push_str(&format!("{stamp}{title}, {len} bytes ({len:#x})\n"));
    let mut at = 0;
    while at < len {
        out.push_str(&format!("{at:04x}: "));
        let line = &bytes[at..len.min(at + style.width())];
        at += match style {
            Style::Hex => {
                for byte in line {
                    out.push_str(&format!("{byte:02x} "));
                }
                out.push_str(&"   ".repeat(style.width() - line.len()));
                push_shown(out, line);
                line.len()
            }
            Style::Ascii => {
                let (shown, consumed) = ascii_line(&bytes[at..]);
                push_shown(out, shown);
                consumed
            }
        };
        out.push('\n');
    }
}

/// One `--trace-ascii` line from the start of `rest`: the characters shown (up to 64, up to a
/// CRLF) and how many bytes the line takes, a CRLF right after them included.
fn ascii_line(rest: &[u8]) -> (&[u8], usize) {
    let width = Style::Ascii.width();
    let crlf = |i: usize| rest.get(i) == Some(&b'\r') && rest.get(i + 1) == Some(&b'\n');
    let end = (0..rest.len().min(width))
        .find(|&i| crlf(i))
        .unwrap_or(rest.len().min(width));
    // A CRLF that ends the line (within it, or just past a full one) is consumed with it.
    let consumed = if crlf(end) { end + 2 } else { end };
    (&rest[..end], consumed)
}

/// Appends `bytes` as characters, `.` for anything outside printable ASCII.
fn push_shown(out: &mut String, bytes: &[u8]) {
    out.extend(bytes.iter().map(|&b| {
        if (0x20..0x80).contains(&b) {
            char::from(b)
        } else {
            '.'
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumped(style: Style, bytes: &[u8]) -> String {
        let mut out = String::new();
        dump(&mut out, style, "", "=> Send header", bytes);
        out
    }

    #[test]
    fn ascii_breaks_at_each_crlf_and_shows_the_blank_line() {
        let head = b"GET / HTTP/1.1\r\nHost: a:1\r\n\r\n";
        assert_eq!(
            dumped(Style::Ascii, head),
            "=> Send header, 29 bytes (0x1d)\n\
             0000: GET / HTTP/1.1\n\
             0010: Host: a:1\n\
             001b: \n"
        );
    }

    #[test]
    fn ascii_wraps_at_64_and_takes_a_crlf_right_after_a_full_line() {
        let mut bytes = vec![b'a'; 64];
        bytes.extend_from_slice(b"\r\nb");
        let out = dumped(Style::Ascii, &bytes);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], format!("0000: {}", "a".repeat(64)));
        assert_eq!(lines[2], "0042: b");
        assert_eq!(lines.len(), 3);
        // Without a CRLF, a long run wraps at 64 and the offsets count every byte.
        let out = dumped(Style::Ascii, &[b'x'; 70]);
        assert_eq!(out.lines().nth(2), Some("0040: xxxxxx"));
    }

    #[test]
    fn ascii_shows_a_lone_cr_or_lf_and_other_bytes_as_dots() {
        let out = dumped(Style::Ascii, b"a\nb\rc\xff\x00");
        assert_eq!(out.lines().nth(1), Some("0000: a.b.c.."));
    }

    #[test]
    fn hex_shows_16_bytes_a_line_padded_beside_their_characters() {
        let out = dumped(Style::Hex, b"POST /echo HTTP/1.1\r\n");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "=> Send header, 21 bytes (0x15)");
        assert_eq!(
            lines[1],
            "0000: 50 4f 53 54 20 2f 65 63 68 6f 20 48 54 54 50 2f POST /echo HTTP/"
        );
        assert_eq!(
            lines[2],
            format!("0010: 31 2e 31 0d 0a {}1.1..", "   ".repeat(11))
        );
    }

    #[test]
    fn an_empty_block_has_its_title_only() {
        assert_eq!(dumped(Style::Hex, b""), "=> Send header, 0 bytes (0x0)\n");
    }
}
