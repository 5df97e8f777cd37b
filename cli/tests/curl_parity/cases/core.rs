//! Parity cases: issue 19's bugs: exit codes, EOF mid-body, prior knowledge.

use crate::{Case, Server, case};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        case("get", &["%BASE%/hello"]),
        case("include", &["-i", "%BASE%/hello"]),
        case("head", &["-I", "%BASE%/hello"]),
        case("several urls", &["%BASE%/hello", "%BASE%/status/404"]),
        // Issue 19: the exit code is the last transfer's.
        case(
            "last transfer wins: fail then ok",
            &["%CLOSED%/", "%BASE%/hello"],
        ),
        case(
            "last transfer wins: ok then fail",
            &["%BASE%/hello", "%CLOSED%/"],
        ),
        case(
            "last transfer wins: -f 404 then ok",
            &["-f", "%BASE%/status/404", "%BASE%/hello"],
        ),
        case("fail 404", &["-f", "%BASE%/status/404"]),
        case("fail with body", &["--fail-with-body", "%BASE%/status/404"]),
        case("404 without -f", &["%BASE%/status/404"]),
        case(
            "redirect not followed",
            &["-w", "%{http_code} %{redirect_url}", "%BASE%/redirect"],
        ),
        case(
            "redirect followed",
            &["-L", "-w", " %{num_redirects}", "%BASE%/redirect"],
        ),
        case("redirect include", &["-L", "-i", "%BASE%/redirect"]),
        // -X names the method of every request, redirected ones too; the data still goes or
        // not by the status (302 and 303 drop it), as curl 7.88 does.
        case(
            "-X POST follows a 302 as POST",
            &["-L", "-X", "POST", "%BASE%/found"],
        ),
        case(
            "-X PUT with data after a 302 and a 303",
            &[
                "-L",
                "-X",
                "PUT",
                "-d",
                "a",
                "%BASE%/found",
                "%BASE%/see-other",
            ],
        ),
        case(
            "data after a 302 and a 303 without -X",
            &["-L", "-d", "a", "%BASE%/found", "%BASE%/see-other"],
        ),
        // Credentials go only to the first URL's host, port and scheme (curl compares each
        // redirect with the first URL): not to another port, and again after a detour.
        case(
            "credentials not sent to another port",
            &[
                "-x",
                "%BASE%",
                "-L",
                "-u",
                "alice:pw",
                "-H",
                "Cookie: c=1",
                "http://a.test:1111/to-other-port",
            ],
        ),
        case(
            "credentials sent again back on the first host",
            &[
                "-x",
                "%BASE%",
                "-L",
                "-H",
                "Authorization: Bearer t",
                "http://a.test:1111/detour",
            ],
        ),
        // A forward proxy gets the absolute form without the scheme's own port, as curl
        // writes it.
        case(
            "proxy request without the default port",
            &["-x", "%BASE%", "http://A.test:80/echo"],
        ),
        // Every 3xx with a Location is followed (a 300 here), method and data kept; without
        // -L, %{redirect_url} names it with its fragment.
        case(
            "300 with a location followed",
            &["-L", "-d", "a", "-w", " %{num_redirects}", "%BASE%/choices"],
        ),
        case(
            "300 with a location not followed",
            &["-w", "%{redirect_url}", "%BASE%/choices"],
        ),
        // Issue 19: EOF mid-body exits 18 (a declared length and chunked).
        case("eof mid body", &["%BASE%/truncated"]),
        case("eof mid chunked body", &["%BASE%/truncated-chunked"]),
        case("empty reply", &["%BASE%/empty"]),
        // Issue 19: prior knowledge to an HTTP/1.1-only server that answers exits 52.
        Case {
            server: Server::Refuses,
            ..case(
                "h2 prior knowledge to an answering http/1.1 server",
                &["--http2-prior-knowledge", "%BASE%/hello"],
            )
        },
        // A PROXY line to a server that does not expect one: it answers the line with 400 and
        // closes, before the request (nginx does). The request gets that answer, as curl's
        // does; poolcurl failed with exit 56 about two times in five.
        Case {
            server: Server::Refuses,
            ..case(
                "haproxy-protocol to a server answering the line",
                &["--haproxy-protocol", "-w", " %{http_code}", "%BASE%/hello"],
            )
        },
    ]
}
