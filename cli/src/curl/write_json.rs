//! `-w '%{json}'` and `-w '%{header_json}'`: a transfer's variables and its last response's
//! headers as JSON, laid out as curl 7.88 lays them out.
//!
//! `%{json}` is one line: every variable [`super::write_out`] knows, keys in alphabetical
//! order, then `curl_version` (poolcurl's name and version); numbers as numbers, times as
//! seconds, and `null` for what a transfer does not have (no error message, no redirect, no
//! output file). `%{header_json}` is `{"name":["value",...],\n...\n}` with lower-case names in
//! the order they arrived and every value of a repeated header; `{\n}` without headers.

use http::HeaderMap;
use serde_json::Value;

use super::record::TransferRecord;
use super::write_out::{Var, expand};

/// How a variable prints in JSON.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A JSON number (integers).
    Number,
    /// Seconds as `-w` prints them, six decimals, which curl writes into JSON as they are
    /// (`0.000000`, not `0.0`; `0.000001`, not `1e-6`).
    Seconds,
    /// A JSON string.
    Text,
    /// A JSON string, or `null` when empty.
    TextOrNull,
}

/// The variables of `%{json}`, in curl's (alphabetical) order.
const FIELDS: &[(&str, Var, Kind)] = &[
    ("certs", Var::Certs, Kind::Text),
    ("conn_id", Var::ConnId, Kind::Number),
    ("conn_reused", Var::ConnReused, Kind::Number),
    ("content_type", Var::ContentType, Kind::TextOrNull),
    ("errormsg", Var::ErrorMsg, Kind::TextOrNull),
    ("exitcode", Var::ExitCode, Kind::Number),
    (
        "filename_effective",
        Var::FilenameEffective,
        Kind::TextOrNull,
    ),
    ("ftp_entry_path", Var::FtpEntryPath, Kind::TextOrNull),
    ("http_code", Var::HttpCode, Kind::Number),
    ("http_connect", Var::HttpConnect, Kind::Number),
    ("http_version", Var::HttpVersion, Kind::Text),
    ("local_ip", Var::LocalIp, Kind::Text),
    ("local_port", Var::LocalPort, Kind::Number),
    ("method", Var::Method, Kind::Text),
    ("num_certs", Var::NumCerts, Kind::Number),
    ("num_connects", Var::NumConnects, Kind::Number),
    ("num_headers", Var::NumHeaders, Kind::Number),
    ("num_redirects", Var::NumRedirects, Kind::Number),
    ("partition", Var::Partition, Kind::TextOrNull),
    (
        "proxy_ssl_verify_result",
        Var::ProxySslVerifyResult,
        Kind::Number,
    ),
    ("redirect_url", Var::RedirectUrl, Kind::TextOrNull),
    ("referer", Var::Referer, Kind::TextOrNull),
    ("remote_ip", Var::RemoteIp, Kind::Text),
    ("remote_port", Var::RemotePort, Kind::Number),
    ("response_code", Var::HttpCode, Kind::Number),
    ("scheme", Var::Scheme, Kind::TextOrNull),
    ("size_download", Var::SizeDownload, Kind::Number),
    ("size_header", Var::SizeHeader, Kind::Number),
    ("size_request", Var::SizeRequest, Kind::Number),
    ("size_upload", Var::SizeUpload, Kind::Number),
    ("speed_download", Var::SpeedDownload, Kind::Number),
    ("speed_upload", Var::SpeedUpload, Kind::Number),
    ("ssl_verify_result", Var::SslVerifyResult, Kind::Number),
    ("time_appconnect", Var::TimeAppConnect, Kind::Seconds),
    ("time_connect", Var::TimeConnect, Kind::Seconds),
    ("time_namelookup", Var::TimeNameLookup, Kind::Seconds),
    ("time_pretransfer", Var::TimePreTransfer, Kind::Seconds),
    ("time_redirect", Var::TimeRedirect, Kind::Seconds),
    ("time_starttransfer", Var::TimeStartTransfer, Kind::Seconds),
    ("time_total", Var::TimeTotal, Kind::Seconds),
    ("url", Var::Url, Kind::Text),
    ("url_effective", Var::UrlEffective, Kind::Text),
    ("urlnum", Var::UrlNum, Kind::Number),
];

/// `%{json}` for one transfer.
pub(crate) fn variables(record: &TransferRecord) -> String {
    let mut out = String::from("{");
    for (name, var, kind) in FIELDS {
        let mut text = String::new();
        expand(&mut text, *var, record);
        let decimal = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let json = match kind {
            Kind::Seconds if decimal(&text) => text,
            Kind::Seconds => Value::Null.to_string(),
            // `-w` pads some codes (`%{http_connect}` is `000`), which JSON does not allow.
            Kind::Number => text
                .parse::<serde_json::Number>()
                .ok()
                .or_else(|| text.parse::<u64>().ok().map(serde_json::Number::from))
                .map_or(Value::Null, Value::Number)
                .to_string(),
            Kind::Text => Value::String(text).to_string(),
            Kind::TextOrNull if text.is_empty() => Value::Null.to_string(),
            Kind::TextOrNull => Value::String(text).to_string(),
        };
        push_raw(&mut out, name, &json);
        out.push(',');
    }
    let version = concat!("poolcurl/", env!("CARGO_PKG_VERSION"));
    push_field(&mut out, "curl_version", &Value::String(version.to_owned()));
    out.push('}');
    out
}

/// `%{header_json}` for the last response's headers.
pub(crate) fn headers(headers: &HeaderMap) -> String {
    let mut out = String::from("{");
    for (i, name) in headers.keys().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('\n');
        let values: Vec<Value> = headers
            .get_all(name)
            .iter()
            .map(|v| Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        push_field(&mut out, name.as_str(), &Value::Array(values));
    }
    // curl starts the first header on the line of the brace.
    if out.starts_with("{\n") {
        out.remove(1);
    }
    out.push_str("\n}");
    out
}

fn push_field(out: &mut String, name: &str, value: &Value) {
    push_raw(out, name, &value.to_string());
}

/// `"name":` and `json`, which must be JSON already.
fn push_raw(out: &mut String, name: &str, json: &str) {
    out.push_str(&Value::String(name.to_owned()).to_string());
    out.push(':');
    out.push_str(json);
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderValue, Method, StatusCode};
    use std::time::Duration;

    #[test]
    fn variables_are_one_json_object() {
        let mut r = TransferRecord::start("http://a.test/x", Method::GET);
        r.status = Some(StatusCode::OK);
        r.finished_at = Some(Duration::from_millis(5));
        let text = variables(&r);
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(parsed["http_code"], 200);
        assert_eq!(parsed["errormsg"], Value::Null);
        assert_eq!(parsed["url_effective"], "http://a.test/x");
        assert_eq!(parsed["time_total"], 0.005);
        // Six decimals, as curl writes times, even where a float would print shorter.
        assert!(text.contains("\"time_total\":0.005000,"), "{text}");
        assert!(text.contains("\"time_appconnect\":0.000000,"), "{text}");
        // Printed `000` by -w; a number in JSON, as curl writes it.
        assert_eq!(parsed["http_connect"], 0);
        assert_eq!(parsed["ftp_entry_path"], Value::Null);
        // Without TLS the chain is empty: a string, as curl writes it.
        assert!(
            text.starts_with("{\"certs\":\"\",\"conn_id\":-1,"),
            "{text}"
        );
        assert!(text.ends_with(&format!(
            "\"curl_version\":\"poolcurl/{}\"}}",
            env!("CARGO_PKG_VERSION")
        )));
    }

    #[test]
    fn headers_are_laid_out_as_curl_does() {
        let mut map = HeaderMap::new();
        map.append("x-a", HeaderValue::from_static("1"));
        map.append("content-length", HeaderValue::from_static("5"));
        map.append("x-a", HeaderValue::from_static("2"));
        assert_eq!(
            headers(&map),
            "{\"x-a\":[\"1\",\"2\"],\n\"content-length\":[\"5\"]\n}"
        );
        assert_eq!(headers(&HeaderMap::new()), "{\n}");
    }
}
