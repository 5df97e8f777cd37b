//! Dates as curl reads them (its `curl_getdate`), for `-z`: a few words and numbers in almost
//! any order, so that `Wed, 21 Oct 2015 07:28:00 GMT`, `21 Oct 2015`, `Oct 21 15`,
//! `2015 Oct 21`, `21-Oct-2015 07:28`, `20151021` and `21 Oct 2015 07:28 +0200` all name the
//! same day.
//!
//! The text is read as up to six tokens, each a run of letters or of digits (anything else
//! separates them):
//!
//! * letters: a week day (`Wed` or `Wednesday`, ignored but allowed once), a month (`Oct`:
//!   three letters only), or a time zone (`GMT`, `UTC`, `PST`, `CEST`, a military letter, ...,
//!   from curl's table); any other word makes the text no date;
//! * `HH:MM:SS` or `HH:MM` (one or two digits each): the time;
//! * four digits after a `+` or `-`, at most 1400, while no zone is known: the offset
//!   (`+0200` is two hours ahead of GMT);
//! * eight digits before any year, month or day: `YYYYMMDD`;
//! * other numbers: the day of the month (1 to 31) when one is expected, then the year (two
//!   digits are 1971–2070, as in curl: above 70 is 19xx).
//!
//! Day, month and year must all be found; without a time it is midnight, and without a zone,
//! GMT. A day past the month's end rolls over (`Feb 31` is March 3rd or 2nd), and second 60 is
//! the next minute's first, as in curl. `2015-10-21` is no date here, as it is none for curl:
//! `-10` and `-21` are neither a day (one was read) nor a month.
//!
//! What this module does not do: read full month names (`October`), `am`/`pm`, or relative
//! dates (`yesterday`); curl reads none of them either.

/// Seconds since the Unix epoch, now.
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `at` (seconds since the epoch) as curl's cache files write an expiry: `YYYYMMDD HH:MM:SS`,
/// UTC (`unlimited` past what a date can hold).
pub(crate) fn file_stamp(at: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(at) {
        Ok(t) => format!(
            "{}{:02}{:02} {:02}:{:02}:{:02}",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => "unlimited".to_owned(),
    }
}

/// Seconds since the Unix epoch (negative before 1970) of `text` read as a date as curl reads
/// one; `None` for text curl does not take for a date.
pub(crate) fn parse(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut found = Found::default();
    let mut expect = Expect::Day;
    let mut at = 0;
    for _ in 0..6 {
        while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        let Some(&first) = bytes.get(at) else {
            break;
        };
        let start = at;
        if first.is_ascii_alphabetic() {
            while at < bytes.len() && bytes[at].is_ascii_alphabetic() {
                at += 1;
            }
            found.word(&text[start..at])?;
        } else if let Some((time, end)) = found.second.is_none().then(|| clock(bytes, at)).flatten()
        {
            (found.hour, found.minute, found.second) = (Some(time.0), Some(time.1), Some(time.2));
            at = end;
        } else {
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            let value: i64 = text[start..at]
                .parse()
                .ok()
                .filter(|v| *v <= i64::from(i32::MAX))?;
            let sign = start.checked_sub(1).map(|before| bytes[before]);
            found.number(value, at - start, sign, &mut expect)?;
        }
    }
    found.seconds()
}

/// What the tokens read so far said.
#[derive(Debug, Default)]
struct Found {
    weekday: bool,
    /// 0 for January; from `YYYYMMDD`, possibly out of range (checked at the end).
    month: Option<i64>,
    day: Option<i64>,
    year: Option<i64>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    /// Seconds to add to the local time read to make it GMT.
    zone: Option<i64>,
}

/// Which a plain number is taken for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Day,
    Year,
}

impl Found {
    /// A word: a week day, a month or a time zone, the first of them still missing that it
    /// names; `None` when it names none.
    fn word(&mut self, word: &str) -> Option<()> {
        if !self.weekday && weekday(word) {
            self.weekday = true;
        } else if let Some(month) = self.month.is_none().then(|| month(word)).flatten() {
            self.month = Some(month);
        } else if let Some(zone) = self.zone.is_none().then(|| zone(word)).flatten() {
            self.zone = Some(zone);
        } else {
            return None;
        }
        Some(())
    }

    /// A run of `digits` digits worth `value`, after the byte `sign` (if any).
    fn number(
        &mut self,
        value: i64,
        digits: usize,
        sign: Option<u8>,
        expect: &mut Expect,
    ) -> Option<()> {
        if self.zone.is_none() && digits == 4 && value <= 1400 {
            // `+HHMM` is ahead of GMT: subtract it to get GMT.
            let offset = (value / 100 * 60 + value % 100) * 60;
            match sign {
                Some(b'+') => self.zone = Some(-offset),
                Some(b'-') => self.zone = Some(offset),
                _ => {}
            }
            if self.zone.is_some() {
                return Some(());
            }
        }
        if digits == 8 && self.year.is_none() && self.month.is_none() && self.day.is_none() {
            self.year = Some(value / 10_000);
            self.month = Some(value % 10_000 / 100 - 1);
            self.day = Some(value % 100);
            return Some(());
        }
        if *expect == Expect::Day && self.day.is_none() {
            *expect = Expect::Year;
            if (1..32).contains(&value) {
                self.day = Some(value);
                return Some(());
            }
        }
        if *expect == Expect::Year && self.year.is_none() {
            self.year = Some(match value {
                71..=99 => value + 1900,
                0..=70 => value + 2000,
                _ => value,
            });
            if self.day.is_none() {
                *expect = Expect::Day;
            }
            return Some(());
        }
        None
    }

    /// The date found, in seconds since the epoch; `None` without a day, month and year, or
    /// with a field out of range.
    fn seconds(&self) -> Option<i64> {
        let (month, day, year) = (self.month?, self.day?, self.year?);
        let (hour, minute, second) = match self.second {
            Some(second) => (self.hour?, self.minute?, second),
            None => (0, 0, 0),
        };
        if day > 31 || !(0..12).contains(&month) || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let month = time::Month::try_from(u8::try_from(month + 1).ok()?).ok()?;
        let first = time::Date::from_calendar_date(i32::try_from(year).ok()?, month, 1).ok()?;
        // Days since 1970-01-01 of the month's first day; the day may run past the month.
        let days = i64::from(first.to_julian_day()) - UNIX_EPOCH_JULIAN_DAY + day - 1;
        Some(days * 86_400 + hour * 3_600 + minute * 60 + second + self.zone.unwrap_or(0))
    }
}

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;

/// `HH:MM:SS` or `HH:MM` at `at` (one or two digits each), and where it ends.
fn clock(bytes: &[u8], at: usize) -> Option<((i64, i64, i64), usize)> {
    let field = |at: usize| -> Option<(i64, usize)> {
        let digits = bytes[at.min(bytes.len())..]
            .iter()
            .take(2)
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = std::str::from_utf8(&bytes[at..at + digits]).ok()?;
        Some((text.parse().ok()?, at + digits))
    };
    let colon = |at: usize| (bytes.get(at) == Some(&b':')).then_some(at + 1);
    let (hour, end) = field(at)?;
    let (minute, end) = field(colon(end)?)?;
    match colon(end).and_then(field) {
        Some((second, end)) => Some(((hour, minute, second), end)),
        None => Some(((hour, minute, 0), end)),
    }
}

/// Whether `word` is a week day: three letters or the whole name, in any case.
fn weekday(word: &str) -> bool {
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    DAYS.iter().any(|day| match word.len() {
        3 => day[..3].eq_ignore_ascii_case(word),
        n if n > 3 => day.eq_ignore_ascii_case(word),
        _ => false,
    })
}

/// The month `word` names (0 for January): its three-letter name, in any case.
fn month(word: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    (word.len() == 3)
        .then(|| MONTHS.iter().position(|m| m.eq_ignore_ascii_case(word)))
        .flatten()
        .and_then(|at| i64::try_from(at).ok())
}

/// The seconds to add to a time in the zone `word` names to make it GMT, from the zones curl
/// knows (measured against curl 7.88: `PST` is 8 hours behind, `CEST` 2 ahead, and the
/// military letters `A`–`M` are 1–12 hours behind, `N`–`Y` 1–12 ahead, `Z` is GMT).
fn zone(word: &str) -> Option<i64> {
    /// Minutes behind GMT.
    const ZONES: [(&str, i64); 44] = [
        ("GMT", 0),
        ("UT", 0),
        ("UTC", 0),
        ("WET", 0),
        ("BST", -60),
        ("WAT", 60),
        ("AST", 240),
        ("ADT", 180),
        ("EST", 300),
        ("EDT", 240),
        ("CST", 360),
        ("CDT", 300),
        ("MST", 420),
        ("MDT", 360),
        ("PST", 480),
        ("PDT", 420),
        ("YST", 540),
        ("YDT", 480),
        ("HST", 600),
        ("HDT", 540),
        ("CAT", 600),
        ("AHST", 600),
        ("NT", 660),
        ("IDLW", 720),
        ("CET", -60),
        ("MET", -60),
        ("MEWT", -60),
        ("MEST", -120),
        ("CEST", -120),
        ("MESZ", -120),
        ("FWT", -60),
        ("FST", -120),
        ("EET", -120),
        ("WAST", -420),
        ("WADT", -480),
        ("CCT", -480),
        ("JST", -540),
        ("EAST", -600),
        ("EADT", -660),
        ("GST", -600),
        ("NZT", -720),
        ("NZST", -720),
        ("NZDT", -780),
        ("IDLE", -720),
    ];
    if word.len() > 4 {
        return None;
    }
    if let [letter] = word.as_bytes() {
        // Military zones: `J` (the observer's own time) is none.
        let hours = match letter.to_ascii_uppercase() {
            b @ b'A'..=b'I' => i64::from(b - b'A') + 1,
            b @ b'K'..=b'M' => i64::from(b - b'K') + 10,
            b @ b'N'..=b'Y' => -(i64::from(b - b'N') + 1),
            b'Z' => 0,
            _ => return None,
        };
        return Some(hours * 3_600);
    }
    ZONES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(word))
        .map(|(_, minutes)| minutes * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Wed, 21 Oct 2015 HH:MM:SS GMT` as seconds.
    fn oct_21(hour: i64, minute: i64) -> i64 {
        1_445_385_600 + hour * 3_600 + minute * 60
    }

    /// What curl 7.88 sent as `If-Modified-Since` for each `-z` text, or that it took none.
    #[test]
    fn reads_what_curl_reads_and_refuses_what_curl_refuses() {
        let day = Some(oct_21(0, 0));
        for (text, expected) in [
            ("20151021", day),
            ("21 Oct 2015", day),
            ("Wed, 21 Oct 2015 07:28:00 GMT", Some(oct_21(7, 28))),
            ("Oct 21 2015", day),
            ("21-Oct-2015 07:28", Some(oct_21(7, 28))),
            ("21 Oct 2015 07:28:00 +0200", Some(oct_21(5, 28))),
            ("21 Oct 2015 07:28:00 PST", Some(oct_21(15, 28))),
            ("21 Oct 15", day),
            ("2015 Oct 21", day),
            ("Wednesday 21 Oct 2015", day),
            ("wed 21 oct 2015", day),
            ("21 Oct 2015 12:00:00 +1400", Some(oct_21(-2, 0))),
            ("21 Oct 2015 12:00:00 -0130", Some(oct_21(13, 30))),
            ("21 Oct 2015 12:00:00 A", Some(oct_21(13, 0))),
            ("21 Oct 2015 12:00:00 N", Some(oct_21(11, 0))),
            ("21 Oct 2015 12:00:00 NZDT", Some(oct_21(-1, 0))),
            ("21 Oct 2015 23:59:60", Some(oct_21(24, 0))),
            ("21 Oct 2015 7:8", Some(oct_21(7, 8))),
            ("21 Oct 2015, 12:00:00", Some(oct_21(12, 0))),
            ("Feb 31 2015", Some(1_425_340_800)),
            ("Oct 21 70", Some(3_181_075_200)),
            ("21 Oct 1969", Some(-6_220_800)),
            ("Sun Nov  6 08:49:37 1994", Some(784_111_777)),
            ("Sunday, 06-Nov-94 08:49:37 GMT", Some(784_111_777)),
            ("6 Nov 1994 08:49 CET", Some(784_108_140)),
            ("2015-10-21", None),
            ("Wednesday 21 October 2015", None),
            ("Wedn 21 Oct 2015", None),
            ("Oct 21, 2015 7:28pm", None),
            ("1445412480", None),
            ("yesterday", None),
            ("21 Oct 2015 25:00", None),
            ("21 Oct 2015 12:00:00 +1401", None),
            ("21 Oct 2015 07:28:00 GMT junk", None),
            ("21 Oct 2015 07:28:00 GMT+0100", None),
            ("Mon Mon 21 Oct 2015", None),
            ("21 Oct 2015 12:00:00 J", None),
            ("21.10.2015", None),
            ("Oct 32 2015", None),
            ("Oct 0 2015", None),
            ("", None),
        ] {
            assert_eq!(parse(text), expected, "{text:?}");
        }
    }
}
