//! Parity cases: `--alt-svc`: alternatives an `https://` response names, used by the next
//! request to its origin, and the cache file written.

use crate::{Case, Extra, Server, case};

/// A case against the TLS server.
fn tls(name: &'static str, args: &[&'static str]) -> Case {
    Case {
        server: Server::Tls,
        ..case(name, args)
    }
}

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // The next request goes to the alternative (this server as 127.0.0.1) over a new
        // connection, says so in Alt-Used, and the one after it reuses that connection.
        tls(
            "alt-svc learned, then used",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "-w",
                "%{num_connects}\\n",
                "%TLS%/altsvc/use",
                "%TLS%/echo",
                "%TLS%/echo",
            ],
        ),
        // The alternative is where the connection goes: a closed port fails the request.
        tls(
            "alt-svc to a closed port",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/altsvc/closed",
                "%TLS%/hello",
            ],
        ),
        // h3 is kept but never used, http/1.1 is no protocol curl knows, persist is kept.
        tls(
            "alt-svc with several alternatives",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/altsvc/many",
                "%TLS%/echo",
            ],
        ),
        // `clear; ...`, sent over the alternative or over the origin's own connection, drops
        // the origin's alternatives: the next request goes back to the origin's connection.
        tls(
            "alt-svc cleared",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "-w",
                "%{num_connects}\\n",
                "%TLS%/altsvc/use",
                "%TLS%/altsvc/clear-params",
                "%TLS%/echo",
            ],
        ),
        tls(
            "alt-svc cleared over the origin's connection",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "--connect-to",
                "localhost:%PORT%:localhost:%PORT%",
                "%TLS%/altsvc/use",
                "%TLS%/altsvc/clear-params",
                "--next",
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/echo",
            ],
        ),
        // A bare `clear` clears nothing in curl 7.88 (it reads the line's CRLF into it).
        tls(
            "alt-svc bare clear",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "--connect-to",
                "localhost:%PORT%:localhost:%PORT%",
                "%TLS%/altsvc/use",
                "%TLS%/altsvc/clear",
            ],
        ),
        tls(
            "alt-svc with a bad port",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/altsvc/bad",
                "%TLS%/echo",
            ],
        ),
        // A redirect in the same transfer goes to the alternative; without a file, the next
        // transfer starts with an empty cache.
        tls(
            "alt-svc without a file",
            &[
                "--alt-svc",
                "",
                "--cacert",
                "%CA%",
                "-L",
                "%TLS%/altsvc/redirect",
                "%TLS%/echo",
            ],
        ),
        // A later --next group reads what an earlier one learned.
        tls(
            "alt-svc across --next",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/altsvc/use",
                "--next",
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "%TLS%/echo",
            ],
        ),
        // A --connect-to entry for the origin wins; so does -H Alt-Used.
        tls(
            "alt-svc beside --connect-to",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "--connect-to",
                "localhost:%PORT%:localhost:%PORT%",
                "%TLS%/altsvc/use",
                "%TLS%/echo",
            ],
        ),
        tls(
            "alt-svc with -H Alt-Used",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "--cacert",
                "%CA%",
                "-H",
                "Alt-Used: mine",
                "%TLS%/altsvc/use",
                "%TLS%/echo",
            ],
        ),
        // Over http://, nothing is taken in.
        case(
            "alt-svc over http",
            &[
                "--alt-svc",
                "%DIR%/altsvc.txt",
                "%BASE%/altsvc/use",
                "%BASE%/echo",
            ],
        ),
        Case {
            extra: Extra::VerboseAltSvc,
            ..tls(
                "alt-svc -v notes",
                &[
                    "-v",
                    "--alt-svc",
                    "%DIR%/altsvc.txt",
                    "--cacert",
                    "%CA%",
                    "%TLS%/altsvc/many",
                    "%TLS%/echo",
                    "%TLS%/echo",
                ],
            )
        },
    ]
}
