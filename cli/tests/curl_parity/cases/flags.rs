//! Parity cases: the flags curl users reach for, --max-filesize, servers that lie, forwarded
//! requests' headers.

use crate::{Case, Extra, case, h2c, with};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // Values curl refuses or bends: -C wants a number or "-" (exit 2); --parallel-max 0 is
        // the default and above 300 is 300; a proxy scheme nobody speaks is exit 7.
        case(
            "continue-at that is not a number",
            &["-C", "x", "%BASE%/hello"],
        ),
        // -q is curl's "read no .curlrc" as the first argument, and taken anywhere else.
        case(
            "-q after another flag",
            &["-s", "-q", "-w", "%{http_code}", "%BASE%/hello"],
        ),
        case(
            "parallel-max 0 and 9999",
            &[
                "-Z",
                "--parallel-max",
                "0",
                "%BASE%/hello",
                "--parallel-max",
                "9999",
                "%BASE%/hello",
            ],
        ),
        case(
            "proxy with a scheme nobody speaks",
            &["-x", "socks9://127.0.0.1:1", "%BASE%/hello"],
        ),
        // Flags curl users reach for that are not in issue 19's list; -A pins the User-Agent
        // so that %{size_request} counts the same bytes for both programs.
        case(
            "fail shows the head with -i",
            &["-f", "-i", "%BASE%/status/404"],
        ),
        case(
            "fail shows the head with -I",
            &["-f", "-I", "%BASE%/status/500"],
        ),
        case(
            "size_request of a get, a post and a redirect",
            &[
                "-A",
                "x",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request} ",
                "%BASE%/hello",
                "-d",
                "a=b",
                "%BASE%/echo",
            ],
        ),
        case(
            "size_request across a redirect",
            &[
                "-A",
                "x",
                "-L",
                "-s",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request}",
                "%BASE%/redirect",
            ],
        ),
        case(
            "size_request of a form is the head",
            &[
                "-A",
                "x",
                "-F",
                "a=b",
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{size_request}",
                "%BASE%/echo",
            ],
        ),
        case(
            "headers from a file",
            &["-H", "@%DIR%/../headers.txt", "%BASE%/echo"],
        ),
        case(
            "a header without a colon is not sent",
            &["-H", "no colon here", "-H", "X-Kept: 1", "%BASE%/echo"],
        ),
        // No name before the colon, or more after a semicolon: curl sends nothing for them.
        case(
            "header lines that are not headers are not sent",
            &[
                "-H",
                ": x",
                "-H",
                "x; y",
                "-H",
                "y; ",
                "-H",
                "X-Kept: 1",
                "%BASE%/echo",
            ],
        ),
        case(
            "headers from a missing file",
            &["-H", "@%DIR%/../no-such-headers.txt", "%BASE%/echo"],
        ),
        case(
            "fail early stops at the first failure",
            &["--fail-early", "-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case(
            "without fail early the last transfer decides",
            &["-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case(
            "output dir",
            &[
                "--output-dir",
                "%DIR%/sub",
                "--create-dirs",
                "-o",
                "a.txt",
                "%BASE%/hello",
                "-O",
                "%BASE%/files/x",
            ],
        ),
        case(
            "output dir that does not exist",
            &["--output-dir", "%DIR%/none", "-o", "a.txt", "%BASE%/hello"],
        ),
        case(
            "no clobber numbers the names",
            &[
                "--no-clobber",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/hello",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/files/2",
                "-o",
                "%DIR%/c.txt",
                "%BASE%/files/3",
            ],
        ),
        case(
            "remove on error",
            &["--remove-on-error", "-o", "%DIR%/t.txt", "%BASE%/truncated"],
        ),
        case(
            "oauth2 bearer wins over user",
            &["--oauth2-bearer", "tok", "-u", "a:b", "%BASE%/echo"],
        ),
        case(
            "disallow username in url",
            &["--disallow-username-in-url", "http://u:p@127.0.0.1:9/"],
        ),
        // -H 'Host:' sends no Host at all (the pool adds none), and -v shows none.
        case("host removed", &["-H", "Host:", "%BASE%/echo"]),
        Case {
            extra: Extra::VerboseHeaderOrder,
            ..case("host removed, -v", &["-v", "-H", "Host:", "%BASE%/echo"])
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "proto denies http",
                &["-sS", "--proto", "=https", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "a scheme curl mode does not speak",
                &["-sS", "foo://%PORT%/"],
            )
        },
        case(
            "proto list with modifiers",
            &["--proto", "-all,+https,http", "%BASE%/hello"],
        ),
        case(
            "proto redir refuses the redirect's scheme",
            &["-L", "--proto-redir", "=https", "%BASE%/redirect"],
        ),
        case(
            "url query encodes and appends",
            &[
                "--url-query",
                "a=b c",
                "--url-query",
                "+d=e",
                "%BASE%/echo?q=1",
            ],
        ),
        case(
            "data ascii is data",
            &["--data-ascii", "k=v", "%BASE%/echo"],
        ),
        case(
            "post302 keeps the post",
            &[
                "-L",
                "--post302",
                "-d",
                "k=v",
                "-A",
                "x",
                "-w",
                "%{method}",
                "%BASE%/redirect",
            ],
        ),
        case(
            "request target instead of the URL's path",
            &["--request-target", "/echo/t?q=1", "%BASE%/hello"],
        ),
        case(
            "request target OPTIONS *",
            &["-X", "OPTIONS", "--request-target", "*", "%BASE%/hello"],
        ),
        case(
            "request target counted in size_request",
            &[
                "--request-target",
                "/echo/longer/target",
                "-o",
                "%DIR%/out.txt",
                "-w",
                "%{size_request} %{url_effective}",
                "-A",
                "agent",
                "%BASE%/hello",
            ],
        ),
        case(
            "request target through a forward proxy",
            &[
                "-x",
                "%BASE%",
                "--request-target",
                "/echo/via",
                "http://origin.test/hello",
            ],
        ),
        case(
            "proxy header on a forward proxy's request",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "X-Proxy-Header: 1",
                "http://origin.test/echo",
            ],
        ),
        case(
            "onerror and the variables of other protocols",
            &[
                "-w",
                "%{http_connect} [%{ftp_entry_path}] %{onerror}failed %{exitcode}",
                "%BASE%/hello",
                "%CLOSED%/",
            ],
        ),
        case(
            "etag save",
            &["--etag-save", "%DIR%/tag.txt", "%BASE%/etag"],
        ),
        case(
            "etag save to stdout, none sent",
            &["--etag-save", "-", "%BASE%/etag", "%BASE%/hello"],
        ),
        case(
            "etag save without an etag empties the file",
            &["--etag-save", "%DIR%/tag.txt", "%BASE%/hello"],
        ),
        case(
            "etag save that cannot be written",
            &["--etag-save", "%DIR%/no/dir/tag.txt", "%BASE%/etag"],
        ),
        case(
            "etag compare matches",
            &[
                "--etag-compare",
                "%DIR%/../etag.txt",
                "-w",
                "%{http_code}",
                "%BASE%/etag",
            ],
        ),
        // A 304 makes no output file: curl takes any 304 for an unmet condition.
        case(
            "etag compare matches into a file",
            &[
                "--etag-compare",
                "%DIR%/../etag.txt",
                "-o",
                "%DIR%/out.txt",
                "%BASE%/etag",
            ],
        ),
        case(
            "etag compare with a missing file",
            &["--etag-compare", "%DIR%/none.txt", "%BASE%/etag"],
        ),
        case(
            "etag compare with a missing file while saving",
            &[
                "--etag-compare",
                "%DIR%/tag.txt",
                "--etag-save",
                "%DIR%/tag.txt",
                "-w",
                "%{http_code}",
                "%BASE%/etag",
            ],
        ),
        case(
            "rate paces transfers",
            &["--rate", "50/s", "%BASE%/hello", "%BASE%/files/1"],
        ),
        Case {
            extra: Extra::Stderr,
            ..case("rate of zero", &["--rate", "0", "%BASE%/hello"])
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "rate unit curl does not know",
                &["--rate", "1/fortnight", "%BASE%/hello"],
            )
        },
        // Only the unit's first letter counts.
        case(
            "rate unit spelled out",
            &["--rate", "10/sec", "%BASE%/hello"],
        ),
        case(
            "flags that change nothing",
            &[
                "--basic",
                "--tcp-nodelay",
                "--no-npn",
                "--no-keepalive",
                "--styled-output",
                "--expect100-timeout",
                "2",
                "--no-progress-meter",
                "--happy-eyeballs-timeout-ms",
                "100",
                "%BASE%/hello",
            ],
        ),
        // --max-filesize: a body announced over the limit is refused (exit 63) with the head's
        // lines written but not its blank line, and no output file; the next URL still runs.
        case(
            "max filesize exceeded",
            &["--max-filesize", "3", "%BASE%/hello"],
        ),
        case(
            "max filesize include",
            &["-i", "--max-filesize", "3", "%BASE%/mixed"],
        ),
        case(
            "max filesize head",
            &["-I", "--max-filesize", "3", "%BASE%/hello"],
        ),
        case(
            "max filesize to a file",
            &["--max-filesize", "3", "-o", "%DIR%/big.txt", "%BASE%/hello"],
        ),
        case(
            "max filesize within the limit",
            &["--max-filesize", "1k", "%BASE%/hello"],
        ),
        case(
            "max filesize then the next url",
            &["--max-filesize", "3", "%BASE%/hello", "%BASE%/headers"],
        ),
        // Values curl reads as numbers or sizes are refused in its words, naming the option
        // as typed (a size after a warning that an earlier -s mutes).
        Case {
            extra: Extra::Stderr,
            ..case(
                "max filesize bad value",
                &["--max-filesize", "lots", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case(
                "max filesize bad unit",
                &["--max-filesize", "5q", "%BASE%/hello"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..case("max time bad value", &["-sm", "abc", "%BASE%/hello"])
        },
        Case {
            extra: Extra::Stderr,
            ..case("output name without length", &["-o", "", "%BASE%/hello"])
        },
        Case {
            extra: Extra::Stderr,
            ..case("max time too large", &["-m", "1e400", "%BASE%/hello"])
        },
        Case {
            extra: Extra::Stderr,
            ..case("retry negative", &["--retry", "-1", "%BASE%/hello"])
        },
        Case {
            extra: Extra::Stderr,
            ..case("continue-at negative", &["-C", "-5", "%BASE%/hello"])
        },
        case(
            "write-out to file output",
            &[
                "-o",
                "%DIR%/o.txt",
                "-w",
                "%{filename_effective}",
                "%BASE%/hello",
            ],
        ),
        // Servers that lie: curl's code for each part of a head that breaks HTTP/1 (the routes
        // under /lie/), and what curl reads though hyper would not by default.
        case("http/0.9 reply refused", &["%BASE%/lie/h09"]),
        case(
            "http/0.9 reply allowed",
            &[
                "--http0.9",
                "-i",
                "-w",
                "%{http_code} %{http_version} %{num_headers}",
                "%BASE%/lie/h09",
            ],
        ),
        with(
            Extra::VerboseResponseHead,
            "http/0.9 reply verbose",
            &["-v", "--http0.9", "%BASE%/lie/h09"],
        ),
        case("http/1.2 status line", &["%BASE%/lie/http12"]),
        case("letters for a status code", &["%BASE%/lie/status-letters"]),
        case("status code under 100", &["%BASE%/lie/status-099"]),
        case("header without colon", &["%BASE%/lie/no-colon"]),
        case("nul byte in a header", &["%BASE%/lie/nul"]),
        case("content-length not a number", &["%BASE%/lie/length"]),
        case("space before a header colon", &["%BASE%/lie/space-colon"]),
        case("folded header line", &["%BASE%/lie/folded"]),
        case("150 headers", &["-i", "%BASE%/lie/many"]),
        case("a head over 300 kB", &["%BASE%/lie/huge"]),
        case("1xx before the response", &["-i", "%BASE%/lie/continue"]),
        case(
            "status line without a phrase",
            &["-i", "-w", "%{size_header}", "%BASE%/lie/no-reason"],
        ),
        case(
            "status line oddly spaced",
            &["-i", "%BASE%/lie/spaced-reason"],
        ),
        // curl's Proxy-Connection on a forwarded request, and a --proxy-header that removes or
        // replaces it.
        case(
            "forward proxy request headers",
            &["-x", "%BASE%", "http://origin.test/echo"],
        ),
        // A forward proxy's credentials go after Host; only a --proxy-header replaces them.
        case(
            "forward proxy credentials",
            &[
                "-x",
                "http://u:p@127.0.0.1:%PORT%",
                "http://origin.test/fields",
            ],
        ),
        case(
            "forward proxy credentials beside -H",
            &[
                "-x",
                "http://u:p@127.0.0.1:%PORT%",
                "-H",
                "X-Mine: 1",
                "-H",
                "Proxy-Authorization: mine",
                "http://origin.test/fields",
            ],
        ),
        case(
            "forward proxy credentials replaced by --proxy-header",
            &[
                "-x",
                "http://u:p@127.0.0.1:%PORT%",
                "--proxy-header",
                "Proxy-Authorization: px",
                "http://origin.test/fields",
            ],
        ),
        case(
            "forward proxy without proxy-connection",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "Proxy-Connection:",
                "http://origin.test/echo",
            ],
        ),
        case(
            "forward proxy with proxy-connection close",
            &[
                "-x",
                "%BASE%",
                "--proxy-header",
                "Proxy-Connection: close",
                "http://origin.test/echo",
            ],
        ),
        case(
            "switched protocols",
            &[
                "-i",
                "-w",
                "[%{http_code} %{size_download}]",
                "%BASE%/lie/switch",
            ],
        ),
        case(
            "switched protocols without data",
            &["-w", "[%{http_code}]", "%BASE%/lie/switch-empty"],
        ),
        case(
            "switched protocols, head only",
            &["-I", "%BASE%/lie/switch"],
        ),
        case(
            "trailers included",
            &["-i", "-w", "%{size_header}", "%BASE%/lie/trailers"],
        ),
        // The -D file is written through at each head: an -o of the same file starts over
        // it, and ends with the body alone, as curl's.
        case(
            "dump header and output to one file",
            &["-D", "%DIR%/f.txt", "-o", "%DIR%/f.txt", "%BASE%/hello"],
        ),
        case(
            "trailers dumped",
            &["-D", "%DIR%/h.txt", "%BASE%/lie/trailers"],
        ),
        case(
            "two 1xx heads dumped",
            &["-D", "-", "-w", "%{size_header}", "%BASE%/lie/early-hints"],
        ),
        // -i and -D - both write to stdout: curl writes each header line to both in turn.
        case(
            "head included and dumped",
            &["-i", "-D", "-", "%BASE%/hello"],
        ),
        case(
            "1xx heads included and dumped",
            &["-i", "-D", "-", "%BASE%/lie/early-hints"],
        ),
        case(
            "trailers included and dumped",
            &["-i", "-D", "-", "%BASE%/lie/trailers"],
        ),
        with(
            Extra::VerboseResponseHead,
            "1xx heads verbose",
            &["-v", "%BASE%/lie/early-hints"],
        ),
        h2c("h2c response", &["--http2-prior-knowledge", "%BASE%/hello"]),
        h2c(
            "h2c stream reset",
            &["--http2-prior-knowledge", "%BASE%/reset"],
        ),
        h2c(
            "h2c trailers included",
            &["-i", "--http2-prior-knowledge", "%BASE%/trailers"],
        ),
        h2c(
            "h2c stream reset mid body",
            &["--http2-prior-knowledge", "%BASE%/reset-mid"],
        ),
        h2c(
            "h2c stream refused",
            &["--http2-prior-knowledge", "%BASE%/refused"],
        ),
    ]
}
