//! The `/sigv4` route: a request signed with `--aws-sigv4` checked as a server checks it, for
//! the cases whose signature depends on the clock (and so differs between the two runs).
//!
//! The check follows AWS's description of Signature Version 4, not either client: the
//! canonical request is rebuilt from what arrived (the headers `SignedHeaders` names, in that
//! order, values trimmed with runs of blanks squeezed; the SHA-256 of the body), the key is
//! derived from the secret `SECRET`, and the timestamp must be within 15 minutes of now, as
//! AWS requires.

use hmac::{Hmac, Mac};
use pool_tests::h1::{RecordedRequest, Reply};
use sha2::{Digest, Sha256};

/// The secret every signing case gives with `-u`.
const SECRET: &str = "SECRET";

/// How far the request's clock may be from the server's.
const SKEW_SECONDS: i64 = 15 * 60;

/// `200 sigv4 ok: KEY SCOPE SIGNED-HEADERS`, or `403` with the reason.
pub(crate) fn check(req: &RecordedRequest) -> Reply {
    match verify(req) {
        Ok(text) => Reply::ok(text),
        Err(why) => Reply::new(403).body(format!("sigv4 refused: {why}\n")),
    }
}

fn verify(req: &RecordedRequest) -> Result<String, String> {
    let auth = req.header("authorization").ok_or("no Authorization")?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let (credential, rest) = rest
        .split_once(", SignedHeaders=")
        .ok_or("no SignedHeaders")?;
    let (signed, signature) = rest.split_once(", Signature=").ok_or("no Signature")?;
    let (key, scope) = credential.split_once('/').ok_or("no scope")?;
    let timestamp = req.header("x-amz-date").ok_or("no X-Amz-Date")?;
    within_skew(timestamp)?;
    let mut parts = scope.split('/');
    let (day, region, service) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(day), Some(region), Some(service), Some("aws4_request")) => (day, region, service),
        _ => return Err(format!("bad scope {scope}")),
    };
    if !timestamp.starts_with(day) {
        return Err(format!("scope day {day} is not the timestamp's"));
    }
    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let mut canonical = format!("{}\n{path}\n{query}\n", req.method);
    for name in signed.split(';') {
        let value = req.header(name).ok_or(format!("signed {name} not sent"))?;
        let squeezed = value.split_whitespace().collect::<Vec<_>>().join(" ");
        canonical.push_str(&format!("{name}:{squeezed}\n"));
    }
    canonical.push_str(&format!("\n{signed}\n{}", hex(&Sha256::digest(&req.body))));
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{timestamp}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut derived = mac(format!("AWS4{SECRET}").as_bytes(), day.as_bytes());
    for part in [region, service, "aws4_request", &to_sign] {
        derived = mac(&derived, part.as_bytes());
    }
    if hex(&derived) != signature {
        return Err("signature does not match".to_owned());
    }
    Ok(format!("sigv4 ok: {key} {scope} {signed}\n"))
}

/// Whether `timestamp` (`YYYYMMDDTHHMMSSZ`) is within [`SKEW_SECONDS`] of now.
fn within_skew(timestamp: &str) -> Result<(), String> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let then = time::PrimitiveDateTime::parse(timestamp, &format)
        .map_err(|e| format!("bad timestamp {timestamp}: {e}"))?
        .assume_utc();
    let skew = (time::OffsetDateTime::now_utc() - then)
        .whole_seconds()
        .abs();
    if skew > SKEW_SECONDS {
        return Err(format!("timestamp {timestamp} is {skew} s away"));
    }
    Ok(())
}

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
