//! `-z`/`--time-cond`: a conditional request, and curl's simulated `304` when the server
//! ignores the condition.
//!
//! `-z DATE` sends `If-Modified-Since: DATE`; `-z -DATE` sends `If-Unmodified-Since`. `DATE`
//! is an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT` and HTTP's two older forms), `21 Oct 2015`
//! (optionally with `07:28:00`), `2015-10-21` or `20151021`, all in GMT; anything else that
//! names a file takes the file's modification time, as curl does. Text that is neither is
//! curl's warning and no condition. curl's own date parser reads more spellings (week days
//! alone, time zones by name); these are the ones its manual shows and scripts use.
//!
//! When the response carries `Last-Modified` and the condition does not hold (the document is
//! not newer, or for `-z -DATE` not older, than the date), the transfer ends as curl ends it:
//! the body is not written and `%{http_code}` is `304`, whatever the server answered.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::{
    HeaderName, HeaderValue, IF_MODIFIED_SINCE, IF_UNMODIFIED_SINCE, LAST_MODIFIED,
};
use time::macros::format_description;
use time::{Date, PrimitiveDateTime, Time};

/// A `-z` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeCond {
    /// The date compared with.
    pub(crate) date: SystemTime,
    /// `-z -DATE`: the document must not have changed since.
    pub(crate) unmodified: bool,
}

/// curl's warning for a `-z` that is neither a date nor a file, line by line.
pub(crate) const ILLEGAL: [&str; 2] = [
    "Warning: Illegal date format for -z, --time-cond (and not a file name). ",
    "Warning: Disabling time condition. See curl_getdate(3) for valid date syntax.",
];

impl TimeCond {
    /// The condition `-z TEXT` asks for; `None` for text that is neither a date nor a file.
    pub(crate) fn parse(text: &str) -> Option<TimeCond> {
        let (unmodified, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let date = parse_date(text.trim())
            .or_else(|| std::fs::metadata(text).and_then(|m| m.modified()).ok())?;
        // Whole seconds, as HTTP dates (and curl) have them.
        let seconds = date.duration_since(UNIX_EPOCH).ok()?.as_secs();
        let date = UNIX_EPOCH + Duration::from_secs(seconds);
        Some(TimeCond { date, unmodified })
    }

    /// The request header that carries the condition.
    pub(crate) fn header(&self) -> (HeaderName, HeaderValue) {
        let name = if self.unmodified {
            IF_UNMODIFIED_SINCE
        } else {
            IF_MODIFIED_SINCE
        };
        let value = HeaderValue::from_str(&httpdate::fmt_http_date(self.date))
            .expect("an HTTP date is a header value");
        (name, value)
    }

    /// Whether a response with these headers meets the condition; one without a readable
    /// `Last-Modified` does (the server's status stands).
    pub(crate) fn met_by(&self, headers: &HeaderMap) -> bool {
        let Some(modified) = headers
            .get(LAST_MODIFIED)
            .and_then(|v| v.to_str().ok())
            .and_then(|text| httpdate::parse_http_date(text).ok())
        else {
            return true;
        };
        if self.unmodified {
            modified < self.date
        } else {
            modified > self.date
        }
    }
}

/// A date in one of the spellings the module docs list, as GMT.
fn parse_date(text: &str) -> Option<SystemTime> {
    if let Ok(date) = httpdate::parse_http_date(text) {
        return Some(date);
    }
    let with_time = format_description!(
        "[day padding:none] [month repr:short] [year] [hour]:[minute]:[second]"
    );
    if let Ok(at) = PrimitiveDateTime::parse(text, &with_time) {
        return Some(at.assume_utc().into());
    }
    let dates = [
        format_description!("[day padding:none] [month repr:short] [year]"),
        format_description!("[year]-[month]-[day]"),
        format_description!("[year][month][day]"),
    ];
    dates
        .iter()
        .find_map(|format| Date::parse(text, format).ok())
        .map(|date| {
            PrimitiveDateTime::new(date, Time::MIDNIGHT)
                .assume_utc()
                .into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http_date(text: &str) -> SystemTime {
        httpdate::parse_http_date(text).unwrap()
    }

    #[test]
    fn dates_in_the_spellings_curl_users_write() {
        let midnight = http_date("Wed, 21 Oct 2015 00:00:00 GMT");
        for text in [
            "21 Oct 2015",
            "2015-10-21",
            "20151021",
            "Wed, 21 Oct 2015 00:00:00 GMT",
        ] {
            assert_eq!(parse_date(text), Some(midnight), "{text}");
        }
        assert_eq!(
            parse_date("21 Oct 2015 07:28:00"),
            Some(http_date("Wed, 21 Oct 2015 07:28:00 GMT"))
        );
        assert_eq!(parse_date("not a date"), None);
    }

    #[test]
    fn a_leading_dash_asks_for_unmodified_and_a_file_gives_its_time() {
        let cond = TimeCond::parse("-21 Oct 2015").unwrap();
        assert!(cond.unmodified);
        assert_eq!(cond.header().0, IF_UNMODIFIED_SINCE);
        assert_eq!(cond.header().1, "Wed, 21 Oct 2015 00:00:00 GMT");
        let file = std::env::current_exe().unwrap();
        let cond = TimeCond::parse(file.to_str().unwrap()).unwrap();
        let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
        let seconds = modified.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(cond.date, UNIX_EPOCH + Duration::from_secs(seconds));
        assert!(TimeCond::parse("no such file or date").is_none());
    }

    #[test]
    fn the_condition_reads_last_modified() {
        let cond = TimeCond::parse("21 Oct 2015").unwrap();
        let dated = |text: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(LAST_MODIFIED, HeaderValue::from_static(text));
            headers
        };
        assert!(cond.met_by(&dated("Thu, 22 Oct 2015 00:00:00 GMT")));
        assert!(!cond.met_by(&dated("Wed, 21 Oct 2015 00:00:00 GMT")));
        assert!(cond.met_by(&HeaderMap::new()));
        let older = TimeCond {
            unmodified: true,
            ..cond
        };
        assert!(older.met_by(&dated("Tue, 20 Oct 2015 00:00:00 GMT")));
        assert!(!older.met_by(&dated("Wed, 21 Oct 2015 00:00:00 GMT")));
    }
}
