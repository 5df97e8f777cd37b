//! curl flags poolcurl deliberately does not take, and why.
//!
//! They are recognized before clap sees the command line, so using one says what is missing in
//! curl's style (`poolcurl: option --digest: is not supported by poolcurl (...)`, exit 2) instead
//! of calling a real curl flag unknown. `--help` lists them ([`help`]); so does the README.

use crate::curl::argv::{self, Kind};

/// A curl flag poolcurl does not take, its short form if any, and the reason.
struct Unsupported {
    long: &'static str,
    short: Option<char>,
    why: &'static str,
}

/// The deliberately unsupported flags.
const FLAGS: &[Unsupported] = &[
    flag("--negotiate", None, HTTP_AUTH),
    flag("--http3", None, "HTTP/1.x and HTTP/2 only"),
    flag("--http3-only", None, "HTTP/1.x and HTTP/2 only"),
    flag(
        "--preproxy",
        None,
        "one proxy per connection, no chains (-x)",
    ),
    flag("--libcurl", None, "poolcurl is not libcurl"),
    flag("--manual", Some('M'), "see --help and the README"),
    // Options of curl's other protocols.
    flag("--append", Some('a'), OTHER_PROTOCOLS),
    flag("--list-only", Some('l'), OTHER_PROTOCOLS),
    flag("--quote", Some('Q'), OTHER_PROTOCOLS),
    flag("--use-ascii", Some('B'), OTHER_PROTOCOLS),
    flag("--telnet-option", Some('t'), OTHER_PROTOCOLS),
    flag("--ftp-port", Some('P'), OTHER_PROTOCOLS),
    flag("--ftp-account", None, OTHER_PROTOCOLS),
    flag("--ftp-alternative-to-user", None, OTHER_PROTOCOLS),
    flag("--ftp-create-dirs", None, OTHER_PROTOCOLS),
    flag("--ftp-method", None, OTHER_PROTOCOLS),
    flag("--ftp-pasv", None, OTHER_PROTOCOLS),
    flag("--ftp-pret", None, OTHER_PROTOCOLS),
    flag("--ftp-skip-pasv-ip", None, OTHER_PROTOCOLS),
    flag("--ftp-ssl-ccc", None, OTHER_PROTOCOLS),
    flag("--ftp-ssl-ccc-mode", None, OTHER_PROTOCOLS),
    flag("--ftp-ssl-control", None, OTHER_PROTOCOLS),
    flag("--disable-eprt", None, OTHER_PROTOCOLS),
    flag("--disable-epsv", None, OTHER_PROTOCOLS),
    flag("--crlf", None, OTHER_PROTOCOLS),
    flag("--ssl", None, OTHER_PROTOCOLS),
    flag("--ssl-reqd", None, OTHER_PROTOCOLS),
    flag("--login-options", None, OTHER_PROTOCOLS),
    flag("--mail-auth", None, OTHER_PROTOCOLS),
    flag("--mail-from", None, OTHER_PROTOCOLS),
    flag("--mail-rcpt", None, OTHER_PROTOCOLS),
    flag("--mail-rcpt-allowfails", None, OTHER_PROTOCOLS),
    flag("--sasl-authzid", None, OTHER_PROTOCOLS),
    flag("--sasl-ir", None, OTHER_PROTOCOLS),
    flag("--tftp-blksize", None, OTHER_PROTOCOLS),
    flag("--tftp-no-options", None, OTHER_PROTOCOLS),
    flag("--krb", None, OTHER_PROTOCOLS),
    flag("--compressed-ssh", None, OTHER_PROTOCOLS),
    flag("--hostpubmd5", None, OTHER_PROTOCOLS),
    flag("--hostpubsha256", None, OTHER_PROTOCOLS),
    flag("--pubkey", None, OTHER_PROTOCOLS),
    // TLS settings rustls does not have or the pool does not expose.
    flag("--sslv2", Some('2'), "TLS 1.2 and 1.3 only"),
    flag("--sslv3", Some('3'), "TLS 1.2 and 1.3 only"),
    flag("--engine", None, TLS_SETTING),
    flag("--tlsauthtype", None, "no TLS-SRP"),
    flag("--tlsuser", None, "no TLS-SRP"),
    flag("--tlspassword", None, "no TLS-SRP"),
    // Proxies.
    flag("--proxy-negotiate", None, PROXY_AUTH),
    flag("--proxy-service-name", None, PROXY_AUTH),
    flag("--proxy-tlsauthtype", None, PROXY_TLS),
    flag("--proxy-tlspassword", None, PROXY_TLS),
    flag("--proxy-tlsuser", None, PROXY_TLS),
    flag("--socks5-gssapi", None, SOCKS_GSSAPI),
    flag("--socks5-gssapi-nec", None, SOCKS_GSSAPI),
    flag("--socks5-gssapi-service", None, SOCKS_GSSAPI),
    // Name resolution.
    flag(
        "--dns-interface",
        None,
        "DNS queries bind to an address (--dns-ipv4-addr, --dns-ipv6-addr), not a device",
    ),
    // HTTP and transfer features poolcurl does not have.
    flag(
        "--ignore-content-length",
        None,
        "bodies are read by their Content-Length",
    ),
    flag(
        "--raw",
        None,
        "the chunked transfer coding is always decoded",
    ),
    flag("--delegation", None, "no GSS-API"),
    flag("--service-name", None, "no GSS-API"),
    flag("--ntlm-wb", None, HTTP_AUTH),
    flag("--tcp-fastopen", None, "no TCP Fast Open"),
    flag("--metalink", None, "no Metalink (curl dropped it too)"),
];

/// The reason of every option that belongs to curl's other protocols.
const OTHER_PROTOCOLS: &str = "an option of curl's other protocols; HTTP and HTTPS only";
/// The reason of TLS options rustls or the pool has no setting for.
const TLS_SETTING: &str = "no such TLS setting in the pool (rustls)";
/// The reason of proxy authentication options.
const PROXY_AUTH: &str =
    "proxy authentication is Basic, Digest or NTLM only (-U, --proxy-digest, --proxy-ntlm)";
/// The reason of authentication schemes other than Basic, Digest and NTLM.
const HTTP_AUTH: &str = "Basic (-u), Digest (--digest) and NTLM (--ntlm) authentication only";
/// The reason of the HTTPS proxy's own TLS options.
const PROXY_TLS: &str = "proxy TLS takes --proxy-cacert -capath -crlfile -insecure -cert -key -cert-type -key-type -pinnedpubkey -ciphers -tls13-ciphers";
/// SOCKS5 authentication other than user name and password.
const SOCKS_GSSAPI: &str = "SOCKS5 with no authentication or a user and password only";

const fn flag(long: &'static str, short: Option<char>, why: &'static str) -> Unsupported {
    Unsupported { long, short, why }
}

/// What `--help` prints after the options: the unsupported flags grouped by reason, in
/// table order.
pub(crate) fn help() -> String {
    let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
    for flag in FLAGS {
        let shown = match flag.short {
            Some(short) => format!("-{short}/{}", flag.long),
            None => flag.long.to_owned(),
        };
        match reasons.iter_mut().find(|(why, _)| *why == flag.why) {
            Some((_, flags)) => flags.push(shown),
            None => reasons.push((flag.why, vec![shown])),
        }
    }
    let mut text = String::from("Not supported (using one exits 2 and says why):\n");
    for (why, flags) in reasons {
        text.push_str(&format!("  {}: {why}\n", flags.join(" ")));
    }
    text.push_str(
        "and protocols other than http:// and https://. In a config file (-K, ~/.curlrc) \
         such a flag is a warning and left out, as curl leaves out lines it cannot use.",
    );
    text
}

/// The message for the first deliberately unsupported flag on the command line (`argv`
/// without the program name, read by [`argv::read`]), if any: every letter of a bundle of
/// short flags counts, another option's value never does, and `--` ends the search. A lone
/// `-` is refused here too, as curl's unknown option.
pub(crate) fn find(argv: &[String], takes_value: &dyn Fn(&str) -> bool) -> Option<String> {
    for arg in argv::read(argv.to_vec(), takes_value) {
        let (flag, shown) = match &arg.kind {
            Kind::Long { name, .. } => {
                let Some(flag) = FLAGS.iter().find(|f| &f.long[2..] == name) else {
                    continue;
                };
                (flag, flag.long.to_owned())
            }
            Kind::Short { flags, valued } => {
                let mut letters = flags.chars().chain(valued.as_ref().map(|(c, _)| *c));
                let Some((flag, c)) = letters.find_map(|c| {
                    FLAGS
                        .iter()
                        .find(|f| f.short == Some(c))
                        .map(|flag| (flag, c))
                }) else {
                    continue;
                };
                (flag, format!("-{c}"))
            }
            // curl reads a lone `-` as an option without letters, which it does not know.
            Kind::Url if arg.raw[0] == "-" => return Some("option -: is unknown".to_owned()),
            Kind::Url => continue,
            Kind::Rest => return None,
        };
        return Some(format!(
            "option {shown}: is not supported by poolcurl ({})",
            flag.why
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    fn takes_value(name: &str) -> bool {
        matches!(name, "--proto" | "-d")
    }

    fn find(argv: &[String]) -> Option<String> {
        super::find(argv, &takes_value)
    }

    #[test]
    fn unsupported_flags_are_named_with_the_reason() {
        assert_eq!(
            find(&argv(&["-s", "--negotiate", "http://a/"])).as_deref(),
            Some(
                "option --negotiate: is not supported by poolcurl (Basic (-u), Digest (--digest) \
                 and NTLM (--ntlm) authentication only)"
            )
        );
        assert_eq!(
            find(&argv(&["-M", "http://a/"])).as_deref(),
            Some("option -M: is not supported by poolcurl (see --help and the README)")
        );
        assert_eq!(find(&argv(&["-sSf", "http://a/"])), None);
        assert_eq!(find(&argv(&["--", "--negotiate"])), None);
        assert_eq!(
            find(&argv(&["--proto", "-all,+https", "-d", "-M", "http://a/"])),
            None
        );
        // Every letter of a bundle counts; a bundle's value (`-sd VALUE`) never does.
        assert_eq!(
            find(&argv(&["-sM", "http://a/"])).as_deref(),
            Some("option -M: is not supported by poolcurl (see --help and the README)")
        );
        assert_eq!(find(&argv(&["-sd", "-M", "http://a/"])), None);
    }

    /// Every option `curl --help all` lists in curl 7.88.1 (the curl the parity suite runs).
    const CURL_LONG_OPTIONS: &str = "
    --abstract-unix-socket --alt-svc --anyauth --append --aws-sigv4 --basic --cacert --capath
    --cert --cert-status --cert-type --ciphers --compressed --compressed-ssh --config
    --connect-timeout --connect-to --continue-at --cookie --cookie-jar --create-dirs
    --create-file-mode --crlf --crlfile --curves --data --data-ascii --data-binary --data-raw
    --data-urlencode --delegation --digest --disable --disable-eprt --disable-epsv
    --disallow-username-in-url --dns-interface --dns-ipv4-addr --dns-ipv6-addr --dns-servers
    --doh-cert-status --doh-insecure --doh-url --dump-header --egd-file --engine --etag-compare
    --etag-save --expect100-timeout --fail --fail-early --fail-with-body --false-start --form
    --form-escape --form-string --ftp-account --ftp-alternative-to-user --ftp-create-dirs
    --ftp-method --ftp-pasv --ftp-port --ftp-pret --ftp-skip-pasv-ip --ftp-ssl-ccc
    --ftp-ssl-ccc-mode --ftp-ssl-control --get --globoff --happy-eyeballs-timeout-ms
    --haproxy-protocol --head --header --help --hostpubmd5 --hostpubsha256 --hsts --http0.9
    --http1.0 --http1.1 --http2 --http2-prior-knowledge --http3 --http3-only
    --ignore-content-length --include --insecure --interface --ipv4 --ipv6 --json
    --junk-session-cookies --keepalive-time --key --key-type --krb --libcurl --limit-rate
    --list-only --local-port --location --location-trusted --login-options --mail-auth
    --mail-from --mail-rcpt --mail-rcpt-allowfails --manual --max-filesize --max-redirs
    --max-time --metalink --negotiate --netrc --netrc-file --netrc-optional --next --no-alpn
    --no-buffer --no-clobber --no-keepalive --no-npn --no-progress-meter --no-sessionid
    --noproxy --ntlm --ntlm-wb --oauth2-bearer --output --output-dir --parallel
    --parallel-immediate --parallel-max --pass --path-as-is --pinnedpubkey --post301 --post302
    --post303 --preproxy --progress-bar --proto --proto-default --proto-redir --proxy
    --proxy-anyauth --proxy-basic --proxy-cacert --proxy-capath --proxy-cert --proxy-cert-type
    --proxy-ciphers --proxy-crlfile --proxy-digest --proxy-header --proxy-insecure --proxy-key
    --proxy-key-type --proxy-negotiate --proxy-ntlm --proxy-pass --proxy-pinnedpubkey
    --proxy-service-name --proxy-ssl-allow-beast --proxy-ssl-auto-client-cert
    --proxy-tls13-ciphers --proxy-tlsauthtype --proxy-tlspassword --proxy-tlsuser --proxy-tlsv1
    --proxy-user --proxy1.0 --proxytunnel --pubkey --quote --random-file --range --rate --raw
    --referer --remote-header-name --remote-name --remote-name-all --remote-time
    --remove-on-error --request --request-target --resolve --retry --retry-all-errors
    --retry-connrefused --retry-delay --retry-max-time --sasl-authzid --sasl-ir --service-name
    --show-error --silent --socks4 --socks4a --socks5 --socks5-basic --socks5-gssapi
    --socks5-gssapi-nec --socks5-gssapi-service --socks5-hostname --speed-limit --speed-time
    --ssl --ssl-allow-beast --ssl-auto-client-cert --ssl-no-revoke --ssl-reqd
    --ssl-revoke-best-effort --sslv2 --sslv3 --stderr --styled-output --suppress-connect-headers
    --tcp-fastopen --tcp-nodelay --telnet-option --tftp-blksize --tftp-no-options --time-cond
    --tls-max --tls13-ciphers --tlsauthtype --tlspassword --tlsuser --tlsv1 --tlsv1.0 --tlsv1.1
    --tlsv1.2 --tlsv1.3 --tr-encoding --trace --trace-ascii --trace-time --unix-socket
    --upload-file --url --url-query --use-ascii --user --user-agent --verbose --version
    --write-out --xattr";

    /// The short options of curl 7.88.1.
    const CURL_SHORT_OPTIONS: &str = "aEKCbcdqDfFPGgIHh0ik46jlLMmn:NoZ#xUpQreJORXSsYy23tz1TBuAvVw";

    #[test]
    fn every_curl_option_is_taken_or_refused_with_a_reason() {
        let mut command = crate::Cli::command();
        command.build();
        let taken_long = |long: &str| {
            command.get_arguments().any(|a| {
                a.get_long() == Some(long)
                    || a.get_all_aliases().is_some_and(|all| all.contains(&long))
            })
        };
        let mut missing = Vec::new();
        for option in CURL_LONG_OPTIONS.split_whitespace() {
            let long = &option[2..];
            let known = taken_long(long) || FLAGS.iter().any(|f| f.long == option);
            if !known {
                missing.push(option.to_owned());
            }
        }
        for short in CURL_SHORT_OPTIONS.chars() {
            let known = command
                .get_arguments()
                .any(|a| a.get_short() == Some(short))
                || FLAGS.iter().any(|f| f.short == Some(short));
            if !known {
                missing.push(format!("-{short}"));
            }
        }
        assert!(
            missing.is_empty(),
            "curl options neither taken nor refused: {missing:?}"
        );
    }

    #[test]
    fn the_help_text_names_every_flag() {
        for flag in FLAGS {
            assert!(
                help().contains(flag.long),
                "{} missing from the help",
                flag.long
            );
        }
    }
}
