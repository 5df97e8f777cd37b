//! Parity cases: what a request sends and when: cookies, -z, -J, credentials on redirects, pacing,
//! --resolve.

use crate::{Case, Extra, case};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // -j: the jar's session cookies stay behind.
        case(
            "cookie jar loaded",
            &["-b", "%DIR%/../jar.txt", "%BASE%/echo"],
        ),
        // A cookie string goes after the engine's cookies, as curl appends it.
        case(
            "cookie string beside a jar",
            &["-b", "z=9", "-b", "%DIR%/../jar.txt", "%BASE%/echo"],
        ),
        // -H Cookie: the engine's cookies still go, on a line of their own before it; the -b
        // strings do not (nor with -H 'Cookie:').
        case(
            "cookie jar beside -H Cookie",
            &[
                "-b",
                "%DIR%/../jar.txt",
                "-b",
                "s=1",
                "-H",
                "Cookie: hdr=1",
                "%BASE%/echo",
            ],
        ),
        case(
            "cookie jar with -H Cookie removed",
            &[
                "-b",
                "%DIR%/../jar.txt",
                "-b",
                "s=1",
                "-H",
                "Cookie:",
                "%BASE%/echo",
            ],
        ),
        case(
            "cookie jar without session cookies",
            &["-j", "-b", "%DIR%/../jar.txt", "%BASE%/echo"],
        ),
        // -z: the condition's header (a date in curl's manual spellings, a file's time, or
        // "-" for unmodified), and curl's own 304 when the server answers 200 anyway.
        case(
            "time cond date",
            &["-z", "20 Oct 2015", "-H", "X-After: 1", "%BASE%/echo"],
        ),
        // curl's date grammar: a zone by name or offset, the month first, a two-digit year,
        // a date before 1970, and an ISO date, which curl does not take for one.
        case(
            "time cond with a zone name",
            &["-z", "21 Oct 2015 07:28:00 PST", "%BASE%/echo"],
        ),
        case(
            "time cond with an offset",
            &["-z", "21-Oct-2015 07:28 +0200", "%BASE%/echo"],
        ),
        case(
            "time cond month first, two-digit year",
            &["-z", "Oct 21 15", "%BASE%/echo"],
        ),
        case(
            "time cond before 1970",
            &["-z", "21 Oct 1969", "%BASE%/echo"],
        ),
        case(
            "time cond ISO date is none",
            &["-z", "2015-10-21", "-w", " %{http_code}", "%BASE%/echo"],
        ),
        case(
            "time cond unmodified",
            &["-z", "-Wed, 21 Oct 2015 07:28:00 GMT", "%BASE%/echo"],
        ),
        case(
            "time cond from a file",
            &["-z", "%DIR%/../stamp.txt", "%BASE%/echo"],
        ),
        case(
            "time cond met",
            &[
                "-z",
                "2015-10-20",
                "-o",
                "%DIR%/out",
                "-w",
                "%{http_code} %{size_download}",
                "%BASE%/dated",
            ],
        ),
        case(
            "time cond not met is a simulated 304",
            &[
                "-z",
                "22 Oct 2015",
                "-o",
                "%DIR%/out",
                "-w",
                "%{http_code} %{size_download}",
                "%BASE%/dated",
            ],
        ),
        case(
            "time cond that is neither date nor file",
            &["-z", "not a date", "-w", " %{http_code}", "%BASE%/hello"],
        ),
        // -J: the file named after Content-Disposition, without directories, never over an
        // existing file; -o still wins, and without a filename the URL names the file.
        case(
            "remote header name",
            &["-OJ", "-w", "%{filename_effective}", "%BASE%/attachment"],
        ),
        case(
            "remote header name in an output dir",
            &[
                "-OJ",
                "--output-dir",
                "%DIR%/d",
                "--create-dirs",
                "-w",
                "%{filename_effective}",
                "%BASE%/attachment-plain",
            ],
        ),
        case(
            "remote header name without directories",
            &["-OJ", "%BASE%/attachment-path"],
        ),
        case(
            "remote header name with -i",
            &["-OJ", "-i", "%BASE%/attachment"],
        ),
        case(
            "remote header name without a name",
            &["-OJ", "%BASE%/hello"],
        ),
        case(
            "remote header name never overwrites",
            &["-OJ", "%BASE%/attachment", "-OJ", "%BASE%/attachment"],
        ),
        case(
            "remote header name loses to -o",
            &["-J", "-o", "given.txt", "%BASE%/attachment"],
        ),
        // A URL without a file name: -O fails before the transfer and ends the run (after
        // -w); with -J the response may name the file, and without a name the write fails.
        Case {
            extra: Extra::Stderr,
            ..case(
                "remote name of a directory",
                &[
                    "-sS",
                    "-O",
                    "-w",
                    "[%{exitcode} %{errormsg} %{url_effective}]",
                    "%BASE%/dir/",
                    "%BASE%/hello",
                    "--next",
                    "%BASE%/hello",
                ],
            )
        },
        case(
            "remote header name of a directory",
            &["-OJ", "%BASE%/named/"],
        ),
        Case {
            extra: Extra::Stderr,
            ..case(
                "remote header name of a directory without a name",
                &["-sS", "-OJ", "%BASE%/dir/"],
            )
        },
        // Credentials stay behind on a redirect to another host name; with --location-trusted
        // they follow (and -L is implied). (The route builds its Location from the Host the
        // request names, so no case here sets one.)
        case(
            "redirect to another host drops credentials",
            &[
                "-L",
                "-u",
                "user:pw",
                "-H",
                "Cookie: c=1",
                "%BASE%/to-localhost",
            ],
        ),
        case(
            "location trusted keeps credentials",
            &[
                "--location-trusted",
                "-u",
                "user:pw",
                "-H",
                "Cookie: c=1",
                "%BASE%/to-localhost",
            ],
        ),
        // Pace flags on a transfer they do not hold back (their effect is timed in
        // cli/tests/curl.rs).
        case(
            "limit rate and speed limit",
            &["--limit-rate", "100K", "-Y", "1", "-y", "5", "%BASE%/hello"],
        ),
        Case {
            extra: Extra::Stderr,
            ..case(
                "limit rate bad value",
                &["--limit-rate", "fast", "%BASE%/hello"],
            )
        },
        // Issue 19: a malformed --resolve exits 49.
        case("malformed resolve", &["--resolve", "bad", "%BASE%/hello"]),
        case(
            "resolve",
            &[
                "--resolve",
                "parity.test:%PORT%:127.0.0.1",
                "http://parity.test:%PORT%/echo",
            ],
        ),
        // A host in numbers other than dotted decimal goes as dotted decimal (Host, and
        // %{url_effective}); an internationalized name is looked up (here: --resolve'd) in its
        // ASCII form.
        case(
            "numeric hosts are dotted",
            &[
                "-w",
                "%{url_effective}\\n",
                "http://127.1:%PORT%/echo",
                "http://2130706433:%PORT%/echo",
                "http://0x7f.0.1:%PORT%/echo",
            ],
        ),
        case(
            "an international name is looked up in ASCII",
            &[
                "--resolve",
                "xn--n-nga1b.example:%PORT%:127.0.0.1",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{num_connects}\\n",
                "http://ünï.example:%PORT%/echo",
            ],
        ),
    ]
}
