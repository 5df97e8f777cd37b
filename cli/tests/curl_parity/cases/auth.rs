//! Parity cases: server authentication: .netrc, --digest, --aws-sigv4, --ntlm, and what -v says of
//! it; the password `-u USER` asks for.

use crate::{Case, Extra, case, with, with_stdin};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // -u USER without a password: the prompt on stderr (under -s too), the answer read once
        // from stdin (no terminal here), its last byte dropped; one prompt per group, numbered
        // when there are several (the first read takes all of stdin, the second finds nothing).
        Case {
            extra: Extra::Stderr,
            ..with_stdin(
                "-u without a password asks for one",
                "secret\n",
                &["-s", "-u", "bob", "%BASE%/echo"],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..with_stdin(
                "-u without a password in each group",
                "one\ntwo\n",
                &[
                    "-s",
                    "-u",
                    "bob",
                    "%BASE%/echo",
                    "--next",
                    "-u",
                    "carol;x",
                    "%BASE%/echo",
                ],
            )
        },
        Case {
            extra: Extra::Stderr,
            ..with_stdin(
                "-u with a password or a bearer token asks nothing",
                "unread\n",
                &[
                    "-s",
                    "-u",
                    "bob:pw",
                    "%BASE%/echo",
                    "--next",
                    "-u",
                    "carol",
                    "--oauth2-bearer",
                    "token",
                    "%BASE%/echo",
                ],
            )
        },
        // .netrc: the host's first entry, the URL's user's own, the default; -u and
        // --netrc-optional's URL password win; curl's dialect (quotes, comments, keywords in
        // any case); a quote left open exits 26.
        case(
            "netrc first entry",
            &["--netrc-file", "%DIR%/../netrc.txt", "%BASE%/echo"],
        ),
        case(
            "netrc entry of the url's user",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc password over the url's",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob:pw@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc optional keeps the url's password",
            &[
                "--netrc-optional",
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "http://bob:pw@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "netrc under -u",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "-u",
                "x:y",
                "%BASE%/echo",
            ],
        ),
        case(
            "netrc default entry",
            &[
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "netrc file missing",
            &["--netrc-file", "%DIR%/../no-netrc.txt", "%BASE%/echo"],
        ),
        case(
            "netrc dialect",
            &["--netrc-file", "%DIR%/../netrc-dialect.txt", "%BASE%/echo"],
        ),
        case(
            "netrc open quote",
            &["--netrc-file", "%DIR%/../netrc-bad.txt", "%BASE%/echo"],
        ),
        // Only -u keeps curl from reading the file: a signature's -u does, a bearer does not.
        case(
            "netrc open quote under sigv4's -u",
            &[
                "--netrc-file",
                "%DIR%/../netrc-bad.txt",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "%BASE%/sigv4",
            ],
        ),
        case(
            "netrc open quote beside a bearer",
            &[
                "--netrc-file",
                "%DIR%/../netrc-bad.txt",
                "--oauth2-bearer",
                "tok",
                "%BASE%/echo",
            ],
        ),
        case(
            "netrc with digest",
            &[
                "--digest",
                "--netrc-file",
                "%DIR%/../netrc-digest.txt",
                "%BASE%/digest",
            ],
        ),
        // --digest: a challenge answered once, the data sent with the answer only (the
        // server recomputes each answer from the password).
        case(
            "digest",
            &["--digest", "-u", "alice:s3cret", "%BASE%/digest?x=1"],
        ),
        case(
            "digest with -i",
            &["-i", "--digest", "-u", "alice:s3cret", "%BASE%/digest"],
        ),
        case(
            "digest with data",
            &[
                "--digest",
                "-u",
                "alice:s3cret",
                "-d",
                "hello",
                "-w",
                "%{http_code} %{size_upload} %{num_connects}\\n",
                "%BASE%/digest",
            ],
        ),
        case(
            "digest, wrong password",
            &[
                "--digest",
                "-u",
                "alice:wrong",
                "-w",
                "%{http_code} %{num_connects}\\n",
                "%BASE%/digest",
            ],
        ),
        case(
            "digest, wrong password with -f",
            &["-f", "--digest", "-u", "alice:wrong", "%BASE%/digest"],
        ),
        case("digest without a user", &["--digest", "%BASE%/digest"]),
        // --aws-sigv4: a date and a Host given with -H make the signature the same in both
        // runs (each runs against a server of its own port; curl sends the date header twice),
        // and /echo shows it; signatures made with the clock and the URL's host are checked by
        // /sigv4, as a server checks them.
        case(
            "sigv4, a given date and curl's header rules",
            &[
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20150830T123600Z",
                "-H",
                "Host: sigv4.test",
                "-H",
                "X-B:  a   b ",
                "-H",
                "X-B-C: 1",
                "-H",
                "Accept:",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, data and a query as given",
            &[
                "--aws-sigv4",
                "aws:amz:eu-west-1:s3",
                "-u",
                "AK:SE:CRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "-d",
                "a=1&b=2",
                "%BASE%/echo/p?z=1&a=2",
            ],
        ),
        case(
            "sigv4, --json and a given payload hash",
            &[
                "--aws-sigv4",
                "aws:amz:eu-west-1:s3",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "-H",
                "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD",
                "--json",
                "{\"a\":1}",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, a Date header and -F",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "-H",
                "Date: Thu, 01 Jan 2015 00:00:00 GMT",
                "-H",
                "Host: sigv4.test",
                "-F",
                "f=v",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4 with -G, over --digest, the URL's key",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "--digest",
                "-G",
                "-d",
                "q=1",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "http://AK:SECRET@127.0.0.1:%PORT%/echo",
            ],
        ),
        case(
            "sigv4, service and region from the host name",
            &[
                "--aws-sigv4",
                "aws:amz",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Amz-Date: 20230101T000000Z",
                "-H",
                "Host: sigv4.test",
                "--resolve",
                "svc.reg.localhost:%PORT%:127.0.0.1",
                "http://svc.reg.localhost:%PORT%/echo",
            ],
        ),
        case(
            "sigv4 signed now, checked by the server",
            &[
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "-H",
                "X-Custom:  spaced   out ",
                "%BASE%/sigv4?b=2&a=1",
            ],
        ),
        case(
            "sigv4 again after a redirect to the same host",
            &[
                "-L",
                "--aws-sigv4",
                "aws:amz:us-east-1:svc",
                "-u",
                "AK:SECRET",
                "%BASE%/sigv4-redirect",
            ],
        ),
        case(
            "sigv4 not sent to another host",
            &[
                "-L",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "%BASE%/to-localhost",
            ],
        ),
        case(
            "sigv4 with a wrong secret is refused",
            &[
                "-f",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:WRONG",
                "%BASE%/sigv4",
            ],
        ),
        case(
            "sigv4 without credentials signs nothing",
            &["--aws-sigv4", "aws:amz:r:s", "%BASE%/echo"],
        ),
        case(
            "sigv4 gives way to -H Authorization",
            &[
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "-H",
                "Authorization: Token t",
                "%BASE%/echo",
            ],
        ),
        case(
            "sigv4, no service in the argument or the host name",
            &[
                "--aws-sigv4",
                "aws",
                "-u",
                "AK:SECRET",
                "http://localhost:%PORT%/echo",
            ],
        ),
        case(
            "sigv4, no region in the host name",
            &[
                "--aws-sigv4",
                "aws",
                "-u",
                "AK:SECRET",
                "--resolve",
                "svc.localhost:%PORT%:127.0.0.1",
                "http://svc.localhost:%PORT%/echo",
            ],
        ),
        // --ntlm: the negotiate message first (no data), the challenge answered on the same
        // connection. /ntlm's answer is NTLMv1 (no randomness: the server quotes it whole),
        // /ntlm2's NTLMv2, checked by the server.
        case(
            "ntlm v1, quoted whole",
            &["--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm"],
        ),
        case(
            "ntlm v2 with a domain and data",
            &[
                "--ntlm",
                "-u",
                "CORP\\alice:s3cret",
                "-d",
                "a=1",
                "%BASE%/ntlm2",
            ],
        ),
        case(
            "ntlm v2, -i shows both heads",
            &["-i", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        case(
            "ntlm, the URL's credentials",
            &["--ntlm", "http://alice:s3cret@127.0.0.1:%PORT%/ntlm2"],
        ),
        case(
            "ntlm, a wrong password",
            &["--ntlm", "-u", "alice:wrong", "%BASE%/ntlm2"],
        ),
        case(
            "ntlm, a wrong password with -f",
            &["-f", "--ntlm", "-u", "alice:wrong", "%BASE%/ntlm2"],
        ),
        case("ntlm without a user", &["--ntlm", "%BASE%/ntlm2"]),
        case(
            "ntlm, two URLs",
            &[
                "--ntlm",
                "-u",
                "alice:s3cret",
                "%BASE%/ntlm2",
                "%BASE%/ntlm",
            ],
        ),
        case(
            "ntlm after --digest: the last wins",
            &["--digest", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the NTLM user for each message",
            &["-v", "--ntlm", "-u", "alice:s3cret", "%BASE%/ntlm2"],
        ),
        // -v names the scheme and the user of each request's credentials.
        with(
            Extra::VerboseAuth,
            "-v names Basic credentials, for every request",
            &["-v", "-u", "a:b", "%BASE%/echo", "%BASE%/hello"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the URL's user",
            &["-v", "http://us%40er:pw@127.0.0.1:%PORT%/echo"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names a bearer token's user",
            &["-v", "--oauth2-bearer", "tok", "%BASE%/echo"],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the .netrc's user beside a bearer",
            &[
                "-v",
                "--netrc-file",
                "%DIR%/../netrc.txt",
                "--oauth2-bearer",
                "tok",
                "%BASE%/echo",
            ],
        ),
        with(
            Extra::VerboseAuth,
            "-v names the signing key",
            &[
                "-v",
                "--aws-sigv4",
                "aws:amz:r:s",
                "-u",
                "AK:SECRET",
                "%BASE%/sigv4",
            ],
        ),
        case(
            "sigv4, an empty first provider",
            &["--aws-sigv4", ":amz", "-u", "AK:SECRET", "%BASE%/echo"],
        ),
    ]
}
