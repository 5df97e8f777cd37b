//! Value parsers for curl mode's flags: what clap checks while parsing (a bad `-H`, `-X` or
//! number of seconds is a usage error, exit status 2).
//!
//! `--resolve` is not parsed here: curl reports a malformed entry as exit 49 when the transfer
//! is set up, so [`parse_resolve`] runs from [`crate::curl::setup`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use http::Method;
use http::header::{HeaderName, HeaderValue};

use super::{HeaderAction, HeaderArg, ResolveArg};

/// Parses `-X`.
pub(super) fn parse_method(text: &str) -> Result<Method, String> {
    Method::from_bytes(text.as_bytes()).map_err(|_| format!("invalid method {text:?}"))
}

/// Parses `-H`: `Name: value`, `Name:` (remove) or `Name;` (send with an empty value).
pub(super) fn parse_header(text: &str) -> Result<HeaderArg, String> {
    let (name, action) = match text.split_once(':') {
        Some((name, value)) => {
            let value = value.trim();
            if value.is_empty() {
                (name, HeaderAction::Remove)
            } else {
                let value = HeaderValue::from_str(value)
                    .map_err(|_| format!("invalid value in header {text:?}"))?;
                (name, HeaderAction::Set(value))
            }
        }
        None => match text.strip_suffix(';') {
            Some(name) => (name, HeaderAction::Set(HeaderValue::from_static(""))),
            None => {
                return Err(format!(
                    "header {text:?} must be \"Name: value\", \"Name:\" or \"Name;\""
                ));
            }
        },
    };
    let spelling = name.trim().to_owned();
    let name = HeaderName::from_bytes(spelling.as_bytes())
        .map_err(|_| format!("invalid header name in {text:?}"))?;
    Ok(HeaderArg {
        name,
        spelling,
        action,
    })
}

/// Parses a non-negative number of seconds (fractions allowed), cut to whole milliseconds as
/// curl keeps its timeouts: `-m 0.0005` is 0, which every caller reads as no limit, as curl
/// does.
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a number of seconds, got {text:?}"))?;
    let exact = Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("expected a non-negative number of seconds, got {text:?}"))?;
    Ok(exact - Duration::from_nanos(u64::from(exact.subsec_nanos() % 1_000_000)))
}

/// Parses `--rate N/UNIT` (UNIT `s`, `m`, `h` or `d`; `N` alone is per hour) into the time
/// between transfer starts, as curl 7.88 reads it: only the unit's first letter counts
/// (`1/sec` is one a second).
pub(crate) fn parse_rate(text: &str) -> Result<Duration, String> {
    let (count, unit) = match text.split_once('/') {
        Some((count, unit)) => (count, unit),
        None => (text, "h"),
    };
    let unit = match unit.chars().next() {
        Some('s') => Duration::from_secs(1),
        Some('m') => Duration::from_secs(60),
        Some('h') => Duration::from_secs(3600),
        Some('d') => Duration::from_secs(86_400),
        _ => return Err(format!("expected N/s, N/m, N/h or N/d, got {text:?}")),
    };
    match count.parse::<u32>() {
        Ok(count) if count > 0 => Ok(unit / count),
        _ => Err(format!(
            "expected a positive number of transfers, got {text:?}"
        )),
    }
}

/// Parses `--parallel-max` as curl 7.88 does: above 300 is 300, and 0 is the default of 50.
pub(crate) fn parse_parallel_max(text: &str) -> Result<u16, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Ok(50),
        Ok(n) => Ok(u16::try_from(n.min(300)).unwrap_or(300)),
        Err(_) => Err(format!("expected a number of transfers, got {text:?}")),
    }
}

/// Checks `-C`'s offset: a number of bytes, or `-` (after what the output file holds).
pub(crate) fn parse_continue_at(text: &str) -> Result<String, String> {
    if text == "-" || text.parse::<u64>().is_ok() {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "expected an offset in bytes or \"-\", got {text:?}"
        ))
    }
}

/// Parses a file mode in octal (`0644`, `600`), as `--create-file-mode` takes it.
pub(crate) fn parse_octal(text: &str) -> Result<u32, String> {
    u32::from_str_radix(text.trim(), 8)
        .ok()
        .filter(|mode| *mode <= 0o7777)
        .ok_or_else(|| format!("expected an octal file mode such as 0644, got {text:?}"))
}

/// Parses a size in bytes with an optional `k`, `M` or `G` suffix (powers of 1024, either
/// case), as curl's `--max-filesize` takes it.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 1u64 << 10),
        Some((at, 'm' | 'M')) => (&text[..at], 1 << 20),
        Some((at, 'g' | 'G')) => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("expected a size in bytes (k, M or G suffix), got {text:?}"))
}

/// Parses `--resolve [+]HOST:PORT:ADDR[,ADDR]...`; HOST and ADDR may be bracketed IPv6, HOST
/// may be `*` (every host on PORT). `-HOST:PORT` drops an earlier entry, as curl's removal
/// entries do; `Ok(None)` for one that does not parse, which curl notes and skips.
///
/// # Errors
///
/// A message naming the entry; curl mode reports it as exit 49.
pub(crate) fn parse_resolve(text: &str) -> Result<Option<ResolveArg>, String> {
    if let Some(removal) = text.strip_prefix('-') {
        let parsed = removal.split_once(':').and_then(|(host, port)| {
            let port = port.parse::<u16>().ok()?;
            (!host.is_empty()).then(|| ResolveArg {
                host: host.to_owned(),
                port,
                addrs: None,
            })
        });
        return Ok(parsed);
    }
    let bad = || format!("Couldn't parse CURLOPT_RESOLVE entry '{text}'");
    let spec = text.strip_prefix('+').unwrap_or(text);
    let (host, rest) = match spec.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed.split_once(']').ok_or_else(bad)?;
            (host, rest.strip_prefix(':').ok_or_else(bad)?)
        }
        None => spec.split_once(':').ok_or_else(bad)?,
    };
    let (port, addrs) = rest.split_once(':').ok_or_else(bad)?;
    if host.is_empty() {
        return Err(bad());
    }
    let port: u16 = port.parse().map_err(|_| bad())?;
    let addrs = addrs
        .split(',')
        .map(|addr| {
            let addr = addr.trim();
            let addr = addr
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(addr);
            addr.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, port))
                .map_err(|_| format!("Resolve address '{addr}' found illegal in '{text}'"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(ResolveArg {
        host: host.to_owned(),
        port,
        addrs: Some(addrs),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_become_the_time_between_starts() {
        assert_eq!(parse_rate("4/s"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_rate("2/m"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_rate("1"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_rate("1/d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_rate("2/sec"), Ok(Duration::from_millis(500)));
        for bad in ["0", "2/x", "abc", "-1", "/s", "1/"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_set_remove_and_empty() {
        let h = parse_header("X-Test:  a b ").unwrap();
        assert_eq!(h.name, "x-test");
        assert_eq!(h.action, HeaderAction::Set(HeaderValue::from_static("a b")));
        assert_eq!(
            parse_header("User-Agent:").unwrap().action,
            HeaderAction::Remove
        );
        assert_eq!(
            parse_header("X-Empty;").unwrap().action,
            HeaderAction::Set(HeaderValue::from_static(""))
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
    }

    #[test]
    fn resolve_entries_accept_ipv6_in_brackets() {
        let r = parse_resolve("example.test:443:127.0.0.1")
            .unwrap()
            .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("example.test", 443));
        assert_eq!(r.addrs, Some(vec!["127.0.0.1:443".parse().unwrap()]));
        let r = parse_resolve("+a.test:80:[::1],127.0.0.2")
            .unwrap()
            .unwrap();
        assert_eq!(
            r.addrs,
            Some(vec![
                "[::1]:80".parse().unwrap(),
                "127.0.0.2:80".parse().unwrap()
            ])
        );
        let r = parse_resolve("[::1]:8080:127.0.0.1").unwrap().unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 8080));
        let r = parse_resolve("*:8080:127.0.0.1").unwrap().unwrap();
        assert_eq!((r.host.as_str(), r.port), ("*", 8080));
        // A removal entry; one that does not parse is skipped, as curl skips it.
        let r = parse_resolve("-a.test:80").unwrap().unwrap();
        assert_eq!((r.host.as_str(), r.port, r.addrs), ("a.test", 80, None));
        assert_eq!(parse_resolve("-a.test"), Ok(None));
        assert_eq!(
            parse_resolve("a.test:80").unwrap_err(),
            "Couldn't parse CURLOPT_RESOLVE entry 'a.test:80'"
        );
        assert!(parse_resolve("a.test:http:127.0.0.1").is_err());
        assert!(parse_resolve("a.test:80:not-an-ip").is_err());
    }

    #[test]
    fn seconds_take_fractions() {
        assert_eq!(parse_seconds("0.3").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_seconds("2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_seconds("1.0015").unwrap(),
            Duration::from_millis(1001)
        );
        assert_eq!(parse_seconds("0.0009").unwrap(), Duration::ZERO);
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }

    #[test]
    fn sizes_take_curls_suffixes() {
        assert_eq!(parse_size("100").unwrap(), 100);
        assert_eq!(parse_size("1k").unwrap(), 1024);
        assert_eq!(parse_size("3M").unwrap(), 3 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("0").unwrap(), 0);
        assert!(parse_size("-5").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
