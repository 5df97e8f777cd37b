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

use super::exit::CurlError;

/// How a file sink opens its file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FileMode {
    /// Append to an existing file (`-C`) instead of truncating it.
    pub(crate) append: bool,
    /// Create missing parent directories (`--create-dirs`).
    pub(crate) create_dirs: bool,
}

/// Where one transfer's output goes.
#[derive(Debug)]
pub(crate) struct Sink {
    /// The file, or `None` for stdout.
    path: Option<PathBuf>,
    /// How the file is opened.
    mode: FileMode,
    /// The file, once something was written.
    file: Option<BufWriter<File>>,
    /// `-N`: flush stdout after every write.
    flush_each: bool,
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

    /// Flushes stdout after every write (`-N`).
    pub(crate) fn flush_each_write(mut self, enabled: bool) -> Sink {
        self.flush_each = enabled;
        self
    }

    /// The file, if any.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Writes `bytes` unmodified.
    ///
    /// # Errors
    ///
    /// Exit 23 when the file cannot be created or written, or stdout is closed.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), CurlError> {
        let result = match &self.path {
            None => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)
                    .and_then(|()| if self.flush_each { out.flush() } else { Ok(()) })
            }
            Some(_) => self.open()?.write_all(bytes),
        };
        self.written += bytes.len() as u64;
        result.map_err(|e| self.failed(e))
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
            if self.mode.append {
                options.append(true);
            } else {
                options.write(true).truncate(true);
            }
            let file = options.open(&path).map_err(|e| {
                CurlError::new(
                    23,
                    format!("Failed to open the file {}: {e}", path.display()),
                )
            })?;
            self.file = Some(BufWriter::new(file));
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    fn failed(&self, error: io::Error) -> CurlError {
        match &self.path {
            Some(path) => CurlError::write_failed(format!("{}: {error}", path.display())),
            None => CurlError::write_failed(format!("stdout: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_appear_on_first_write_and_reset_empties_them() {
        let dir = std::env::temp_dir().join(format!("poolcurl-sink-{}", std::process::id()));
        let path = dir.join("a/b/out.txt");
        let mode = FileMode {
            append: false,
            create_dirs: true,
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
                create_dirs: false,
            },
        );
        sink.write(b"+more").unwrap();
        sink.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second+more");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
