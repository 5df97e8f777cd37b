//! CPU time of a load tool and of nginx's workers over one run, read from `/proc`.
//!
//! The oha comparison's requests/s and p99 depend on how the kernel shares two cores between
//! the tool and nginx in each run; the CPU each spends per response does not, and it is what a
//! tool can change. The tool is this process's child: once waited for, its user and system
//! time are added to this process's `cutime` and `cstime`, so the difference across one run is
//! that run's (the comparison reaps nothing else meanwhile). nginx's workers keep running, and
//! their own `utime` and `stime` are read before and after.
//!
//! What this does not do: sample a process still running (a tool's time counts once it is
//! reaped), or work outside Linux (`None` when `/proc` cannot be read).

use std::time::Duration;

/// The unit of `/proc`'s times: `USER_HZ`, 100 on Linux for every architecture's user ABI.
const USER_HZ: u64 = 100;

/// User plus system time of this process's children that have been waited for.
pub(crate) fn reaped_children() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // `cutime` and `cstime`, fields 16 and 17 (the 14th and 15th after the command's name).
    times(&stat, 13)
}

/// User plus system time of the nginx master `master`'s workers so far.
pub(crate) fn of_workers(master: u32) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for pid in super::workers::workers(master)? {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `utime` and `stime`, fields 14 and 15.
        total += times(&stat, 11)?;
    }
    Some(total)
}

/// The sum of the two clock-tick fields at `index` and `index + 1` after the command's name
/// (which is in parentheses and may itself hold spaces and parentheses).
fn times(stat: &str, index: usize) -> Option<Duration> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(index);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 1000 / USER_HZ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_childs_time_is_counted_and_fields_are_read_past_the_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 0 0 0 0 0 250 50 7 3 20 0 1 0";
        assert_eq!(times(stat, 11), Some(Duration::from_secs(3)));
        assert_eq!(times(stat, 13), Some(Duration::from_millis(100)));
        assert_eq!(times("42 (x) S", 11), None);

        let before = reaped_children().expect("/proc/self/stat");
        // A child that spends CPU: a shell loop of about a tenth of a second or more.
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let after = reaped_children().unwrap();
        assert!(after > before, "{before:?} then {after:?}");
    }
}
