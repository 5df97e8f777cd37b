//! Parity cases: TLS: certificate checks, HSTS, stapled status, the handshake's offers and -v's
//! account of it, session reuse.

use crate::{Case, Extra, Server, Signer, Status, case};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // TLS: what checking the server's certificate found, as OpenSSL's code, and how many
        // certificates a new connection's server presented.
        Case {
            server: Server::Tls,
            ..case(
                "tls verified, then reused",
                &[
                    "--cacert",
                    "%CA%",
                    "-w",
                    " %{num_certs} %{ssl_verify_result} %{proxy_ssl_verify_result}\\n",
                    "%TLS%/hello",
                    "%TLS%/hello",
                ],
            )
        },
        // The server's own certificate as the one trusted (its CA not): OpenSSL takes it as a
        // trust anchor, and so does poolcurl; still for its names only.
        Case {
            server: Server::Tls,
            ..case(
                "tls server certificate trusted itself",
                &[
                    "--cacert",
                    "%LEAF%",
                    "-w",
                    " %{ssl_verify_result}\n",
                    "%TLS%/hello",
                    "https://127.0.0.1:%PORT%/hello",
                ],
            )
        },
        // -S: the error, and curl's advice after it.
        Case {
            server: Server::Tls,
            extra: Extra::Stderr,
            ..case("tls untrusted, error shown", &["-sS", "%TLS%/hello"])
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls untrusted",
                &["-w", "%{num_certs} %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls untrusted with -k",
                &[
                    "-k",
                    "-w",
                    " %{num_certs} %{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        // A transfer keeps the certificates of its last handshake on the hops after it; a
        // handshake that failed still counts its connect.
        Case {
            server: Server::Tls,
            ..case(
                "tls certificates after a redirect",
                &[
                    "-kL",
                    "-w",
                    "%{num_certs} %{ssl_verify_result} %{num_connects}",
                    "%TLS%/redirect",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls untrusted counts its connect",
                &["-w", "%{num_connects}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls wrong name",
                &[
                    "--cacert",
                    "%CA%",
                    "--resolve",
                    "other.test:%PORT%:127.0.0.1",
                    "-w",
                    "%{ssl_verify_result}",
                    "https://other.test:%PORT%/hello",
                ],
            )
        },
        // --hsts: an https:// response's Strict-Transport-Security switches the next http://
        // URL to the host to https:// (its port kept), and the cache is written.
        Case {
            server: Server::Tls,
            ..case(
                "hsts",
                &[
                    "--hsts",
                    "%DIR%/hsts.txt",
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{url_effective}\n",
                    "%TLS%/sts",
                    "http://localhost:%PORT%/hello",
                ],
            )
        },
        // --hsts '': the cache lives for the invocation only, so the second URL is upgraded
        // all the same and no file is written.
        Case {
            server: Server::Tls,
            ..case(
                "hsts without a file",
                &[
                    "--hsts",
                    "",
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{url_effective}\n",
                    "%TLS%/sts",
                    "http://localhost:%PORT%/hello",
                ],
            )
        },
        // --cert-status: a stapled OCSP response from the CA (good, revoked, unknown) or none;
        // curl checks the same staple through OpenSSL. (A second connection is left out: curl
        // 7.88 resumes its session there and then finds no staple, exit 91; poolcurl turns
        // resumption off under --cert-status and checks every connection.)
        Case {
            server: Server::TlsStapled(Status::Good, Signer::Ca),
            extra: Extra::VerboseTls,
            ..case(
                "cert-status good",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--cert-status",
                    "%TLS%/hello",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Good, Signer::Delegated),
            ..case(
                "cert-status from a delegated responder",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Good, Signer::NotAResponder),
            ..case(
                "cert-status signed by a certificate that is no responder",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Revoked, Signer::Ca),
            ..case(
                "cert-status revoked",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Unknown, Signer::Ca),
            ..case(
                "cert-status unknown",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "cert-status without a staple",
                &["--cacert", "%CA%", "--cert-status", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsStapled(Status::Revoked, Signer::Ca),
            ..case(
                "a staple not asked for",
                &["--cacert", "%CA%", "%TLS%/hello"],
            )
        },
        // Flags curl built with OpenSSL takes and ignores (Schannel's, TLS 1.0's, deprecated
        // ones); --ssl-no-revoke leaves a --crlfile in force there.
        Case {
            server: Server::Tls,
            ..case(
                "tls flags with no effect",
                &[
                    "--cacert",
                    "%CA%",
                    "--false-start",
                    "--ssl-allow-beast",
                    "--ssl-auto-client-cert",
                    "--ssl-revoke-best-effort",
                    "--egd-file",
                    "%DIR%/egd",
                    "--random-file",
                    "%DIR%/random",
                    "--proxy-ssl-allow-beast",
                    "--proxy-ssl-auto-client-cert",
                    "--proxy-tlsv1",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ssl-no-revoke keeps the crl",
                &[
                    "--cacert",
                    "%CA%",
                    "--crlfile",
                    "%CRL%",
                    "--ssl-no-revoke",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls revoked by a crl",
                &[
                    "--cacert",
                    "%CA%",
                    "--crlfile",
                    "%CRL%",
                    "-w",
                    "%{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        // The handshake's offers: --ciphers as an OpenSSL cipher string (the server's key is
        // ECDSA, and it follows the client's order), --tls13-ciphers, --curves (against a
        // server with P-384 alone), --no-alpn, --no-sessionid; lists that pick nothing are
        // exit 59 for https:// only, and suites the key cannot use a handshake failure (35).
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "ciphers by name",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "ciphers by alias",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "DEFAULT:!AES256:+AES128",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "tls13 ciphers",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls13-ciphers",
                    "BOGUS:TLS_CHACHA20_POLY1305_SHA256",
                    "%TLS%/hello",
                ],
            )
        },
        // The server certificate's account: checked, by name and by address, and under -k
        // for a self-signed certificate (the verdict with OpenSSL's code, no name line).
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "server certificate by address",
                &["--cacert", "%CA%", "-v", "https://127.0.0.1:%PORT%/hello"],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            extra: Extra::VerboseTls,
            ..case(
                "server certificate unverified",
                &["-k", "-v", "%TLS%/hello"],
            )
        },
        // A second connection to the same host resumes the first one's session (the route
        // closes each connection), on TLS 1.3 and 1.2, unless --no-sessionid.
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "session resumed",
                &["--cacert", "%CA%", "-v", "%TLS%/close", "%TLS%/close"],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "session resumed on tls 1.2",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--tls-max",
                    "1.2",
                    "%TLS%/close",
                    "%TLS%/close",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "no session id",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--no-sessionid",
                    "%TLS%/close",
                    "%TLS%/close",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ciphers the key cannot use",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    "ECDHE-RSA-AES128-GCM-SHA256",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "ciphers picking nothing",
                &["--cacert", "%CA%", "--ciphers", "RC4:BOGUS", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls13 ciphers picking nothing",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls13-ciphers",
                    "BOGUS",
                    "%TLS%/hello",
                ],
            )
        },
        case(
            "cipher lists over cleartext",
            &["--ciphers", "BOGUS", "--curves", "BOGUS", "%BASE%/hello"],
        ),
        Case {
            server: Server::TlsP384Only,
            ..case(
                "curves the server has",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "x25519:P-384",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsP384Only,
            ..case(
                "curves the server lacks",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "X25519:prime256v1",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "curves not known",
                &[
                    "--cacert",
                    "%CA%",
                    "--curves",
                    "X25519:bogus",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            extra: Extra::VerboseTls,
            ..case(
                "no alpn",
                &[
                    "--cacert",
                    "%CA%",
                    "-v",
                    "--no-alpn",
                    "--no-sessionid",
                    "-w",
                    " %{http_version}",
                    "%TLS%/hello",
                ],
            )
        },
        // Untrusted certificates say which kind, verified (exit 60) or not (-k): self-signed
        // (18), a chain ending in the server's own untrusted root (19).
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate",
                &["-w", "%{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate with -k",
                &["-k", "-w", " %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        // A self-signed certificate made as a CA (`openssl req -x509`'s kind) is trusted when
        // it is itself the root given: by name, by address, not for another name.
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate trusted with --cacert",
                &[
                    "--cacert",
                    "%SELF%",
                    "-w",
                    " %{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate trusted with --cacert, by address",
                &["--cacert", "%SELF%", "https://127.0.0.1:%PORT%/hello"],
            )
        },
        Case {
            server: Server::TlsSelfSigned,
            ..case(
                "self-signed certificate trusted with --cacert, for another name",
                &[
                    "--cacert",
                    "%SELF%",
                    "--resolve",
                    "other.test:%PORT%:127.0.0.1",
                    "-w",
                    "%{ssl_verify_result}",
                    "https://other.test:%PORT%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsWithRoot,
            ..case(
                "self-signed root in the chain",
                &["-w", "%{ssl_verify_result}", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsWithRoot,
            ..case(
                "self-signed root in the chain with -k",
                &["-k", "-w", " %{ssl_verify_result}", "%TLS%/hello"],
            )
        },
    ]
}
