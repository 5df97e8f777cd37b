//! `--preconnect N`: warming every (partition, origin) before the clock starts.
//!
//! Each partition's client calls the pool's `Client::preconnect` for every origin of the run,
//! all at once, on the partition's own thread, and the run begins when every warm-up has
//! ended. The warm-up's time and outcome are reported apart from the run: its connections
//! appear in the connection counts (they are the run's connections), but its time is not in
//! the duration, the rate or the latencies.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use http::Uri;
use pool::{ConnectionPool, OriginKey};
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio::task::JoinSet;

/// What the warm-up did.
#[derive(Debug, Clone, Default)]
pub(crate) struct WarmUp {
    /// `--preconnect`: connections asked for per partition and origin.
    pub(crate) per_origin: u64,
    /// How long it took.
    pub(crate) duration: Duration,
    /// Connections ready when it ended (HTTP/1 ones, plus one per HTTP/2 origin).
    pub(crate) connections: usize,
    /// Establishments that failed.
    pub(crate) failed: usize,
    /// The first failure's message.
    pub(crate) example: Option<String>,
}

impl WarmUp {
    /// Warms `n` connections to each origin of `urls` in every partition.
    pub(crate) fn run(
        pool: &ConnectionPool,
        handles: &[Handle],
        ids: &[pool::PartitionId],
        urls: &[Uri],
        n: u64,
    ) -> Result<WarmUp, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the warm-up runtime: {e}"))?;
        let mut seen = HashSet::new();
        let origins: Vec<&Uri> = urls
            .iter()
            .filter(|uri| OriginKey::from_uri(uri).is_ok_and(|key| seen.insert(key)))
            .collect();
        let count = usize::try_from(n).unwrap_or(usize::MAX);
        let start = Instant::now();
        let mut warm = WarmUp {
            per_origin: n,
            ..WarmUp::default()
        };
        runtime.block_on(async {
            let mut tasks = JoinSet::new();
            for (handle, id) in handles.iter().zip(ids) {
                let client = pool.client_for(*id).map_err(|e| e.to_string())?;
                for uri in &origins {
                    let (client, uri) = (client.clone(), (*uri).clone());
                    tasks.spawn_on(async move { client.preconnect(&uri, count).await }, handle);
                }
            }
            while let Some(joined) = tasks.join_next().await {
                match joined.map_err(|e| format!("warm-up task: {e}"))? {
                    Ok(done) => {
                        warm.connections += done.connections();
                        warm.failed += done.errors.len();
                        if let Some(error) = done.errors.first() {
                            warm.example.get_or_insert_with(|| error.to_string());
                        }
                    }
                    Err(error) => {
                        warm.failed += 1;
                        warm.example.get_or_insert_with(|| error.to_string());
                    }
                }
            }
            Ok::<(), String>(())
        })?;
        warm.duration = start.elapsed();
        Ok(warm)
    }

    /// The summary's line.
    pub(crate) fn text(&self) -> String {
        let failed = match (&self.example, self.failed) {
            (_, 0) => String::new(),
            (Some(example), n) => format!("; {n} failed, e.g. {example}"),
            (None, n) => format!("; {n} failed"),
        };
        format!(
            "  Warm-up               {} connections ready in {:.3} ms (--preconnect {}){failed}",
            self.connections,
            self.duration.as_secs_f64() * 1e3,
            self.per_origin
        )
    }

    /// The summary's JSON object.
    pub(crate) fn json(&self) -> Value {
        json!({
            "preconnect": self.per_origin,
            "duration_ms": self.duration.as_secs_f64() * 1e3,
            "connections": self.connections,
            "failed": self.failed,
            "example": self.example,
        })
    }
}
