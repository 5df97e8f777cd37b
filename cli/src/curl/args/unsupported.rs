//! curl flags poolcurl deliberately does not take, and why.
//!
//! They are recognized before clap sees the command line, so using one says what is missing in
//! curl's style (`poolcurl: option --digest: is not supported by poolcurl (...)`, exit 2) instead
//! of calling a real curl flag unknown. `--help` lists them ([`HELP`]); so does the README.

/// A curl flag poolcurl does not take, its short form if any, and the reason.
struct Unsupported {
    long: &'static str,
    short: Option<char>,
    why: &'static str,
}

/// The deliberately unsupported flags.
const FLAGS: &[Unsupported] = &[
    flag("--anyauth", None, "only Basic authentication (-u)"),
    flag("--digest", None, "only Basic authentication (-u)"),
    flag("--ntlm", None, "only Basic authentication (-u)"),
    flag("--negotiate", None, "only Basic authentication (-u)"),
    flag("--netrc", Some('n'), "no .netrc; use -u"),
    flag("--netrc-file", None, "no .netrc; use -u"),
    flag("--netrc-optional", None, "no .netrc; use -u"),
    flag("--http3", None, "HTTP/1.x and HTTP/2 only"),
    flag("--http3-only", None, "HTTP/1.x and HTTP/2 only"),
    flag(
        "--tlsv1.3",
        None,
        "no minimum TLS version setting in the pool",
    ),
    flag(
        "--tls-max",
        None,
        "no maximum TLS version setting in the pool",
    ),
    flag("--ciphers", None, "rustls chooses the cipher suites"),
    flag("--capath", None, "use --cacert with a PEM bundle"),
    flag("--pinnedpubkey", None, "no public key pinning"),
    flag("--socks4", None, "HTTP proxies only (-x)"),
    flag("--socks4a", None, "HTTP proxies only (-x)"),
    flag("--socks5", None, "HTTP proxies only (-x)"),
    flag("--socks5-hostname", None, "HTTP proxies only (-x)"),
    flag("--preproxy", None, "HTTP proxies only (-x)"),
    flag("--unix-socket", None, "TCP connections only"),
    flag("--abstract-unix-socket", None, "TCP connections only"),
    flag("--limit-rate", None, "no rate limiting"),
    flag("--speed-limit", Some('Y'), "no speed limits"),
    flag("--speed-time", Some('y'), "no speed limits"),
    flag("--libcurl", None, "poolcurl is not libcurl"),
    flag("--trace", None, "use -v"),
    flag("--trace-ascii", None, "use -v"),
    flag("--manual", Some('M'), "see --help and the README"),
    flag(
        "--remote-header-name",
        Some('J'),
        "-O names files after the URL only",
    ),
    flag("--time-cond", Some('z'), "no conditional requests; use -H"),
    flag(
        "--location-trusted",
        None,
        "credentials never follow a redirect to another host",
    ),
    flag(
        "--junk-session-cookies",
        Some('j'),
        "session cookies are always kept",
    ),
    flag("--alt-svc", None, "no Alt-Svc cache"),
    flag("--hsts", None, "no HSTS cache"),
    flag("--doh-url", None, "the system resolver or --resolve only"),
    flag("--stderr", None, "errors always go to stderr"),
];

const fn flag(long: &'static str, short: Option<char>, why: &'static str) -> Unsupported {
    Unsupported { long, short, why }
}

/// What `--help` prints after the options.
pub(crate) const HELP: &str = "\
Not supported (using one exits 2 and says why): --anyauth --digest --ntlm --negotiate \
-n/--netrc --netrc-file --netrc-optional --http3 --http3-only --tlsv1.3 --tls-max --ciphers \
--capath --pinnedpubkey --socks4 --socks4a --socks5 --socks5-hostname --preproxy \
--unix-socket --abstract-unix-socket --limit-rate -Y/--speed-limit -y/--speed-time --libcurl \
--trace --trace-ascii -M/--manual -J/--remote-header-name -z/--time-cond --location-trusted \
-j/--junk-session-cookies --alt-svc --hsts --doh-url --stderr; and protocols other than \
http:// and https://. ~/.curlrc is not read (use -K FILE).";

/// The message for the first deliberately unsupported flag on the command line (`argv`
/// without the program name), if any. Stops at `--`; looks at the first letter of a bundle of
/// short flags only for flags without values.
pub(crate) fn find(argv: &[String]) -> Option<String> {
    for arg in argv {
        if arg == "--" {
            return None;
        }
        let found = if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            FLAGS.iter().find(|f| &f.long[2..] == name)
        } else if let Some(shorts) = arg.strip_prefix('-') {
            shorts
                .chars()
                .next()
                .and_then(|c| FLAGS.iter().find(|f| f.short == Some(c)))
        } else {
            None
        };
        if let Some(flag) = found {
            let shown = if arg.starts_with("--") {
                flag.long.to_owned()
            } else {
                format!("-{}", flag.short.unwrap_or('?'))
            };
            return Some(format!(
                "option {shown}: is not supported by poolcurl ({})",
                flag.why
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn unsupported_flags_are_named_with_the_reason() {
        assert_eq!(
            find(&argv(&["-s", "--digest", "http://a/"])).as_deref(),
            Some("option --digest: is not supported by poolcurl (only Basic authentication (-u))")
        );
        assert_eq!(
            find(&argv(&["-J", "http://a/"])).as_deref(),
            Some("option -J: is not supported by poolcurl (-O names files after the URL only)")
        );
        assert_eq!(find(&argv(&["-sSf", "http://a/"])), None);
        assert_eq!(find(&argv(&["--", "--digest"])), None);
    }

    #[test]
    fn the_help_text_names_every_flag() {
        for flag in FLAGS {
            assert!(HELP.contains(flag.long), "{} missing from HELP", flag.long);
        }
    }
}
