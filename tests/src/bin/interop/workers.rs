//! Which of nginx's workers holds a load's connections, read from `/proc` while the load runs.
//!
//! Where a tool's connections land decides its figures. On a listener all workers share, each
//! worker accepts what it is woken for, and a burst of connections went anywhere from 32/32 to
//! 64/0 (either tool, 2026-12-05); a run with every connection on one worker lost a quarter of
//! its requests. The comparison's listeners therefore have a socket per worker (`reuseport`),
//! over which the kernel spreads connections by their addresses (30/34, 24/40, ... by hand). Two
//! HTTP/2 connections still land on one worker or on both as their addresses hash, and those
//! are two machines: one worker serving both gave either tool about 80k req/s at a p99 of
//! 4.4 ms, one each about 105k at 0.85 ms. So the oha comparison prints the split of every run,
//! and compares the tools over runs with the same split too.
//!
//! What this does not do: place connections (nothing a client does picks the worker), or
//! work outside Linux (`None` when `/proc` cannot be read).

use std::collections::HashSet;
use std::path::Path;

/// The number of established connections to `port` each worker of the nginx master `master`
/// holds, busiest first; `None` if `/proc` could not be read or no worker's connection was
/// found (a user other than nginx's may not read its workers' descriptors).
pub(crate) fn worker_split(master: u32, port: u16) -> Option<Vec<usize>> {
    let sockets = established_sockets(port)?;
    let mut split: Vec<usize> = workers(master)?
        .into_iter()
        .map(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return 0;
            };
            fds.filter_map(Result::ok)
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|target| socket_inode(&target))
                .filter(|inode| sockets.contains(inode))
                .count()
        })
        .collect();
    split.sort_unstable_by(|a, b| b.cmp(a));
    (split.iter().sum::<usize>() > 0).then_some(split)
}

/// `3/1`, or `?` when the split is unknown.
pub(crate) fn show_split(split: Option<&[usize]>) -> String {
    match split {
        Some(counts) if !counts.is_empty() => counts
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        _ => "?".to_owned(),
    }
}

/// The inodes of the established TCP sockets whose local port is `port` (the server's side
/// of each connection), from `/proc/net/tcp` and `tcp6`.
fn established_sockets(port: u16) -> Option<HashSet<u64>> {
    let mut inodes = HashSet::new();
    let mut read_any = false;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        read_any = true;
        // `sl local_address rem_address st tx_queue:rx_queue tr:when retrnsmt uid timeout inode`
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let local_port = local
                .rsplit_once(':')
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
            // State 01 is ESTABLISHED.
            if local_port == Some(port) && *state == "01" {
                if let Ok(inode) = inode.parse() {
                    inodes.insert(inode);
                }
            }
        }
    }
    read_any.then_some(inodes)
}

/// The processes whose parent is `master`: nginx's workers (and, briefly, its cache loader).
pub(crate) fn workers(master: u32) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut pids: Vec<u32> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent(*pid) == Some(master))
        .collect();
    pids.sort_unstable();
    Some(pids)
}

/// A process's parent, from `/proc/PID/stat` (the field after the state, which follows the
/// command name in parentheses; the name may itself contain spaces and parentheses).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The inode of a `socket:[INODE]` file descriptor target.
fn socket_inode(target: &Path) -> Option<u64> {
    let text = target.to_str()?;
    text.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_connection_is_found_in_its_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_served, _) = listener.accept().unwrap();
        let sockets = established_sockets(port).expect("/proc/net/tcp");
        assert_eq!(sockets.len(), 1, "the accepted side only");
        let mine = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter_map(|target| socket_inode(&target))
            .filter(|inode| sockets.contains(inode))
            .count();
        assert_eq!(mine, 1);
        assert_eq!(
            parent(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        assert_eq!(show_split(Some(&[3, 1])), "3/1");
        assert_eq!(show_split(None), "?");
    }
}
