//! Which URLs a run loads: the positional arguments plus the lines of `--urls-file`, turned
//! into absolute URLs (paths on the local origin with `--local`), and the distinct origins they
//! reach, in order of first appearance, so that each request can be tallied under its origin.
//!
//! What it does not do: weight URLs (each appears as often as it is listed; list one twice to
//! load it twice as often) or shuffle them (workers go round-robin, worker `w` starting at URL
//! `w % urls`).

use std::path::Path;

use http::Uri;
use pool::OriginKey;

use super::args::{LoadArgs, Target, parse_target};
use crate::origin::{Flavor, LocalOrigin};

/// The positional targets followed by those of `--urls-file`.
///
/// # Errors
///
/// The file cannot be read, a line is neither a URL nor a path, a path is given without
/// `--local`, or a URL with it (the message names the line).
pub(crate) fn all(args: &LoadArgs) -> Result<Vec<Target>, String> {
    let mut targets = args.targets.clone();
    if let Some(path) = &args.urls_file {
        targets.extend(read_file(path, args.local)?);
    }
    if targets.is_empty() && !args.local {
        return Err("no URL to load: the --urls-file has none".to_owned());
    }
    Ok(targets)
}

/// The targets listed in `path`, one per line.
fn read_file(path: &Path, local: bool) -> Result<Vec<Target>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--urls-file {shown}: {e}"))?;
    let mut targets = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("--urls-file {shown}, line {}", number + 1);
        let target = parse_target(line).map_err(|e| format!("{}: {e}", at()))?;
        match (&target, local) {
            (Target::Url(url), true) => {
                return Err(format!(
                    "{}: with --local, give paths on the local origin, not URLs: '{url}'",
                    at()
                ));
            }
            (Target::Path(path), false) => {
                return Err(format!(
                    "{}: '{path}' is a path; give a full URL, or use --local",
                    at()
                ));
            }
            _ => targets.push(target),
        }
    }
    Ok(targets)
}

/// The URLs to load: the targets as they are, or (with the local origin) its URLs for the
/// paths, `/` when none was given.
pub(crate) fn urls(
    targets: &[Target],
    origin: Option<&LocalOrigin>,
    flavor: Flavor,
) -> Result<Vec<Uri>, String> {
    let Some(origin) = origin else {
        return Ok(targets
            .iter()
            .filter_map(|target| match target {
                Target::Url(uri) => Some(uri.clone()),
                Target::Path(_) => None,
            })
            .collect());
    };
    let mut paths: Vec<&str> = targets
        .iter()
        .filter_map(|target| match target {
            Target::Path(path) => Some(path.as_str()),
            Target::Url(_) => None,
        })
        .collect();
    if paths.is_empty() {
        paths.push("/");
    }
    paths
        .into_iter()
        .map(|path| {
            let url = origin.url(flavor, path);
            url.parse::<Uri>()
                .map_err(|e| format!("local origin URL {url}: {e}"))
        })
        .collect()
}

/// The distinct origins of `urls` in order of first appearance, and each URL's index into
/// them (a URL whose origin does not parse shares index 0; its requests fail anyway).
pub(crate) fn origins(urls: &[Uri]) -> (Vec<OriginKey>, Vec<usize>) {
    let mut origins: Vec<OriginKey> = Vec::new();
    let indexes = urls
        .iter()
        .map(|url| {
            let Ok(origin) = OriginKey::from_uri(url) else {
                return 0;
            };
            match origins.iter().position(|o| *o == origin) {
                Some(index) => index,
                None => {
                    origins.push(origin);
                    origins.len() - 1
                }
            }
        })
        .collect();
    (origins, indexes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_map_to_their_origins_in_order_of_appearance() {
        let urls: Vec<Uri> = [
            "http://b.test/1",
            "http://a.test/1",
            "http://B.test:80/2",
            "https://a.test/",
        ]
        .iter()
        .map(|u| u.parse().unwrap())
        .collect();
        let (origins, indexes) = origins(&urls);
        let names: Vec<String> = origins.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["http://b.test", "http://a.test", "https://a.test"]);
        assert_eq!(indexes, [0, 1, 0, 2]);
    }

    #[test]
    fn a_urls_file_skips_blanks_and_comments_and_names_bad_lines() {
        let dir = crate::scratch::Scratch::new("urls");
        let file = dir.join("urls.txt");
        std::fs::write(&file, "# origins\nhttp://a.test/x\n\n  b.test:8080/y  \n").unwrap();
        let targets = read_file(&file, false).unwrap();
        assert_eq!(
            targets,
            [
                Target::Url("http://a.test/x".parse().unwrap()),
                Target::Url("http://b.test:8080/y".parse().unwrap())
            ]
        );
        let error = read_file(&file, true).unwrap_err();
        assert!(
            error.contains("line 2") && error.contains("--local"),
            "{error}"
        );
        std::fs::write(&file, "http://a.test/\nftp://nope/\n").unwrap();
        let error = read_file(&file, false).unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }
}
