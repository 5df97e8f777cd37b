//! A directory of a unit test's own: `poolcurl-NAME-PID` under the system's temporary
//! directory, created at once and removed with everything in it when the test ends (a failed
//! assertion included).

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A test's scratch directory; derefs to its path.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// Creates `poolcurl-NAME-PID` (a name per test, so tests running at once never share).
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("poolcurl-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
