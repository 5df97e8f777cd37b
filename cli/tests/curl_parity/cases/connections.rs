//! Parity cases: where a connection goes: --connect-to, Unix sockets, an https:// proxy,
//! --local-port, SOCKS, --doh-url, names under localhost.

use crate::{Case, Extra, Server, case, tls};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // curl answers localhost and NAME.localhost itself (127.0.0.1, then ::1) whatever the
        // hosts file says: a name under localhost reaches the server, and -6 tries ::1, where
        // nothing listens (exit 7, not 6).
        case(
            "name under localhost",
            &["http://App.localhost:%PORT%/echo"],
        ),
        case(
            "localhost over IPv6",
            &["-6", "http://localhost:%PORT%/echo"],
        ),
        // --connect-to: the socket goes elsewhere, Host keeps the URL's (/echo shows it).
        // curl takes a local port of 0 as "let the OS pick", with or without a range.
        case(
            "local port 0",
            &["--local-port", "0", "http://127.0.0.1:%PORT%/hello"],
        ),
        case(
            "local port range from 0",
            &["--local-port", "0-10", "http://127.0.0.1:%PORT%/hello"],
        ),
        case(
            "local port range reversed to 0",
            &["--local-port", "5-0", "http://127.0.0.1:%PORT%/hello"],
        ),
        // Linux takes a keepalive time of at most 32767 s; curl goes on without it.
        case(
            "keepalive time over the kernel's limit",
            &[
                "--keepalive-time",
                "100000",
                "http://127.0.0.1:%PORT%/hello",
            ],
        ),
        case(
            "connect-to",
            &[
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "connect-to any host and port",
            &[
                "--connect-to",
                "::127.0.0.1:%PORT%",
                "http://parity.test:81/echo",
            ],
        ),
        case(
            "connect-to an ip-literal url, port only",
            &[
                "--connect-to",
                "127.0.0.1:1::%PORT%",
                "http://127.0.0.1:1/echo",
            ],
        ),
        // A `*` entry answers for every host on its port; `-HOST:PORT` drops an entry (one
        // that does not parse is skipped).
        case(
            "resolve with a wildcard host",
            &[
                "--resolve",
                "*:%PORT%:127.0.0.1",
                "-w",
                " %{remote_ip}",
                "http://anything.test:%PORT%/hello",
            ],
        ),
        case(
            "resolve entry removed",
            &[
                "--resolve",
                "gone.test:%PORT%:127.0.0.1",
                "--resolve",
                "-gone.test:%PORT%",
                "--resolve",
                "-unparsable",
                "-w",
                "%{exitcode}",
                "http://gone.test:%PORT%/hello",
                "http://127.0.0.1:%PORT%/hello",
            ],
        ),
        // A pool the flags cannot build (a --resolve entry, a proxy URL) fails each
        // transfer, with its -w line, as curl fails each transfer it cannot set up.
        case(
            "malformed resolve entry fails each transfer",
            &[
                "--resolve",
                "bad:x:y",
                "-w",
                "%{exitcode}\\n",
                "%BASE%/hello",
                "%BASE%/hello",
            ],
        ),
        case(
            "unsupported proxy scheme fails each transfer",
            &[
                "-x",
                "bogus://x",
                "-w",
                "%{num_connects} %{exitcode}\\n",
                "%BASE%/hello",
                "%BASE%/hello",
            ],
        ),
        case(
            "connect-to a name given by resolve",
            &[
                "--resolve",
                "backend.test:%PORT%:127.0.0.1",
                "--connect-to",
                "PARITY.test:80:backend.test:%PORT%",
                "http://parity.test/echo",
            ],
        ),
        case(
            "connect-to skips entries that never match",
            &[
                "--connect-to",
                "junk",
                "--connect-to",
                "other.test:80:127.0.0.1:bad",
                "--connect-to",
                "parity.test:http:127.0.0.1:1",
                "--connect-to",
                "parity.test:80:127.0.0.1:%PORT%",
                "http://parity.test/hello",
            ],
        ),
        case(
            "connect-to bad port, next url still runs",
            &[
                "--connect-to",
                "parity.test:80:127.0.0.1:99999",
                "http://parity.test/hello",
                "%BASE%/hello",
            ],
        ),
        // --unix-socket: every URL goes through the path (`%UNIX%`, piped to the server);
        // Host, TLS and reuse keep the URL's name, the proxy is ignored, --next resets it.
        // (`%{remote_ip}` is the path; curl 7.88 cuts it at 45 characters, so it is checked
        // in `curl.rs` instead.)
        case(
            "unix socket",
            &[
                "--unix-socket",
                "%UNIX%",
                "-w",
                "%{remote_port} [%{local_ip}] %{local_port} %{num_connects}\\n",
                "http://daemon.test/echo",
                "http://daemon.test/hello",
            ],
        ),
        case(
            "unix socket ignores the proxy",
            &[
                "-x",
                "http://127.0.0.1:1",
                "--unix-socket",
                "%UNIX%",
                "http://daemon.test/echo",
            ],
        ),
        case(
            "unix socket for one group of --next",
            &[
                "--unix-socket",
                "%UNIX%",
                "http://daemon.test/hello",
                "--next",
                "%BASE%/echo",
            ],
        ),
        case(
            "unix socket missing",
            &[
                "--unix-socket",
                "%DIR%/absent.sock",
                "http://daemon.test/hello",
            ],
        ),
        case(
            "abstract unix socket",
            &[
                "--abstract-unix-socket",
                "%ABSTRACT%",
                "-w",
                "[%{remote_ip}] %{remote_port} %{num_connects}\\n",
                "http://daemon.test/echo",
            ],
        ),
        case(
            "abstract unix socket, the later flag wins",
            &[
                "--unix-socket",
                "%DIR%/absent.sock",
                "--abstract-unix-socket",
                "%ABSTRACT%",
                "http://daemon.test/hello",
            ],
        ),
        Case {
            server: Server::Tls,
            ..case(
                "unix socket with tls inside",
                &[
                    "--cacert",
                    "%CA%",
                    "--unix-socket",
                    "%UNIX%",
                    "-w",
                    " %{ssl_verify_result} %{remote_port}",
                    "https://localhost/hello",
                ],
            )
        },
        case("port over 65535", &["http://127.0.0.1:99999/"]),
        // curl names the scheme and the server once TCP stands: after a refused connection
        // neither, after a certificate it does not trust both.
        case(
            "what a refused connection shows",
            &["-w", "[%{scheme}|%{remote_ip}|%{remote_port}]", "%CLOSED%"],
        ),
        Case {
            server: Server::Tls,
            ..case(
                "what a failed handshake shows",
                &["-w", "[%{scheme}|%{remote_ip}]", "%TLS%/hello"],
            )
        },
        // An https:// proxy (the TLS server, which answers absolute-form requests as a
        // forward proxy) is trusted by its own flags; --cacert and -k are the origin's.
        // --proxy-pinnedpubkey is the proxy's: its key passes, and --pinnedpubkey does not
        // reach the proxy. (curl 7.88 does not check the proxy's pin at all: another pin passes
        // there, where poolcurl exits 90; the pool's proxy tests hold that.)
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-pinnedpubkey",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-insecure",
                    "--proxy-pinnedpubkey",
                    "%PIN%",
                    "--pinnedpubkey",
                    "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-cacert",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-cacert",
                    "%CA%",
                    "-w",
                    " %{proxy_ssl_verify_result}",
                    "http://origin.test/hello",
                ],
            )
        },
        // A proxy URL that does not parse: curl's 5, in its words.
        Case {
            extra: Extra::Stderr,
            ..case(
                "proxy url that does not parse",
                &["-sS", "-x", "http://[::1", "%BASE%/hello"],
            )
        },
        // What a forward proxy's request carries counts in %{size_request}: the absolute
        // form, the proxy's credentials and Proxy-Connection.
        Case {
            server: Server::Tls,
            ..case(
                "size of a request through a forward proxy",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-insecure",
                    "-U",
                    "a:b",
                    "-A",
                    "agent",
                    "-w",
                    " %{size_request}",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy with --proxy-insecure",
                &[
                    "-x",
                    "%TLS%",
                    "--proxy-insecure",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy, --cacert is the origin's",
                &[
                    "-x",
                    "%TLS%",
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{proxy_ssl_verify_result}",
                    "http://origin.test/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "https proxy, -k is the origin's",
                &["-x", "%TLS%", "-k", "http://origin.test/hello"],
            )
        },
        // --local-port: badly used ranges are exit 2; a port that is taken (the refusing
        // address's, bound by this test) is 45.
        case(
            "local port over 65535",
            &["--local-port", "70000", "%BASE%/hello"],
        ),
        case(
            "local port reversed range",
            &["--local-port", "5-3", "%BASE%/hello"],
        ),
        case(
            "local port taken",
            &[
                "--local-port",
                "%CLOSEDPORT%",
                "-w",
                "%{errormsg}",
                "%BASE%/hello",
            ],
        ),
        // --interface with a local address (plain or after host!); an address this host does
        // not have is 45 (TEST-NET-1). (A device needs CAP_NET_RAW: see the unit tests.)
        case(
            "interface address",
            &[
                "--interface",
                "127.0.0.1",
                "-w",
                " %{local_ip}",
                "%BASE%/hello",
            ],
        ),
        case(
            "interface host! prefix",
            &["--interface", "host!127.0.0.1", "%BASE%/hello"],
        ),
        case(
            "interface address not this host's",
            &[
                "--interface",
                "192.0.2.1",
                "-w",
                "%{errormsg}",
                "%BASE%/hello",
            ],
        ),
        case(
            "interface device that does not exist",
            &[
                "--interface",
                "if!nosuch0",
                "-w",
                "%{errormsg}",
                "%BASE%/hello",
            ],
        ),
        case(
            "interface name that is no device",
            &[
                "--interface",
                "nosuch0",
                "-w",
                "%{errormsg}",
                "%BASE%/hello",
            ],
        ),
        // -4/-6 against an address of the other family: nothing to try, exit 7.
        case(
            "ipv6 only with an ipv4 address",
            &["-6", "-w", "%{http_code} %{errormsg}", "%BASE%/hello"],
        ),
        case(
            "ipv4 only with an ipv6 address",
            &["-4", "-w", "%{http_code}", "http://[::1]:%PORT%/hello"],
        ),
        // SOCKS5: -x socks5:// and socks5h://, --socks5 and --socks5-hostname (the last of
        // them and -x wins), no CONNECT (%{http_connect} 0), a target the proxy cannot reach
        // exits 97.
        case(
            "socks5h proxy",
            &[
                "-x",
                "socks5h://%SOCKS%",
                "-w",
                " %{http_connect}",
                "%BASE%/echo",
            ],
        ),
        case(
            "socks5 flag",
            &["--socks5", "%SOCKS%", "-w", " %{http_code}", "%BASE%/hello"],
        ),
        case(
            "socks5-hostname resolves at the proxy",
            &[
                "--socks5-hostname",
                "%SOCKS%",
                "http://localhost:%PORT%/hello",
            ],
        ),
        case(
            "-x after --socks5 wins",
            &[
                "--socks5",
                "127.0.0.1:1",
                "-x",
                "socks5://%SOCKS%",
                "%BASE%/hello",
            ],
        ),
        case(
            "socks5 target refused",
            &["-x", "socks5://%SOCKS%", "%CLOSED%/"],
        ),
        case(
            "socks5 user without a password",
            &["-x", "socks5h://bob@%SOCKS%", "%BASE%/hello"],
        ),
        case(
            "socks5 origin name does not resolve",
            &["-x", "socks5://%SOCKS%", "http://nonexistent.invalid/"],
        ),
        // SOCKS4 and 4a: -x socks4:// (socks:// too) and socks4a://, --socks4 and --socks4a,
        // the user id from -U, an IPv6 target SOCKS4 cannot carry, a refusal.
        case(
            "socks4 proxy",
            &[
                "-x",
                "socks4://%SOCKS%",
                "-w",
                " %{http_connect}",
                "%BASE%/echo",
            ],
        ),
        case(
            "socks:// is socks4",
            &["-x", "socks://%SOCKS%", "%BASE%/hello"],
        ),
        case(
            "socks4a flag resolves at the proxy",
            &["--socks4a", "%SOCKS%", "http://localhost:%PORT%/hello"],
        ),
        case(
            "socks4 flag with a user id, after -x",
            &[
                "-x",
                "socks5://127.0.0.1:1",
                "--socks4",
                "%SOCKS%",
                "-U",
                "bob:pw",
                "%BASE%/hello",
            ],
        ),
        case(
            "socks4 cannot carry IPv6",
            &["--socks4", "%SOCKS%", "http://[::1]:1/"],
        ),
        case(
            "socks4 target refused",
            &["-x", "socks4://%SOCKS%", "%CLOSED%/"],
        ),
        // --doh-url: names resolved by the case's server (/dns-query) over TLS, which the
        // transfers' --cacert lets both tools trust; -k does not reach the DoH queries.
        tls(
            "doh, a name only the DoH server knows",
            &[
                "--cacert",
                "%CA%",
                "-k",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, the answer is where it connects",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "http://far.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an IPv6 answer only",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "http://v6.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, no such name",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "%TLS%/dns-query",
                "https://nx.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an untrusted server and -k",
            &[
                "-k",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, --doh-insecure",
            &[
                "-k",
                "--doh-insecure",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, a stapled status required and none sent",
            &[
                "--cacert",
                "%CA%",
                "-k",
                "--doh-cert-status",
                "--doh-url",
                "%TLS%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, --resolve wins",
            &[
                "-k",
                "--resolve",
                "nx.test:%PORT%:127.0.0.1",
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "https://nx.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, localhost is never asked",
            &[
                "--cacert",
                "%CA%",
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "%TLS%/hello",
            ],
        ),
        tls(
            "doh, an unreachable server",
            &[
                "--doh-url",
                "https://localhost:%CLOSEDPORT%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
        tls(
            "doh, an http URL",
            &[
                "--doh-url",
                "http://localhost:%PORT%/dns-query",
                "https://doh.test:%PORT%/hello",
            ],
        ),
    ]
}
