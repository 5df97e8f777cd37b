//! Parity cases: the command line as a whole: --next, header names as sent, traces, -Z.

use crate::{Case, Extra, case, with, with_curlrc, with_stdin};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // Warnings and notes come when curl finds their cause: -z's while the command line is
        // read, -X's as each transfer is made, surplus outputs after the group's last URL.
        Case {
            extra: Extra::Warnings,
            ..case(
                "warnings in curl's order",
                &[
                    "-z",
                    "not a date",
                    "-X",
                    "GET",
                    "-v",
                    "-o",
                    "%DIR%/a.txt",
                    "-o",
                    "%DIR%/b.txt",
                    "-o",
                    "%DIR%/c.txt",
                    "%BASE%/hello",
                    "%BASE%/hello",
                    "--next",
                    "-o",
                    "%DIR%/d.txt",
                    "%BASE%/hello",
                ],
            )
        },
        // --next: each group its own options; global options everywhere.
        case(
            "next: a GET then a POST on the same connection",
            &[
                "-w",
                "%{num_connects}",
                "%BASE%/echo",
                "--next",
                "-w",
                "%{num_connects}",
                "-d",
                "x=1",
                "%BASE%/echo",
            ],
        ),
        case(
            "next: options stay in their group",
            &[
                "-o",
                "%DIR%/a.txt",
                "-w",
                "[%{urlnum}]",
                "%BASE%/hello",
                "-:",
                "-w",
                "(%{urlnum} %{http_code})",
                "%BASE%/hello",
            ],
        ),
        case(
            "next: -f belongs to its group",
            &["-f", "%BASE%/status/404", "--next", "%BASE%/status/404"],
        ),
        case(
            "next: the last group's transfer decides",
            &["%BASE%/status/404", "--next", "-f", "%BASE%/status/404"],
        ),
        case(
            "next: fail early is global",
            &[
                "-f",
                "%BASE%/status/404",
                "--next",
                "--fail-early",
                "%BASE%/hello",
            ],
        ),
        case(
            "next before a URL starts nothing",
            &["-w", "%{http_code}", "--next", "%BASE%/hello"],
        ),
        case(
            "next: a last group without a URL",
            &["%BASE%/hello", "--next", "-o", "%DIR%/x.txt"],
        ),
        case(
            "next: groups share the cookie engine",
            &[
                "-c",
                "%DIR%/jar.txt",
                "%BASE%/setcookie",
                "--next",
                "-b",
                "%DIR%/no-such-jar.txt",
                "%BASE%/echo",
                "--next",
                "%BASE%/echo",
            ],
        ),
        case(
            "next from a config file",
            &["%BASE%/echo", "-K", "%DIR%/../next.cfg", "%BASE%/echo"],
        ),
        case("range", &["-r", "2-5", "%BASE%/range"]),
        // A 416 to -C: the file is taken as complete (its error page not appended), unless -f.
        case(
            "resumed past the end",
            &[
                "-C",
                "100",
                "-w",
                "%{http_code} %{size_download}",
                "%BASE%/range",
            ],
        ),
        case(
            "resumed past the end with fail",
            &["-f", "-C", "100", "-w", "%{http_code}", "%BASE%/range"],
        ),
        case("range past the end", &["-r", "100-", "%BASE%/range"]),
        // On a POST, -r and -C describe what is sent: the data's Content-Range, nothing for a
        // form, and no Range asked of the response (so no exit 33 on its 200).
        case(
            "range of posted data",
            &["-r", "0-1", "-d", "abc", "%BASE%/echo"],
        ),
        case(
            "range of a posted form",
            &["-r", "0-1", "-F", "a=b", "%BASE%/echo"],
        ),
        case("resumed form", &["-C", "1", "-F", "a=b", "%BASE%/echo"]),
        case(
            "resumed past the posted data",
            &["-C", "5", "-d", "abc", "%BASE%/echo"],
        ),
        case("resumed head", &["-C", "1", "-I", "%BASE%/echo"]),
        case("data that starts with a dash", &["-d", "-x", "%BASE%/echo"]),
        case(
            "data from a text file",
            &["-d", "@%DIR%/../text-data.txt", "%BASE%/echo"],
        ),
        Case {
            extra: Extra::Stderr,
            ..case("a lone dash", &["-s", "-", "%BASE%/hello"])
        },
        // -f and --fail-with-body: the one that turns the second on is badly used.
        Case {
            extra: Extra::Stderr,
            ..case(
                "fail and fail-with-body",
                &["-f", "--fail-with-body", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "fail-with-body then a negated fail",
                &["-s", "--fail-with-body", "--no-fail", "-f", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "config file syntax",
                &["-K", "../syntax.cfg", "%BASE%/hello"],
            )
        },
        // ~/.curlrc is read first, unless -q comes first; its refused lines are warnings.
        with_curlrc(
            "curlrc",
            "include\nbogus-line\nwrite-out = \"[%{http_code}]\"\n",
            &["%BASE%/hello"],
        ),
        with_curlrc(
            "curlrc after -q",
            "include\n",
            &["-q", "-w", "[%{http_code}]", "%BASE%/hello"],
        ),
        with_curlrc(
            "curlrc and the command line",
            "-o\n",
            &["-s", "%BASE%/hello"],
        ),
        Case {
            extra: Extra::Stderr,
            ..case(
                "config file lines curl refuses",
                &["-K", "../lenient.cfg", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "config file that cannot be read",
                &["-K", "missing.cfg", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "config file naming one that cannot be read",
                &["--no-progress-meter", "-K", "../nested.cfg", "%BASE%/echo"],
            )
        },
        // A directory opens and reads as no lines: curl goes on without options from it.
        Case {
            extra: Extra::Stderr,
            ..case(
                "config file that is a directory",
                &["-s", "-K", ".", "%BASE%/hello"],
            )
        },
        case(
            "query escapes appended in lower case",
            &[
                "-G",
                "-d",
                "a=%2F",
                "--url-query",
                "b=é",
                "-w",
                "%{url_effective}",
                "%BASE%/echo?c=%2F",
            ],
        ),
        // Joined as curl's URL API joins queries: no `&` after an empty query or a trailing
        // `&`, and an empty result drops the `?`.
        case(
            "query appended to an empty query",
            &["-G", "-d", "a", "%BASE%/echo?"],
        ),
        case(
            "query appended after a trailing ampersand",
            &["-G", "-d", "a", "%BASE%/echo?b&"],
        ),
        case("empty query appended", &["-G", "-d", "", "%BASE%/echo?"]),
        case(
            "write-out from a file",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "@%DIR%/../format.txt",
                "%BASE%/hello",
            ],
        ),
        case(
            "write-out escapes curl does not know",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "\\\\ \\%{http_code} \\q\\t|",
                "%BASE%/hello",
            ],
        ),
        // --no-NAME turns a boolean flag off (the last word wins); --NAME turns on one whose
        // own name starts with no-.
        case(
            "no- turns flags off",
            &["-sLi", "--no-location", "--no-include", "%BASE%/redirect"],
        ),
        case(
            "no- before a later flag",
            &[
                "--no-include",
                "-i",
                "--no-keepalive",
                "--keepalive",
                "%BASE%/hello",
            ],
        ),
        Case {
            extra: Extra::Stderr,
            ..case(
                "no- before a flag that is not a boolean",
                &["-s", "--no-http2", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "no- before an option with a value",
                &["-s", "--no-output", "%BASE%/hello"],
            )
        },
        // An option's value may start with a dash: curl takes the next argument whatever it is.
        case(
            "values that start with a dash",
            &[
                "-r",
                "-3",
                "--user-agent",
                "-ua",
                "-sH",
                "-x: 1",
                "%BASE%/echo",
            ],
        ),
        case("compressed gzip", &["--compressed", "%BASE%/gzip"]),
        case("compressed deflate", &["--compressed", "%BASE%/deflate"]),
        case("compressed br", &["--compressed", "%BASE%/br"]),
        case("compressed zstd", &["--compressed", "%BASE%/zstd"]),
        case("not compressed without the flag", &["%BASE%/gzip"]),
        case("transfer coding without the flag", &["%BASE%/te-gzip"]),
        case(
            "transfer coding with the flag",
            &["--compressed", "-i", "%BASE%/te-gzip"],
        ),
        case("unknown coding", &["--compressed", "%BASE%/unknown-coding"]),
        case(
            "unknown coding without the flag",
            &["%BASE%/unknown-coding"],
        ),
        case("six codings", &["--compressed", "%BASE%/six-codings"]),
        case(
            "deflate without its header",
            &["--compressed", "%BASE%/raw-deflate"],
        ),
        // --tr-encoding asks for a compressed transfer coding, merging -H's Connection.
        case(
            "transfer coding asked for",
            &["--tr-encoding", "%BASE%/echo"],
        ),
        case(
            "transfer coding with a connection header",
            &["--tr-encoding", "-H", "Connection: close", "%BASE%/echo"],
        ),
        case(
            "transfer coding with its own header",
            &[
                "--tr-encoding",
                "-H",
                "TE: x",
                "-H",
                "connection: a",
                "%BASE%/echo",
            ],
        ),
        case(
            "transfer coding decoded",
            &["--tr-encoding", "%BASE%/te-gzip"],
        ),
        case("output file", &["-o", "%DIR%/out.txt", "%BASE%/hello"]),
        case("remote name", &["-O", "%BASE%/files/remote.txt"]),
        // Each -O pairs with its own URL, an -o between them or not.
        case(
            "two -O around an -o",
            &[
                "-O",
                "%BASE%/files/one.txt",
                "-o",
                "%DIR%/named.txt",
                "%BASE%/files/two.txt",
                "-sO",
                "%BASE%/files/three.txt",
            ],
        ),
        // --no-remote-name is an output slot of its own (stdout), not -O's negation.
        case(
            "no remote name takes a slot",
            &[
                "--remote-name-all",
                "--no-remote-name",
                "%BASE%/files/one.txt",
                "-O",
                "--no-remote-name",
                "%BASE%/files/two.txt",
                "%BASE%/files/three.txt",
            ],
        ),
        // --remote-name-all holds for the URLs after it, not for one before it.
        case(
            "remote name all holds from its place",
            &[
                "%BASE%/files/one.txt",
                "--remote-name-all",
                "%BASE%/files/two.txt",
            ],
        ),
        case(
            "create dirs",
            &["--create-dirs", "-o", "%DIR%/a/b/c.txt", "%BASE%/hello"],
        ),
        case("dump header", &["-D", "%DIR%/head.txt", "%BASE%/hello"]),
        // Issue 19: HTTP/1 header names as the server wrote them.
        case("mixed case include", &["-i", "%BASE%/mixed"]),
        case("mixed case head", &["-I", "%BASE%/mixed"]),
        case(
            "mixed case dump header",
            &[
                "-D",
                "%DIR%/head.txt",
                "-o",
                "%DIR%/body.txt",
                "%BASE%/mixed",
            ],
        ),
        case(
            "mixed case after a redirect",
            &["-L", "-i", "%BASE%/mixed-redirect"],
        ),
        with(
            Extra::VerboseResponseHead,
            "mixed case verbose",
            &["-v", "-o", "/dev/null", "%BASE%/mixed"],
        ),
        // --trace and --trace-ascii: the same blocks, bytes and layout as curl's.
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii to stdout",
            &["--trace-ascii", "-", "-A", "parity", "%BASE%/hello"],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace in hex with data",
            // The hex shows the port's digits: a fixed Host keeps them out.
            &[
                "--trace",
                "-",
                "-A",
                "parity",
                "-H",
                "Host: parity.test",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        // -T pairs with URLs as -o does; stdin (or anything without a size) goes chunked.
        with_stdin(
            "upload: -T - streams stdin chunked to its own URL, the next one is a GET",
            "stdin-data\n",
            &[
                "-w",
                "|%{size_upload}|\n",
                "-T",
                "-",
                "%BASE%/echo",
                "%BASE%/echo",
            ],
        ),
        with_stdin(
            "upload: empty stdin is one last chunk; -T . is stdin too",
            "",
            &["-w", "|%{size_upload}|\n", "-T", ".", "%BASE%/echo"],
        ),
        case(
            "upload: -T \"\" keeps its URL's place, the next -T goes with the next URL",
            &[
                "-T",
                "",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo/",
                "%BASE%/echo/",
                "%BASE%/echo/",
            ],
        ),
        case(
            "upload: the file's name goes at the end of the path, before a query",
            &[
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo/?q=1",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%?q=2",
            ],
        ),
        case(
            "upload: a -T glob sends each file to the URL, named after it",
            &["-T", "%DIR%/../{upload,data}.{txt,json}", "%BASE%/echo/"],
        ),
        with_stdin(
            // A pipe cannot go back: curl's 65, in curl.rs.
            "upload: stdin redirected from a file goes again after a 307, from its start",
            "twice\n",
            &["-L", "-T", "-", "%BASE%/redirect307"],
        ),
        with_stdin(
            "upload: --http1.0 cannot chunk a stream",
            "x",
            &["--http1.0", "-T", "-", "%BASE%/echo"],
        ),
        case(
            "upload: -T cannot go with -I: the transfer before it runs, then exit 2",
            &[
                "-I",
                "%BASE%/hello",
                "-T",
                "",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo/",
            ],
        ),
        case(
            "upload: -T cannot go with -d, -F or -G's data",
            &[
                "-d",
                "a=b",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
                "--next",
                "-F",
                "a=b",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        // -C and -r on an upload shape what it sends (Content-Range), not the response.
        case(
            "upload: -C N sends the rest of the file with a Content-Range",
            &[
                "-w",
                "|%{size_upload}",
                "-C",
                "5",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "upload: -C - and -r send the whole file with a Content-Range",
            &[
                "-C",
                "-",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
                "--next",
                "-r",
                "2-4",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "upload: -C at the file's end is 18, and the next URL still runs",
            &[
                "-C",
                "14",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
                "%BASE%/hello",
            ],
        ),
        case(
            "upload: a -T file that cannot be opened ends the run with 26",
            &[
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo/",
                "-T",
                "%DIR%/missing.txt",
                "%BASE%/echo/",
                "%BASE%/hello",
            ],
        ),
        // Expect: 100-continue, asked for by an upload and by data over 1 MiB (HTTP/1.1 only);
        // the server says go before reading the body, as nginx does.
        case(
            "expect: an upload asks for 100 Continue, and -i shows it",
            &["-i", "-T", "%DIR%/../upload.txt", "%BASE%/echo"],
        ),
        case(
            "expect: data over 1 MiB asks, a short POST does not",
            &[
                "-w",
                "%{size_upload}",
                "-d",
                "@%DIR%/../big.txt",
                "-o",
                "%DIR%/big.out",
                "%BASE%/echo",
                "--next",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        case(
            "expect: not under --http1.0, nor when -H removes it",
            &[
                "--http1.0",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
                "--next",
                "-H",
                "Expect:",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "expect: -H asks for it on a short POST; --expect100-timeout is taken",
            &[
                "--expect100-timeout",
                "2.5",
                "-H",
                "Expect: 100-continue",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "expect: trace-ascii of an upload that waits for 100 Continue",
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-T",
                "%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "expect: trace-ascii of -d data that -H makes wait for 100 Continue",
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-H",
                "Expect: 100-continue",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii of an upload",
            // Without `Expect: 100-continue` (see the cases above for it).
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-H",
                "Expect:",
                "-T",
                "%DIR%/../headers.txt",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii through a redirect",
            // Without -i: with the trace on stdout too, curl writes each header line after its
            // block, poolcurl the head after the last block.
            &[
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "-L",
                "%BASE%/redirect",
            ],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii after -v wins",
            &["-v", "--trace-ascii", "-", "-A", "parity", "%BASE%/mixed"],
        ),
        case(
            "-v after trace-ascii wins",
            &["--trace-ascii", "-", "-v", "%BASE%/hello"],
        ),
        with(
            Extra::TraceWithoutInfo,
            "trace-ascii is global across --next",
            &[
                "-A",
                "parity",
                "%BASE%/hello",
                "--next",
                "--trace-ascii",
                "-",
                "-A",
                "parity",
                "%BASE%/mixed",
            ],
        ),
        with(
            Extra::VerboseDataNotes,
            "verbose data notes",
            &["-v", "-d", "a=b", "-o", "/dev/null", "%BASE%/echo"],
        ),
        case("glob braces", &["%BASE%/files/{a,b}"]),
        // A glob's transfers share their URL's %{urlnum}; -o's without a URL count as URLs.
        case(
            "urlnum of globs and groups",
            &[
                "-w",
                "%{urlnum} ",
                "%BASE%/files/[1-2]",
                "%BASE%/hello",
                "--next",
                "-o",
                "%DIR%/a",
                "-o",
                "%DIR%/b",
                "-w",
                "%{urlnum} ",
                "%BASE%/files/{x,y}",
                "--next",
                "-w",
                "%{urlnum}",
                "%BASE%/hello",
            ],
        ),
        case(
            "glob range to files",
            &["-o", "%DIR%/n_#1.txt", "%BASE%/files/[1-3]"],
        ),
        case("globoff", &["-g", "-w", "%{http_code}", "%BASE%/files/x"]),
        Case {
            extra: Extra::Stderr,
            ..case("empty braces", &["-sS", "http://h.test/files/{}"])
        },
        // `[]` and a bracketed IPv6 address are text wherever they stand; a malformed range is
        // curl's message, its caret where curl's reading stopped.
        case("empty brackets are text", &["%BASE%/echo?ids[]=1&ids[]=2"]),
        Case {
            extra: Extra::Stderr,
            ..case(
                "malformed ranges",
                &[
                    "-sS",
                    "http://h.test/x[1-3:x]",
                    "--next",
                    "-sS",
                    "http://h.test/x{a{b}}",
                    "--next",
                    "-sS",
                    "http://h.test/x[-]",
                    "--next",
                    "-sS",
                    "http://h.test/x[a-",
                ],
            )
        },
        // -I and -F are settled while the command line is read: the later one is badly used
        // (printed under -s too). Data against them ends the run when the group's first
        // transfer is made, after the groups before it.
        Case {
            extra: Extra::Stderr,
            ..case(
                "head after a form",
                &["-s", "-F", "a=b", "-I", "%BASE%/echo"],
            )
        },
        Case {
            extra: Extra::Warnings,
            ..case("form after head", &["-I", "-F", "a=b", "%BASE%/echo"])
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "form field without a value",
                &["-s", "-F", "a", "%BASE%/echo"],
            )
        },
        Case {
            extra: Extra::Warnings,
            ..case("data with head", &["-I", "-d", "x", "%BASE%/echo"])
        },
        Case {
            extra: Extra::Warnings,
            ..case("data with a form", &["-d", "x", "-F", "a=b", "%BASE%/echo"])
        },
        case(
            "head of a get with data",
            &["-G", "-I", "-d", "x", "%BASE%/hello"],
        ),
        // --no-head asks for a GET: -I is badly used beside it, data without -G refused;
        // it turns -i off.
        Case {
            extra: Extra::Warnings,
            ..case("head then no head", &["-I", "--no-head", "%BASE%/echo"])
        },
        Case {
            extra: Extra::Warnings,
            ..case(
                "no head with data",
                &["--no-head", "-d", "x", "%BASE%/echo"],
            )
        },
        case(
            "no head turns include off",
            &["-i", "--no-head", "-G", "-d", "x", "%BASE%/echo"],
        ),
        case(
            "data with head in a later group",
            &[
                "%BASE%/hello",
                "--next",
                "-I",
                "-d",
                "x",
                "%BASE%/hello",
                "--next",
                "%BASE%/hello",
            ],
        ),
        Case {
            extra: Extra::Stderr,
            ..case(
                "remote header name with headers shown",
                &["-s", "-J", "-i", "-O", "%BASE%/hello"],
            )
        },
        case("url flag", &["--url", "%BASE%/hello", "%BASE%/files/z"]),
        case(
            "retry transient",
            &["--retry", "1", "--retry-delay", "0", "%BASE%/flaky"],
        ),
        // Each failed attempt's error is reported, then curl's warning, which counts the
        // retries left before taking one.
        Case {
            extra: Extra::Stderr,
            ..case(
                "retry reports every attempt's error",
                &[
                    "-sS",
                    "-f",
                    "--retry",
                    "1",
                    "--retry-all-errors",
                    "%BASE%/status/404",
                ],
            )
        },
        Case {
            extra: Extra::Warnings,
            ..case(
                "retry warnings count what is left",
                &[
                    "-f",
                    "--retry",
                    "1",
                    "--retry-delay",
                    "1",
                    "--retry-all-errors",
                    "%BASE%/status/404",
                ],
            )
        },
        case(
            "no retry without flag",
            &["-w", "%{http_code}", "%BASE%/flaky"],
        ),
        case(
            "parallel",
            &[
                "-Z",
                "-o",
                "%DIR%/p1",
                "-o",
                "%DIR%/p2",
                "%BASE%/files/p1",
                "%BASE%/files/p2",
            ],
        ),
        // -Z given in a later group still applies to the whole command line, and each group
        // keeps its own options under it (output files keep the comparison independent of
        // the order the transfers finish in; that they overlap is not visible here).
        case(
            "parallel with next",
            &[
                "-o",
                "%DIR%/g1",
                "%BASE%/files/g1",
                "--next",
                "-Z",
                "-d",
                "k=v",
                "-o",
                "%DIR%/g2",
                "%BASE%/echo",
            ],
        ),
        case(
            "http 1.0",
            &["--http1.0", "-w", "%{http_version}", "%BASE%/echo"],
        ),
        case("max redirs", &["-L", "--max-redirs", "1", "%BASE%/loop"]),
        // %{url_effective} shows the URL's credentials and fragment, as curl's does.
        case(
            "effective url with credentials and a fragment",
            &[
                "-w",
                "%{url_effective}",
                "http://u:p@127.0.0.1:%PORT%/hello#top",
            ],
        ),
        // The port as a number, as curl writes the URL back.
        case(
            "effective url with a port written with leading zeros",
            &[
                "-w",
                " %{url_effective}",
                "http://127.0.0.1:000%PORT%/hello",
            ],
        ),
        case(
            "effective url after a relative redirect keeps the credentials",
            &[
                "-L",
                "-w",
                "%{url_effective}",
                "http://u:p@127.0.0.1:%PORT%/redirect",
            ],
        ),
        case(
            "empty location",
            &[
                "-L",
                "-w",
                "%{http_code} %{redirect_url}",
                "%BASE%/empty-location",
            ],
        ),
        // Of several, the first that is not empty.
        case(
            "several locations",
            &["-w", "%{redirect_url}", "%BASE%/locations"],
        ),
        case(
            "several locations followed",
            &["-L", "-w", "%{url_effective}", "%BASE%/locations"],
        ),
        case(
            "location with raw utf-8",
            &["-L", "-w", "%{url_effective}", "%BASE%/utf8-location"],
        ),
        case(
            "path with raw utf-8",
            &[
                "-g",
                "-A",
                "x",
                "-w",
                "%{url_effective} %{size_request}",
                "%BASE%/echo/é",
            ],
        ),
        case(
            "max redirs names the redirect it did not follow",
            &[
                "-sL",
                "--max-redirs",
                "0",
                "-w",
                "%{http_code} %{num_redirects} %{redirect_url}",
                "%BASE%/redirect",
            ],
        ),
    ]
}
