//! `-z`/`--time-cond`: a conditional request, and curl's simulated `304` when the server
//! ignores the condition.
//!
//! `-z DATE` sends `If-Modified-Since: DATE`; `-z -DATE` sends `If-Unmodified-Since`. `DATE`
//! is read as curl reads dates (see [`super::getdate`]: `Wed, 21 Oct 2015 07:28:00 GMT`,
//! `21 Oct 2015`, `20151021`, with a time and a zone or not); text that is no date but names a
//! file takes the file's modification time, as curl does. Text that is neither is curl's
//! warning and no condition.
//!
//! When the response carries `Last-Modified` and the condition does not hold (the document is
//! not newer, or for `-z -DATE` not older, than the date), the transfer ends as curl ends it:
//! the body is not written and `%{http_code}` is `304`, whatever the server answered.

use std::time::UNIX_EPOCH;

use http::HeaderMap;
use http::header::{
    HeaderName, HeaderValue, IF_MODIFIED_SINCE, IF_UNMODIFIED_SINCE, LAST_MODIFIED,
};

use super::getdate;

/// A `-z` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeCond {
    /// The date compared with, in whole seconds since the Unix epoch (negative before 1970).
    pub(crate) date: i64,
    /// `-z -DATE`: the document must not have changed since.
    pub(crate) unmodified: bool,
}

/// curl's warning for a `-z` that is neither a date nor a file (printed as curl's `warnf`
/// wraps it).
pub(crate) const ILLEGAL: &str = "Illegal date format for -z, --time-cond (and not a file \
    name). Disabling time condition. See curl_getdate(3) for valid date syntax.";

impl TimeCond {
    /// The condition `-z TEXT` asks for; `None` for text that is neither a date nor a file.
    pub(crate) fn parse(text: &str) -> Option<TimeCond> {
        let (unmodified, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let date = getdate::parse(text).or_else(|| {
            let modified = std::fs::metadata(text).and_then(|m| m.modified()).ok()?;
            // Whole seconds, as HTTP dates (and curl) have them.
            let seconds = modified.duration_since(UNIX_EPOCH).ok()?.as_secs();
            i64::try_from(seconds).ok()
        })?;
        Some(TimeCond { date, unmodified })
    }

    /// The request header that carries the condition.
    pub(crate) fn header(&self) -> (HeaderName, HeaderValue) {
        let name = if self.unmodified {
            IF_UNMODIFIED_SINCE
        } else {
            IF_MODIFIED_SINCE
        };
        let value =
            HeaderValue::from_str(&http_date(self.date)).expect("an HTTP date is a header value");
        (name, value)
    }

    /// Whether a response with these headers meets the condition; one without a readable
    /// `Last-Modified` does (the server's status stands).
    pub(crate) fn met_by(&self, headers: &HeaderMap) -> bool {
        let Some(modified) = headers
            .get(LAST_MODIFIED)
            .and_then(|v| v.to_str().ok())
            .and_then(|text| httpdate::parse_http_date(text).ok())
            .and_then(|date| date.duration_since(UNIX_EPOCH).ok())
            .and_then(|since| i64::try_from(since.as_secs()).ok())
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

/// `seconds` since the epoch as an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`), before 1970
/// too (curl sends those as they are); the epoch itself beyond the `time` crate's years.
fn http_date(seconds: i64) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let at = time::OffsetDateTime::from_unix_timestamp(seconds)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[usize::from(at.weekday().number_days_from_monday())],
        at.day(),
        MONTHS[usize::from(u8::from(at.month()) - 1)],
        at.year(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(cond.date, i64::try_from(seconds).unwrap());
        assert!(TimeCond::parse("no such file or date").is_none());
        // A date before 1970 goes out as it is, as curl sends it.
        let cond = TimeCond::parse("21 Oct 1969 07:28 PST").unwrap();
        assert_eq!(cond.header().1, "Tue, 21 Oct 1969 15:28:00 GMT");
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
