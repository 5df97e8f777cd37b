//! What the pool learnt of each origin's server during a run (a request quota, one upload at a
//! time, a larger stream window, fewer streams for empty DATA frames, an HTTP/1 server's idle
//! timeout), read once from its stats
//! for the summary's lines and JSON keys of the same names.
//!
//! What it does not do: explain a lesson (the summary's text does) or read it while the run
//! goes on.

use std::time::Duration;

use pool::{ConnectionPool, OriginKey};

/// Each lesson, with the origins that taught it.
#[derive(Debug, Default)]
pub(crate) struct Lessons {
    pub(crate) request_quotas: Vec<(String, u64)>,
    pub(crate) uploads_one_at_a_time: Vec<String>,
    pub(crate) larger_stream_window: Vec<String>,
    pub(crate) sends_empty_data_frames: Vec<String>,
    pub(crate) server_idle_timeouts: Vec<(String, Duration)>,
}

impl Lessons {
    /// Reads `pool`'s stats of each of `origins` once.
    pub(crate) fn read(pool: &ConnectionPool, origins: &[OriginKey]) -> Lessons {
        let mut lessons = Lessons::default();
        for origin in origins {
            let stats = pool.stats(origin);
            let name = || origin.to_string();
            if let Some(quota) = stats.request_quota() {
                lessons.request_quotas.push((name(), quota));
            }
            if stats.uploads_one_at_a_time() {
                lessons.uploads_one_at_a_time.push(name());
            }
            if stats.larger_stream_window() {
                lessons.larger_stream_window.push(name());
            }
            if stats.sends_empty_data_frames() {
                lessons.sends_empty_data_frames.push(name());
            }
            if let Some(timeout) = stats.server_idle_timeout() {
                lessons.server_idle_timeouts.push((name(), timeout));
            }
        }
        lessons
    }
}
