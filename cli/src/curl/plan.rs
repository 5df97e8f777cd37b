//! The transfers of one invocation: which URLs, in which order, and where each one's output
//! goes.
//!
//! URLs come from `--url` and the positional arguments, in command-line order; each is
//! expanded by [`super::glob`] unless `-g`. Output flags pair with URLs in command-line order,
//! as curl pairs them: the first `-o`/`-O` goes with the first URL (and all of its glob
//! expansions, `#N` in an `-o` name taking the Nth glob's value), the second with the second,
//! and so on; URLs left over go to stdout, or to their remote name after a `--remote-name-all`
//! (curl gives each URL the setting in force where its node was made).
//! `-T` pairs the same way: the first `-T` uploads to the first URL, the second to the second,
//! URLs left over upload nothing, and `-T ""` keeps its URL's place without an upload. A `-T`
//! name is a glob too (unless `-g`): each file it names goes to each URL its URL expands to,
//! files outermost, as curl orders them. [`sink_for`] opens (lazily) where a planned
//! transfer's output goes.

use std::path::{Path, PathBuf};

use clap::ArgMatches;

use super::args::CurlArgs;
use super::exit::{CurlError, Note};
use super::glob;
use super::sink::{FileMode, Sink};

/// Where one transfer's output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// stdout.
    Stdout,
    /// `-o FILE` (`#N` already filled in).
    File(PathBuf),
    /// `-O`: a file named like the URL's last path segment.
    Remote,
}

/// One transfer to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// The URL as given (after glob expansion).
    pub(crate) url: String,
    /// The position of its URL on the command line, from 0, counted on across `--next`
    /// groups (curl's `%{urlnum}`): the transfers of one glob share it.
    pub(crate) index: usize,
    /// Where its output goes.
    pub(crate) output: Output,
    /// What `-T` uploads to it (`-` or `.`: stdin), if anything.
    pub(crate) upload: Option<String>,
}

/// One output flag, before it meets its URL.
#[derive(Debug, Clone)]
enum Spec {
    File(PathBuf),
    Remote,
    /// `--no-remote-name`: curl takes it as `-O` switched off, which fills the next URL's
    /// output slot with stdout (it is not `-O`'s negation).
    Stdout,
}

/// The URLs of the command line in order (`--url` and positional, interleaved as given), each
/// with its place on the command line.
fn urls_placed(args: &CurlArgs, matches: &ArgMatches) -> Vec<(usize, String)> {
    let mut urls: Vec<(usize, String)> = Vec::new();
    for (id, values) in [("url", &args.transfer.url), ("urls", &args.urls)] {
        let indices: Vec<usize> = matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default();
        for (i, value) in values.iter().enumerate() {
            urls.push((indices.get(i).copied().unwrap_or(usize::MAX), value.clone()));
        }
    }
    urls.sort_by_key(|(index, _)| *index);
    urls
}

/// The transfers, in order, with their outputs.
///
/// # Errors
///
/// Exit 3 for a malformed glob pattern.
pub(crate) fn plan(
    args: &CurlArgs,
    matches: &ArgMatches,
) -> Result<Vec<Planned>, super::exit::CurlError> {
    let specs = outputs_in_order(args, matches);
    let uploads = uploads_in_order(args);
    let globbed = |pattern: String| {
        if args.transfer.globoff {
            Ok(vec![glob::Expanded {
                url: pattern,
                values: Vec::new(),
            }])
        } else {
            glob::expand(&pattern)
        }
    };
    let remote_by_default = remote_by_default(args, matches);
    let mut planned = Vec::new();
    for (n, (place, url)) in urls_placed(args, matches).into_iter().enumerate() {
        let files = match uploads.get(n).cloned().flatten() {
            Some(pattern) => globbed(pattern)?.into_iter().map(|f| Some(f.url)).collect(),
            None => vec![None],
        };
        let expanded = globbed(url)?;
        for upload in files {
            for one in &expanded {
                let output = match specs.get(n) {
                    Some(Spec::File(path)) => {
                        let name = glob::fill_output(&path.to_string_lossy(), &one.values);
                        Output::File(PathBuf::from(name))
                    }
                    Some(Spec::Remote) => Output::Remote,
                    Some(Spec::Stdout) => Output::Stdout,
                    None if remote_by_default(place, n) => Output::Remote,
                    None => Output::Stdout,
                };
                planned.push(Planned {
                    url: one.url.clone(),
                    index: n,
                    output,
                    upload: upload.clone(),
                });
            }
        }
    }
    Ok(planned)
}

/// Whether `--remote-name-all` names the output of URL node `n`, whose URL is at `place`:
/// curl gives each node the setting in force when the node was made (by its URL or its
/// `-T`, whichever came first; a node made by `-o` or `-O` has its output), so the flag
/// holds for the URLs after it, not those before.
fn remote_by_default(args: &CurlArgs, matches: &ArgMatches) -> impl Fn(usize, usize) -> bool {
    let from = matches
        .indices_of("remote_name_all")
        .and_then(Iterator::min)
        .filter(|_| args.transfer.remote_name_all);
    let uploads: Vec<usize> = matches
        .indices_of("upload_file")
        .map(Iterator::collect)
        .unwrap_or_default();
    move |place, n| {
        let made = uploads.get(n).map_or(place, |&upload| upload.min(place));
        from.is_some_and(|from| from < made)
    }
}

/// `-T` in command-line order (clap keeps one flag's values in order): `None` for `-T ""`.
/// How far the group moves curl's `%{urlnum}` count on: curl numbers each URL node it makes,
/// and a URL, an `-o`/`-O` or a `-T` each fill the next node or make one.
pub(crate) fn url_nodes(args: &CurlArgs, matches: &ArgMatches) -> usize {
    let urls = args.urls.len() + args.transfer.url.len();
    urls.max(outputs_in_order(args, matches).len())
        .max(args.send.upload_file.len())
}

fn uploads_in_order(args: &CurlArgs) -> Vec<Option<String>> {
    args.send
        .upload_file
        .iter()
        .map(|name| (!name.is_empty()).then(|| name.clone()))
        .collect()
}

/// `-o`, `-O` and `--no-remote-name` in command-line order.
fn outputs_in_order(args: &CurlArgs, matches: &ArgMatches) -> Vec<Spec> {
    let transfer = &args.transfer;
    let files = transfer.output.iter().map(|path| Spec::File(path.clone()));
    let mut specs: Vec<(usize, Spec)> = placed(matches, "output", files);
    let remotes = transfer.remote_name.iter().map(|_| Spec::Remote);
    specs.extend(placed(matches, "remote_name", remotes));
    let stdouts = transfer.no_remote_name.iter().map(|_| Spec::Stdout);
    specs.extend(placed(matches, "no_remote_name", stdouts));
    specs.sort_by_key(|(index, _)| *index);
    specs.into_iter().map(|(_, spec)| spec).collect()
}

/// Each of `specs` (the values of option `id`, in order) with its place on the command line.
fn placed(matches: &ArgMatches, id: &str, specs: impl Iterator<Item = Spec>) -> Vec<(usize, Spec)> {
    let mut places = matches.indices_of(id).into_iter().flatten();
    specs
        .map(|spec| (places.next().unwrap_or(usize::MAX), spec))
        .collect()
}

/// The sink of a planned transfer to `url`: stdout, its `-o` file, or (`-O`) the file its URL
/// names, in `--output-dir` when given.
///
/// # Errors
///
/// Exit 23 when `-O` finds no file name in the URL and `-J` cannot give one (curl ends its run
/// there, [`super::Session`]); exit 3 when the URL does not parse.
pub(crate) fn sink_for(args: &CurlArgs, planned: &Planned, url: &str) -> Result<Sink, CurlError> {
    let transfer = &args.transfer;
    let append = args.send.continue_at.is_some();
    let mode = FileMode {
        append,
        create_dirs: transfer.create_dirs,
        no_clobber: transfer.no_clobber && !append,
        must_be_new: false,
    };
    let sink = match &planned.output {
        Output::Stdout => Sink::terminal(),
        Output::File(path) => Sink::file(in_output_dir(args, path), mode),
        Output::Remote => match super::url::remote_name(&super::url::parse_url(url)?) {
            Some(name) => Sink::file(in_output_dir(args, Path::new(&name)), mode)
                .named_by_server(transfer.remote_header_name),
            // With -J the response may still name it.
            None if transfer.remote_header_name => {
                Sink::server_named_in(in_output_dir(args, Path::new("")), mode)
            }
            None => {
                let why = Note::Error("Remote file name has no length!".to_owned());
                let error = CurlError::new(23, "Failed writing received data to disk/application");
                return Err(error.with_note(why));
            }
        },
    };
    Ok(sink.flush_each_write(transfer.no_buffer))
}

/// `path` inside `--output-dir`, if given: the directory and the name joined with `/` as text,
/// as curl joins them (so an absolute name lands under the directory too).
pub(crate) fn in_output_dir(args: &CurlArgs, path: &Path) -> PathBuf {
    match &args.transfer.output_dir {
        Some(dir) if path.as_os_str() != "-" => {
            let mut joined = std::ffi::OsString::from(dir);
            joined.push("/");
            joined.push(path.as_os_str());
            PathBuf::from(joined)
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(argv: &[&str]) -> Vec<(String, Output)> {
        let (args, matches) = crate::curl::args::parse_test_args(argv);
        plan(&args, &matches)
            .unwrap()
            .into_iter()
            .map(|p| (p.url, p.output))
            .collect()
    }

    fn uploads(argv: &[&str]) -> Vec<(String, Option<String>)> {
        let (args, matches) = crate::curl::args::parse_test_args(argv);
        plan(&args, &matches)
            .unwrap()
            .into_iter()
            .map(|p| (p.url, p.upload))
            .collect()
    }

    #[test]
    fn uploads_pair_with_urls_in_order_and_glob_outermost() {
        let up = |url: &str, file: Option<&str>| (url.to_owned(), file.map(str::to_owned));
        assert_eq!(
            uploads(&["-T", "-", "http://a/1", "http://a/2"]),
            [up("http://a/1", Some("-")), up("http://a/2", None)]
        );
        assert_eq!(
            uploads(&[
                "-T",
                "",
                "-T",
                "f",
                "http://a/1",
                "http://a/2",
                "http://a/3"
            ]),
            [
                up("http://a/1", None),
                up("http://a/2", Some("f")),
                up("http://a/3", None)
            ]
        );
        assert_eq!(
            uploads(&["-T", "{x,y}", "http://a/[1-2]/"]),
            [
                up("http://a/1/", Some("x")),
                up("http://a/2/", Some("x")),
                up("http://a/1/", Some("y")),
                up("http://a/2/", Some("y")),
            ]
        );
        assert_eq!(
            uploads(&["-g", "-T", "{x,y}", "http://a/"]),
            [up("http://a/", Some("{x,y}"))]
        );
    }

    #[test]
    fn outputs_pair_with_urls_in_order() {
        let p = planned(&["-O", "http://a/x", "-o", "f", "http://a/y", "http://a/z"]);
        assert_eq!(
            p,
            [
                ("http://a/x".to_owned(), Output::Remote),
                ("http://a/y".to_owned(), Output::File("f".into())),
                ("http://a/z".to_owned(), Output::Stdout),
            ]
        );
        // Each -O keeps its own place (clap keeps a count's last place only).
        let p = planned(&[
            "-O",
            "http://a/x",
            "-o",
            "f",
            "http://a/y",
            "-sO",
            "http://a/z",
        ]);
        let outputs: Vec<Output> = p.into_iter().map(|(_, o)| o).collect();
        assert_eq!(
            outputs,
            [Output::Remote, Output::File("f".into()), Output::Remote]
        );
        let p = planned(&["--remote-name-all", "--url", "http://a/1", "http://a/2"]);
        assert!(p.iter().all(|(_, o)| *o == Output::Remote));
        assert_eq!(p[0].0, "http://a/1");
        // It holds for the URLs after it; a `-T` before the URL made its node earlier.
        let outputs =
            |argv: &[&str]| -> Vec<Output> { planned(argv).into_iter().map(|(_, o)| o).collect() };
        assert_eq!(
            outputs(&["http://a/1", "--remote-name-all", "http://a/2"]),
            [Output::Stdout, Output::Remote]
        );
        assert_eq!(
            outputs(&["-T", "f", "--remote-name-all", "http://a/1", "http://a/2"]),
            [Output::Stdout, Output::Remote]
        );
        // --no-remote-name takes a slot of its own: stdout, whatever -O or
        // --remote-name-all say of the others.
        let p = planned(&[
            "--remote-name-all",
            "-O",
            "--no-remote-name",
            "http://a/x",
            "http://a/y",
            "http://a/z",
        ]);
        let outputs: Vec<Output> = p.into_iter().map(|(_, o)| o).collect();
        assert_eq!(outputs, [Output::Remote, Output::Stdout, Output::Remote]);
    }

    #[test]
    fn globs_expand_and_fill_output_names() {
        let p = planned(&["-o", "out_#1.txt", "http://a/{x,y}"]);
        assert_eq!(
            p,
            [
                ("http://a/x".to_owned(), Output::File("out_x.txt".into())),
                ("http://a/y".to_owned(), Output::File("out_y.txt".into())),
            ]
        );
        let p = planned(&["-g", "http://a/{x,y}"]);
        assert_eq!(p, [("http://a/{x,y}".to_owned(), Output::Stdout)]);
    }
}
