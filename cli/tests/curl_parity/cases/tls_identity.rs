//! Parity cases: TLS: %{certs}, client keys and their types, pinned keys, TLS versions.

use crate::{Case, Extra, Server, case, with_server};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // A blank --proxy-key is no key file (curl takes it; a blank --key it refuses).
        case("blank proxy key", &["--proxy-key", "", "%BASE%/hello"]),
        // Origin TLS files that cannot be used fail the https:// transfers only, each with -w
        // written; of a client certificate and a CA file both unusable, the certificate's
        // error comes first.
        case(
            "unusable tls files and an http url",
            &[
                "--cacert",
                "%DIR%/none.pem",
                "--crlfile",
                "%DIR%/none.crl",
                "--cert",
                "%DIR%/none-cert.pem",
                "-w",
                "%{exitcode}",
                "%BASE%/hello",
            ],
        ),
        with_server(
            Server::Tls,
            Extra::None,
            "unusable ca file and an https url",
            &[
                "--cacert",
                "%DIR%/none.pem",
                "-w",
                "%{exitcode}",
                "%TLS%/hello",
            ],
        ),
        with_server(
            Server::Tls,
            Extra::None,
            "unusable certificate and ca file",
            &[
                "--cacert",
                "%DIR%/none.pem",
                "--cert",
                "%DIR%/none-cert.pem",
                "-w",
                "%{exitcode}",
                "%TLS%/hello",
            ],
        ),
        // -w '%{certs}': the chain a new connection's server sent, in OpenSSL's text (nothing
        // for the reused connection), alone, with the CA sent after the leaf, and in %{json}.
        with_server(
            Server::Tls,
            Extra::CertsText,
            "certs of a new connection, then none on reuse",
            &[
                "--cacert",
                "%CA%",
                "-w",
                "%{certs}[%{num_certs}]\\n",
                "%TLS%/hello",
                "%TLS%/hello",
            ],
        ),
        with_server(
            Server::TlsWithRoot,
            Extra::CertsText,
            "certs of a chain of two",
            &["-k", "-w", "%{certs}", "%TLS%/hello"],
        ),
        with_server(
            Server::Tls,
            Extra::JsonFields,
            "certs in json",
            &[
                "--cacert",
                "%CA%",
                "-w",
                "%{json}",
                "-o",
                "/dev/null",
                "%TLS%/hello",
            ],
        ),
        Case {
            server: Server::TlsExpired,
            ..case(
                "tls expired",
                &[
                    "--cacert",
                    "%CA%",
                    "-w",
                    "%{ssl_verify_result}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        // A certificate without its key, or with a key file that holds none: the key file
        // cannot be set, exit 58, also beside --cacert (a key of another certificate is the
        // same error, unit-tested in pool-tls).
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate without its key",
                &["-sS", "--cacert", "%CA%", "--cert", "%CERT%", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate with a key file holding no key",
                &[
                    "-sS",
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%CA%",
                    "%TLS%/hello",
                ],
            )
        },
        // A key encrypted with a passphrase (%KEYENC%, PKCS #8, passphrase s3cret), opened by
        // --pass or by the password after --cert's colon; a wrong one is 58, and a passphrase
        // for a key that is not encrypted is ignored.
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with --pass",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEYENC%",
                    "--pass",
                    "s3cret",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with the password in --cert",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%:s3cret",
                    "--key",
                    "%KEYENC%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "encrypted key with a wrong passphrase",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEYENC%",
                    "--pass",
                    "wrong",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "passphrase for a plain key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--key",
                    "%KEY%",
                    "--pass",
                    "unused",
                    "%TLS%/hello",
                ],
            )
        },
        // --cert-type and --key-type DER (%CERTDER%, %KEYDER%), in any case, mixed with PEM,
        // and types poolcurl does not read.
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "der client certificate and key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERTDER%",
                    "--cert-type",
                    "DER",
                    "--key",
                    "%KEYDER%",
                    "--key-type",
                    "der",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "der client certificate and pem key",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERTDER%",
                    "--cert-type",
                    "DER",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "unknown client certificate type",
                &[
                    "--cacert",
                    "%CA%",
                    "--cert",
                    "%CERT%",
                    "--cert-type",
                    "XYZ",
                    "--key",
                    "%KEY%",
                    "%TLS%/hello",
                ],
            )
        },
        // --pinnedpubkey: the server key's digest (%PIN%), alone or among others, its PEM file
        // (%PUBKEY%) under -k, and what pins nothing (another digest, a certificate file):
        // exit 90, verified or not; an http:// URL is not concerned.
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey matching",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "%PIN%",
                    "-w",
                    " %{http_code}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey among others",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "sha256//bm9wZQ==;%PIN%",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey mismatch",
                &[
                    "--cacert",
                    "%CA%",
                    "--pinnedpubkey",
                    "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                    "-w",
                    "%{http_code}",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey file with -k",
                &["-k", "--pinnedpubkey", "%PUBKEY%", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "pinnedpubkey of a certificate file pins nothing",
                &["-k", "--pinnedpubkey", "%CA%", "%TLS%/hello"],
            )
        },
        case(
            "pinnedpubkey does not concern http",
            &["--pinnedpubkey", "sha256//x", "%BASE%/hello"],
        ),
        Case {
            server: Server::TlsClientAuth,
            ..case(
                "tls client certificate missing",
                &["--cacert", "%CA%", "%TLS%/hello"],
            )
        },
        // TLS versions: bounds the server meets, bounds no TLS connection can meet (exit 35
        // for https://), and the same bounds on an http:// URL, which they do not concern.
        Case {
            server: Server::Tls,
            ..case(
                "tls max 1.2 and min 1.3",
                &[
                    "--cacert",
                    "%CA%",
                    "--tls-max",
                    "1.2",
                    "%TLS%/hello",
                    "--next",
                    "--cacert",
                    "%CA%",
                    "--tlsv1.3",
                    "%TLS%/hello",
                ],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls max below 1.2",
                &["--cacert", "%CA%", "--tls-max", "1.1", "%TLS%/hello"],
            )
        },
        Case {
            server: Server::Tls,
            ..case(
                "tls min above max",
                &["--tlsv1.3", "--tls-max", "1.2", "%TLS%/hello"],
            )
        },
        case(
            "tls bounds on http",
            &["--tlsv1.3", "--tls-max", "1.0", "%BASE%/hello"],
        ),
        case("tls max bad value", &["--tls-max", "9", "%BASE%/hello"]),
    ]
}
