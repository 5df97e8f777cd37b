//! The behaviour contracts of `pool_tests::contract`, run for our pool and for hyper-util's
//! legacy client. `tests/README.md` lists each contract with its result per backend.

#[path = "common/hyper_util_backend.rs"]
mod hyper_util_backend;
#[path = "common/hyper_util_tls.rs"]
mod hyper_util_tls;

use hyper_util_backend::HyperUtilBackend;
use pool_tests::contract::{self, PoolBackend};

/// Declares one test per (contract, backend). `paused` contracts run under paused tokio time.
macro_rules! contracts {
    ($( $(#[$attr:meta])* $name:ident ),* $(,)?) => {
        mod pool {
            use super::*;
            $( $(#[$attr])* async fn $name() { contract::$name::<PoolBackend>().await } )*
        }
        mod hyper_util {
            use super::*;
            $( $(#[$attr])* async fn $name() { contract::$name::<HyperUtilBackend>().await } )*
        }
    };
}

contracts! {
    #[tokio::test] h1_fully_read_response_is_reused,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)] h1_concurrent_requests_use_distinct_connections,
    #[tokio::test] h1_held_body_forces_a_second_connection,
    #[tokio::test] h1_held_small_body_differs,
    #[tokio::test(start_paused = true)] h1_idle_connection_is_evicted_at_the_timeout,
    #[tokio::test(start_paused = true)] h1_active_body_survives_the_idle_timeout,
    #[tokio::test] h1_reset_on_accept_is_an_io_error,
    #[tokio::test] h1_reset_after_request_is_an_io_error,
    #[tokio::test] h1_reset_mid_body_fails_the_body_and_retires,
    #[tokio::test] h1_clean_eof_mid_body_is_an_incomplete_body,
    #[tokio::test(start_paused = true)] h1_read_timeout_fires_on_time,
    #[tokio::test] h1_request_uses_origin_form_and_host,
    #[tokio::test] h2_sequential_requests_share_one_connection,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)] h2_cold_concurrent_start_opens_one_connection,
    #[tokio::test] h2_stream_reset_fails_only_that_stream,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)] h2_graceful_goaway_drains_and_replaces,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)] tls_cold_alpn_burst_differs,
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)] bounded_origin_fails_fast_differs,
}
