//! Where a transfer's bytes go: stdout or a file (`-o`, `-O`, `-D`), written unmodified.
//!
//! A file is created on the first write (or at [`Sink::finish`] for an empty body), so a
//! transfer refused by `-f` leaves no file behind, as with curl. `--create-dirs` creates the
//! missing directories of the path first; `-C` appends instead of truncating. Before a retry,
//! [`Sink::reset`] empties what a failed attempt wrote to a file (stdout cannot be taken back).
//! `-N` flushes stdout after every write.
//!
//! What this does not do: decode bodies (see [`super::decode`]).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use super::exit::{CurlError, Note, strerror};

/// How a file sink opens its file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FileMode {
    /// Append to an existing file (`-C`) instead of truncating it.
    pub(crate) append: bool,
    /// Create missing parent directories (`--create-dirs`).
    pub(crate) create_dirs: bool,
    /// Never overwrite: take the first free name of `NAME`, `NAME.1` ... `NAME.100`
    /// (`--no-clobber`; not with `append`).
    pub(crate) no_clobber: bool,
    /// Create the file only if it does not exist yet (a name the server chose, `-J`).
    pub(crate) must_be_new: bool,
}

/// Writes a response head to the `-D` sink and to the output (`-i`, `-I`), either of which may
/// be absent. curl hands each header line to both in turn, so when both are stdout each line
/// comes twice, one after the other, rather than the whole head twice.
///
/// # Errors
///
/// As [`Sink::write`].
pub(crate) fn write_head(
    dump: Option<&mut Sink>,
    output: Option<&mut Sink>,
    head: &[u8],
) -> Result<(), CurlError> {
    match (dump, output) {
        (Some(dump), Some(output)) if dump.path.is_none() && output.path.is_none() => {
            for line in head.split_inclusive(|&b| b == b'\n') {
                dump.write(line)?;
                output.write(line)?;
            }
        }
        (dump, output) => {
            for sink in [dump, output].into_iter().flatten() {
                sink.write(head)?;
            }
        }
    }
    Ok(())
}

/// How many numbered names `--no-clobber` tries after the name itself, as curl does.
const CLOBBER_TRIES: u32 = 100;

/// Where one transfer's output goes.
#[derive(Debug)]
pub(crate) struct Sink {
    /// The file, or `None` for stdout.
    path: Option<PathBuf>,
    /// How the file is opened.
    mode: FileMode,
    /// The file, once something was written.
    file: Option<BufWriter<File>>,
    /// Flush after every write (`-N`; the `-D` file, as curl flushes it after each header).
    flush_each: bool,
    /// `-O -J`: the response may rename the file ([`Sink::name_from_response`]).
    server_named: bool,
    /// Whether a response did rename it (then a retry's response does not again).
    renamed: bool,
    /// `-O -J` on a URL without a file name: `path` is the directory, and only a response's
    /// name makes it a file.
    nameless: bool,
    /// Stdout is a terminal and `-o -` did not ask for it: a body that starts with binary
    /// bytes is refused ([`Sink::write_body`]).
    guards_terminal: bool,
    /// Bytes written so far.
    written: u64,
}

impl Sink {
    /// Output to stdout.
    pub(crate) fn stdout() -> Sink {
        Sink {
            path: None,
            mode: FileMode::default(),
            file: None,
            flush_each: false,
            server_named: false,
            renamed: false,
            nameless: false,
            guards_terminal: false,
            written: 0,
        }
    }

    /// Output to `path` (`-` is stdout, as in curl).
    pub(crate) fn file(path: PathBuf, mode: FileMode) -> Sink {
        if path.as_os_str() == "-" {
            return Sink::stdout();
        }
        Sink {
            path: Some(path),
            mode,
            ..Sink::stdout()
        }
    }

    /// Stdout that refuses a binary body when it is a terminal, as curl's does unless `-o -`
    /// asked for stdout.
    pub(crate) fn terminal() -> Sink {
        Sink {
            guards_terminal: stdout_is_terminal(),
            ..Sink::stdout()
        }
    }

    /// Whether this writes to stdout and stdout is a terminal (then no progress meter is
    /// drawn, as in curl).
    pub(crate) fn to_terminal(&self) -> bool {
        self.path.is_none() && stdout_is_terminal()
    }

    /// Flushes after every write (`-N`, and the `-D` file).
    pub(crate) fn flush_each_write(mut self, enabled: bool) -> Sink {
        self.flush_each = enabled;
        self
    }

    /// Lets the response name the file (`-O -J`).
    pub(crate) fn named_by_server(mut self, enabled: bool) -> Sink {
        self.server_named = enabled && self.path.is_some();
        self
    }

    /// `-O -J` on a URL whose path ends in `/`: a file in `dir` (`--output-dir`'s, or the
    /// current one when empty) named by the response only. curl finds out when the body
    /// comes: without a name, the first write fails (exit 23, after its warning).
    pub(crate) fn server_named_in(dir: PathBuf, mode: FileMode) -> Sink {
        Sink {
            nameless: true,
            ..Sink::file(dir, mode).named_by_server(true)
        }
    }

    /// `-O -J`: renames the file, in its directory, after the response's `Content-Disposition`
    /// (see [`super::file_meta::disposition_filename`]) before anything is written to it. A
    /// file of that name must not exist yet (exit 23 when the first write finds one).
    pub(crate) fn name_from_response(&mut self, headers: &http::HeaderMap) {
        if !self.server_named || self.renamed || self.file.is_some() {
            return;
        }
        if let (Some(path), Some(name)) = (
            self.path.as_mut(),
            super::file_meta::disposition_filename(headers),
        ) {
            match self.nameless {
                true => path.push(name),
                false => path.set_file_name(name),
            }
            self.renamed = true;
            self.mode.must_be_new = true;
            self.mode.no_clobber = false;
        }
    }

    /// The file as `%{filename_effective}` names it: its path, or only its name when the
    /// server chose it (`-J`), as curl 7.88 prints it even with `--output-dir`.
    pub(crate) fn effective_name(&self) -> Option<PathBuf> {
        let path = self.path.as_ref()?;
        match (self.renamed, path.file_name()) {
            (true, Some(name)) => Some(PathBuf::from(name)),
            _ => Some(path.clone()),
        }
    }

    /// The file, if any.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Writes `bytes` unmodified. An empty piece creates no file: [`Sink::finish`] decides
    /// whether an empty one is made.
    ///
    /// # Errors
    ///
    /// Exit 23 when the file cannot be created or written, or stdout is closed.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), CurlError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let result = match &self.path {
            None => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)
                    .and_then(|()| if self.flush_each { out.flush() } else { Ok(()) })
            }
            Some(_) => {
                let flush_each = self.flush_each;
                let file = self.open()?;
                file.write_all(bytes)
                    .and_then(|()| if flush_each { file.flush() } else { Ok(()) })
            }
        };
        self.written += bytes.len() as u64;
        result.map_err(|e| self.failed(e))
    }

    /// Writes a piece of the body. To a terminal ([`Sink::terminal`]), a piece with a NUL byte
    /// among the first 2000 bytes is curl's refusal: its warning, and exit 23 with no error
    /// line of its own.
    ///
    /// # Errors
    ///
    /// As [`write`](Self::write), and exit 23 for binary bytes bound for a terminal.
    pub(crate) fn write_body(&mut self, bytes: &[u8]) -> Result<(), CurlError> {
        if self.guards_terminal && self.written < 2000 && bytes.contains(&0) {
            let warning = "Binary output can mess up your terminal. Use \"--output -\" to tell \
                           poolcurl to output it to your terminal anyway, or consider \
                           \"--output <FILE>\" to save to a file.";
            return Err(CurlError::new(23, "Failure writing output to destination")
                .with_note(Note::Warning(warning.to_owned()))
                .unreported());
        }
        self.write(bytes)
    }

    /// Ends a successful transfer: creates an empty file if nothing was written, and flushes.
    ///
    /// # Errors
    ///
    /// Exit 23 as for [`write`](Self::write).
    pub(crate) fn finish(&mut self) -> Result<(), CurlError> {
        let result = match &self.path {
            None => io::stdout().lock().flush(),
            Some(_) => self.open()?.flush(),
        };
        result.map_err(|e| self.failed(e))
    }

    /// Flushes what was written without creating a file that was never written to.
    pub(crate) fn flush(&mut self) {
        match &mut self.file {
            Some(file) => {
                let _ = file.flush();
            }
            None if self.path.is_none() => {
                let _ = io::stdout().lock().flush();
            }
            None => {}
        }
    }

    /// Before a retry: throws away what this sink wrote to its file (not what `-C` appended
    /// to). Returns the bytes thrown away; stdout keeps what it got.
    pub(crate) fn reset(&mut self) -> u64 {
        let thrown = self.written;
        self.written = 0;
        if let Some(file) = self.file.take() {
            if !self.mode.append {
                if let Ok(file) = file.into_inner() {
                    let mut file = file;
                    let _ = file.set_len(0);
                    let _ = file.rewind();
                }
            }
        }
        thrown
    }

    fn open(&mut self) -> Result<&mut BufWriter<File>, CurlError> {
        if self.nameless && !self.renamed {
            return Err(CurlError::new(23, "Failure writing output to destination")
                .with_note(Note::Warning("Remote filename has no length!".to_owned())));
        }
        if self.file.is_none() {
            let path = self.path.clone().unwrap_or_else(|| PathBuf::from("-"));
            if self.mode.create_dirs {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        CurlError::new(
                            23,
                            format!("Failed to create the file {}: {e}", path.display()),
                        )
                    })?;
                }
            }
            let mut options = OpenOptions::new();
            options.create(true);
            let opened = if self.mode.append {
                options.append(true).open(&path)
            } else if self.mode.must_be_new {
                // Created here, the file is this transfer's: a retry's reopen truncates it.
                let created = options.write(true).create_new(true).open(&path);
                self.mode.must_be_new = created.is_err();
                created
            } else if self.mode.no_clobber {
                self.open_unclobbered(&path, &mut options)
            } else {
                options.write(true).truncate(true).open(&path)
            };
            // curl warns with the reason and fails with libcurl's generic text.
            let file = opened.map_err(|e| {
                let why = format!(
                    "Failed to open the file {}: {}",
                    path.display(),
                    strerror(&e)
                );
                CurlError::new(23, "Failure writing output to destination")
                    .with_note(Note::Warning(why))
            })?;
            self.file = Some(BufWriter::new(file));
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Creates `path`, or else the first of `path.1` ... `path.100` that does not exist yet,
    /// and remembers the name taken. Creating with `create_new` is what decides, so a file
    /// that appears between a check and the open is never overwritten.
    fn open_unclobbered(&mut self, path: &Path, options: &mut OpenOptions) -> io::Result<File> {
        options.write(true).create_new(true);
        let mut candidate = path.to_path_buf();
        let mut n = 0;
        loop {
            match options.open(&candidate) {
                Ok(file) => {
                    // The name is this transfer's now: a retry's reopen truncates it rather
                    // than taking the next number.
                    self.path = Some(candidate);
                    self.mode.no_clobber = false;
                    return Ok(file);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < CLOBBER_TRIES => {
                    n += 1;
                    let mut name = path.as_os_str().to_owned();
                    name.push(format!(".{n}"));
                    candidate = PathBuf::from(name);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `--remove-on-error`: deletes the file this sink created (nothing for stdout or a file
    /// it never opened). Returns whether a file was removed.
    pub(crate) fn remove(&mut self) -> bool {
        match (self.file.take(), &self.path) {
            (Some(file), Some(path)) => {
                drop(file);
                std::fs::remove_file(path).is_ok()
            }
            _ => false,
        }
    }

    fn failed(&self, error: io::Error) -> CurlError {
        match &self.path {
            Some(path) => CurlError::write_failed(format!("{}: {error}", path.display())),
            None => CurlError::write_failed(format!("stdout: {error}")),
        }
    }
}

/// Whether stdout is a terminal, asked once per process.
pub(crate) fn stdout_is_terminal() -> bool {
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::IsTerminal::is_terminal(&io::stdout()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_refuses_a_binary_body_as_curl_does() {
        let mut sink = Sink {
            guards_terminal: true,
            ..Sink::stdout()
        };
        let error = sink.write_body(b"\x89PNG\r\n\x1a\n\0\0").unwrap_err();
        assert_eq!(error.code(), 23);
        assert!(error.is_unreported());
        assert!(matches!(error.note(), Some(Note::Warning(w)) if w.starts_with("Binary output")));
        // Past the first 2000 bytes, or to a file or a pipe, bytes are bytes.
        assert!(!Sink::stdout().guards_terminal);
        assert!(!Sink::file(PathBuf::from("-"), FileMode::default()).guards_terminal);
    }

    #[test]
    fn files_appear_on_first_write_and_reset_empties_them() {
        let dir = crate::scratch::Scratch::new("sink");
        let path = dir.join("a/b/out.txt");
        let mode = FileMode {
            create_dirs: true,
            ..FileMode::default()
        };
        let mut sink = Sink::file(path.clone(), mode);
        assert!(!path.exists());
        sink.write(b"first").unwrap();
        assert_eq!(sink.reset(), 5);
        sink.write(b"second").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");

        let mut sink = Sink::file(
            path.clone(),
            FileMode {
                append: true,
                ..FileMode::default()
            },
        );
        sink.write(b"+more").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second+more");
    }

    #[test]
    fn no_clobber_numbers_once_and_a_retry_keeps_the_number() {
        let dir = crate::scratch::Scratch::new("clobber");
        let path = dir.join("out.txt");
        std::fs::write(&path, "kept").unwrap();
        let mode = FileMode {
            no_clobber: true,
            ..FileMode::default()
        };
        let mut sink = Sink::file(path.clone(), mode);
        sink.write(b"first").unwrap();
        let numbered = dir.join("out.txt.1");
        assert_eq!(sink.path(), Some(numbered.as_path()));
        sink.reset();
        sink.write(b"again").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(std::fs::read(&numbered).unwrap(), b"again");
        assert!(!dir.join("out.txt.2").exists());
        // --remove-on-error deletes what the transfer created, not what was there before.
        assert!(sink.remove());
        assert!(!numbered.exists() && path.exists());
    }

    #[test]
    fn a_name_from_the_response_never_replaces_a_file_and_survives_a_retry() {
        let dir = crate::scratch::Scratch::new("sink-j");
        std::fs::write(dir.join("taken.txt"), "mine").unwrap();
        let named = |file: &str| {
            let mut headers = http::HeaderMap::new();
            let value = format!("attachment; filename=\"{file}\"");
            headers.insert(
                http::header::CONTENT_DISPOSITION,
                http::HeaderValue::from_str(&value).unwrap(),
            );
            headers
        };
        let mut sink = Sink::file(dir.join("url-name"), FileMode::default()).named_by_server(true);
        sink.name_from_response(&named("taken.txt"));
        assert_eq!(sink.write(b"theirs").unwrap_err().code(), 23);
        assert_eq!(std::fs::read(dir.join("taken.txt")).unwrap(), b"mine");

        let mut sink = Sink::file(dir.join("url-name"), FileMode::default()).named_by_server(true);
        sink.name_from_response(&named("fresh.txt"));
        sink.write(b"first").unwrap();
        sink.reset();
        // The retry's response names it again; the file is this transfer's already.
        sink.name_from_response(&named("fresh.txt"));
        sink.write(b"second").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(dir.join("fresh.txt")).unwrap(), b"second");
        assert_eq!(sink.effective_name(), Some(PathBuf::from("fresh.txt")));
        assert!(!dir.join("url-name").exists());

        // A URL without a name: the directory's file is the response's, or the write fails.
        let mut sink = Sink::server_named_in(dir.join(""), FileMode::default());
        sink.name_from_response(&named("dir-named.txt"));
        sink.write(b"named").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(dir.join("dir-named.txt")).unwrap(), b"named");
        let mut sink = Sink::server_named_in(dir.join(""), FileMode::default());
        sink.name_from_response(&http::HeaderMap::new());
        let error = sink.write(b"lost").unwrap_err();
        assert_eq!(error.code(), 23);
        assert_eq!(
            error.note(),
            Some(&Note::Warning("Remote filename has no length!".to_owned()))
        );
    }
}
