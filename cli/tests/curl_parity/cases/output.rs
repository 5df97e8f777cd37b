//! Parity cases: what is printed: --stderr, URL spellings, paths, -v, -w.

use crate::{Case, Extra, Server, case, with, with_server};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // --stderr: the messages go to the file (or stdout with "-"); %{stderr} and the
        // unknown-variable warning stay on the process's stderr, as in curl 7.88.
        case(
            "stderr to a file",
            &["-sS", "--stderr", "%DIR%/err.txt", "http://exa mple/"],
        ),
        case(
            "stderr to stdout",
            &["-sS", "--stderr", "-", "http://exa mple/"],
        ),
        case("trace-time without -v", &["--trace-time", "%BASE%/hello"]),
        case(
            "stderr keeps write-out's stderr",
            &[
                "-s",
                "--stderr",
                "-",
                "-w",
                "%{stderr}not here%{bogus}",
                "%BASE%/hello",
            ],
        ),
        case(
            "stderr, the last one wins",
            &[
                "--stderr",
                "%DIR%/first.txt",
                "-sS",
                "http://exa mple/",
                "--stderr",
                "%DIR%/second.txt",
            ],
        ),
        case("port with a sign", &["http://127.0.0.1:+%PORT%/hello"]),
        case("unsupported scheme", &["nosuch://127.0.0.1/"]),
        // curl takes one to three slashes after the scheme's colon; four are malformed.
        case(
            "one slash after the scheme",
            &["http:/127.0.0.1:%PORT%/hello"],
        ),
        case(
            "three slashes after the scheme",
            &["http:///127.0.0.1:%PORT%/hello"],
        ),
        case(
            "four slashes after the scheme",
            &["http:////127.0.0.1:%PORT%/hello"],
        ),
        case("unknown scheme with one slash", &["foo:/127.0.0.1/"]),
        // An empty path goes out as `/`, also before a fragment or a query.
        case("fragment right after the authority", &["%BASE%#frag"]),
        case("query right after the authority", &["%BASE%?q=1#frag"]),
        // Dot segments resolve before the request goes out, unless --path-as-is.
        case("dot segments", &["%BASE%/a/./b/../../echo/./x?q=/../y"]),
        case("path as is", &["--path-as-is", "%BASE%/echo/a/./b/../c"]),
        case("unknown flag", &["--bogus-flag", "%BASE%/hello"]),
        // Issue 19: -v shows Host first, as sent.
        with(
            Extra::VerboseHeaderOrder,
            "verbose header order",
            &["-v", "%BASE%/hello"],
        ),
        // Over HTTP/2 -v shows the names in lower case (the :authority as Host), as curl does.
        with_server(
            Server::H2c,
            Extra::VerboseHeaderOrder,
            "verbose header names over h2c",
            &[
                "-v",
                "--http2-prior-knowledge",
                "-H",
                "X-Custom: 1",
                "-H",
                "accept: text/plain",
                "-e",
                "http://r/",
                "-u",
                "a:b",
                "%BASE%/hello",
            ],
        ),
        // -H names go (and show) as typed, a default replaced in place included.
        with(
            Extra::VerboseHeaderOrder,
            "verbose -H names as typed",
            &[
                "-v",
                "-H",
                "x-Mixed-CASE: 1",
                "-H",
                "user-agent: parity",
                "-H",
                "X-Title: 2",
                "%BASE%/hello",
            ],
        ),
        // Issue 19: -w json, header_json, stderr; unknown variables warn.
        case(
            "write-out header_json",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{header_json}",
                "%BASE%/headers",
            ],
        ),
        // %header{} of a repeated field: its first value.
        case(
            "write-out header of a repeated field",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%header{x-two}|%header{X-One}|%header{none}",
                "%BASE%/headers",
            ],
        ),
        with(
            Extra::JsonFields,
            "write-out json",
            &["-s", "-o", "/dev/null", "-w", "%{json}", "%BASE%/hello"],
        ),
        case(
            "write-out stderr",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "a%{stderr}b%{stdout}c",
                "%BASE%/hello",
            ],
        ),
        with(
            Extra::UnknownVariableWarning,
            "write-out unknown",
            &["-s", "-w", "[%{bogus}]", "%BASE%/hello"],
        ),
        case(
            "write-out basics",
            &[
                "-w",
                "\\n%{http_code} %{size_download} %{content_type} %{method} %{num_headers}",
                "%BASE%/hello",
            ],
        ),
        case("user agent", &["-A", "parity/1", "%BASE%/echo"]),
        case("referer", &["-e", "http://from.test/", "%BASE%/echo"]),
        case("basic auth", &["-u", "user:secret", "%BASE%/echo"]),
        case(
            "url credentials",
            &["http://us%40r:p%3Ass@127.0.0.1:%PORT%/echo"],
        ),
        case("data", &["-d", "a=1", "-d", "b=2", "%BASE%/echo"]),
        case(
            "data urlencode",
            &[
                "--data-urlencode",
                "q=hello world&more",
                "--data-urlencode",
                "=x/y",
                "%BASE%/echo",
            ],
        ),
        case(
            "get with data",
            &[
                "-G",
                "-d",
                "a=1",
                "--data-urlencode",
                "b=c d",
                "%BASE%/echo",
            ],
        ),
        // A data file that opens and cannot be read (a directory) fails the byte readers, and
        // -d reads it as empty text. (One that does not open fails as curl 8.3 and later
        // fail it, where 7.88 warned and sent nothing: `curl.rs` holds that.)
        Case {
            extra: Extra::Stderr,
            ..case(
                "data directory read as text",
                &[
                    "--no-progress-meter",
                    "-d",
                    "@.",
                    "--data-urlencode",
                    "a=b",
                    "%BASE%/echo",
                ],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "data file that does not read",
                &["-s", "--data-binary", "@.", "%BASE%/echo"],
            )
        },
        case("json", &["--json", "{\"a\":1}", "%BASE%/echo"]),
        // --json's two headers go after the -H ones, unless -H names them (curl appends them
        // to its -H list).
        Case {
            extra: Extra::VerboseHeaderOrder,
            ..case(
                "json headers after -H",
                &[
                    "-v",
                    "--json",
                    "[1]",
                    "-H",
                    "X-A: 1",
                    "-H",
                    "Accept: text/plain",
                    "%BASE%/echo",
                ],
            )
        },
        case("put method", &["-X", "PUT", "-d", "x", "%BASE%/echo"]),
        case(
            "form",
            &[
                "-F",
                "name=value",
                "-F",
                "file=@%DIR%/../upload.txt",
                "%BASE%/echo",
            ],
        ),
        case(
            "upload",
            &["-H", "Expect:", "-T", "%DIR%/../upload.txt", "%BASE%/echo/"],
        ),
    ]
}
