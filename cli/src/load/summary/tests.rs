use std::time::Duration;

use pool::{OriginKey, PoolCounters};

use super::text::human_bytes;
use super::*;
use crate::load::record::{Completed, ErrorClass, Served, Tag};

fn origin(url: &str) -> OriginKey {
    OriginKey::from_uri(&url.parse().unwrap()).unwrap()
}

fn events(created: u64, by_origin: Vec<(OriginKey, u64)>) -> EventSnapshot {
    EventSnapshot {
        created,
        h1: created,
        h2: 0,
        by_partition: vec![created / 2, created - created / 2],
        by_origin,
        closed: pool::CloseReason::ALL.iter().map(|r| (*r, 0)).collect(),
        closed_other: 0,
        close_examples: Vec::new(),
        failed: 0,
        peak_live: created,
        // All opened in the first second of the run.
        per_second: vec![crate::load::events::SecondEvents {
            opened: created,
            closed: 0,
        }],
    }
}

fn config(urls: &[&str]) -> RunConfig {
    RunConfig {
        urls: urls.iter().map(|u| (*u).to_owned()).collect(),
        concurrency: 4,
        partitions: 2,
        volume: Volume::Requests(101),
        rate: None,
        ramp: None,
        protocol: "auto",
        max_connections_per_host: None,
        max_pending_per_host: None,
        reuse_scope: "interface",
        idle_timeout: Some(pool::DEFAULT_IDLE_TIMEOUT),
        max_idle_per_host: None,
        max_idle_connections: None,
        connect_timeout: Duration::from_secs(10),
        max_connection_lifetime: None,
        pool_timeout: None,
        max_time: None,
        interface: None,
        fail: false,
        local: false,
    }
}

/// 100 complete responses over two partitions and two origins (even requests to the first),
/// the first half in second 0 and the rest in second 1, plus one saturated failure.
fn facts() -> Facts {
    let a = origin("http://127.0.0.1:1/");
    let b = origin("http://127.0.0.1:2/");
    let mut p0 = PartitionResult::default();
    let mut p1 = PartitionResult::default();
    p0.held = Held { mean: 2.5, last: 3 };
    p1.held = Held { mean: 1.5, last: 1 };
    for i in 0..100u64 {
        let partition = if i % 2 == 0 { &mut p0 } else { &mut p1 };
        let record = &mut partition.record;
        let tag = Tag {
            second: usize::from(i >= 50),
            origin: usize::from(i % 2 == 1),
        };
        record.completed(
            &Completed {
                status: if i < 90 { 200 } else { 404 },
                bytes: 100,
                ttfb: Duration::from_micros(500 + i * 10),
                total: Duration::from_micros(1_000 + i * 20),
                served: Some(Served {
                    connection: i % 4,
                    reused: i >= 4,
                    borrowed: false,
                    waited: (i < 4).then(|| Duration::from_micros(300)),
                }),
            },
            tag,
            false,
        );
        record.flush_into(&mut partition.latencies);
    }
    let late = Tag {
        second: 1,
        origin: 1,
    };
    p1.record
        .failed(ErrorClass::Saturated, late, || "origin saturated".into());
    Facts {
        config: config(&["http://127.0.0.1:1/", "http://127.0.0.1:2/"]),
        duration: Duration::from_millis(1_500),
        partitions: vec![p0, p1],
        origins: vec![a.clone(), b.clone()],
        events: events(4, vec![(a, 2), (b, 2)]),
        counters: PoolCounters::default(),
        peak_admitted: 4,
        second_peaks: Vec::new(),
        warmup: None,
        slots: None,
        local: None,
        request_quotas: vec![("http://127.0.0.1:2".to_owned(), 1000)],
        uploads_one_at_a_time: vec!["http://127.0.0.1:1".to_owned()],
        larger_stream_window: vec!["http://127.0.0.1:3".to_owned()],
        sends_empty_data_frames: vec!["http://127.0.0.1:4".to_owned()],
        server_idle_timeouts: vec![(
            "http://127.0.0.1:5".to_owned(),
            Duration::from_millis(1_002),
        )],
    }
}

#[test]
fn json_has_the_documented_keys_and_consistent_numbers() {
    let summary = Summary::new(facts());
    let json = summary.json();
    assert_eq!(json["schema"], SCHEMA);
    assert_eq!(json["requests"], 101);
    assert_eq!(json["successes"], 100);
    assert_eq!(json["failures"], 1);
    assert_eq!(json["rps"], 67.333);
    assert_eq!(json["success_rps"], 66.667);
    assert_eq!(json["status"]["404"], 10);
    assert_eq!(json["errors"]["saturated"], 1);
    assert_eq!(
        json["errors"].as_object().unwrap().len(),
        ErrorClass::ALL.len()
    );
    assert_eq!(
        json["connections"]["closed"].as_object().unwrap().len(),
        pool::CloseReason::ALL.len() + 1
    );
    assert_eq!(json["connections"]["requests_per_connection"]["max"], 25);
    assert_eq!(json["connections"]["used"], 4);
    assert_eq!(
        json["connections"]["request_quotas"],
        serde_json::json!({"http://127.0.0.1:2": 1000})
    );
    assert!(
        summary
            .text()
            .contains("Request quota         1000 requests per connection to http://127.0.0.1:2:"),
        "{}",
        summary.text()
    );
    assert_eq!(
        json["connections"]["uploads_one_at_a_time"],
        serde_json::json!(["http://127.0.0.1:1"])
    );
    assert!(
        summary.text().contains(
            "Uploads               one request body at a time per HTTP/2 connection to \
             http://127.0.0.1:1:"
        ),
        "{}",
        summary.text()
    );
    assert_eq!(
        json["connections"]["larger_stream_window"],
        serde_json::json!(["http://127.0.0.1:3"])
    );
    assert!(
        summary.text().contains(
            "Stream window         32 MiB for new HTTP/2 connections to http://127.0.0.1:3 \
             (fewer WINDOW_UPDATEs):"
        ),
        "{}",
        summary.text()
    );
    assert_eq!(
        json["connections"]["sends_empty_data_frames"],
        serde_json::json!(["http://127.0.0.1:4"])
    );
    assert!(
        summary.text().contains(
            "Empty frames          at most 45 streams per HTTP/2 connection to \
             http://127.0.0.1:4,"
        ),
        "{}",
        summary.text()
    );
    assert_eq!(
        json["connections"]["server_idle_timeouts_ms"],
        serde_json::json!({"http://127.0.0.1:5": 1002})
    );
    assert!(
        summary.text().contains(
            "Idle timeout          1002 ms at http://127.0.0.1:5's server, learnt from idle \
             connections it closed"
        ),
        "{}",
        summary.text()
    );
    assert_eq!(json["permit_wait_ms"]["waited"], 4);
    assert_eq!(json["partitions"].as_array().unwrap().len(), 2);
    assert_eq!(json["partitions"][1]["requests"], 51);
    assert_eq!(json["partitions"][0]["connections_held_mean"], 2.5);
    assert_eq!(json["partitions"][0]["connections_held_end"], 3);
    let latency = &json["latency_ms"];
    let p = |k: &str| latency[k].as_f64().unwrap();
    assert!(p("min") <= p("p50") && p("p50") <= p("p90") && p("p90") <= p("p99"));
    assert!(p("p99") <= p("p999") && p("p999") <= p("p9999") && p("p9999") <= p("max"));
    assert_eq!(latency["samples"], 100);
    assert!(!summary.succeeded());
}

#[test]
fn json_breaks_the_run_down_by_origin_and_by_second() {
    let json = Summary::new(facts()).json();
    let origins = json["origins"].as_array().unwrap();
    assert_eq!(origins.len(), 2);
    assert_eq!(origins[0]["origin"], "http://127.0.0.1:1");
    assert_eq!(
        (&origins[1]["requests"], &origins[1]["failures"]),
        (&json!(51), &json!(1))
    );
    assert_eq!(origins[1]["connections_opened"], 2);
    let timeline = json["timeline"].as_array().unwrap();
    assert_eq!(
        timeline.len(),
        2,
        "1.5 s: two seconds, the last one partial"
    );
    assert_eq!(timeline[0]["requests"], 50);
    assert_eq!(timeline[1]["requests"], 51);
    assert_eq!(timeline[1]["failures"], 1);
    assert_eq!(timeline[1]["window_s"], 0.5);
    assert_eq!(timeline[1]["rps"], 102.0);
    let sum: u64 = timeline
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 101, "every request is in one second");
    assert!(timeline[0]["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    assert_eq!(
        (
            &timeline[0]["connections_opened"],
            &timeline[1]["connections_opened"]
        ),
        (&json!(4), &json!(0))
    );
    assert_eq!(timeline[1]["connections_closed"], 0);
}

#[test]
fn text_carries_the_same_numbers() {
    let summary = Summary::new(facts());
    let text = summary.text();
    assert!(text.contains("Requests              101 (100 succeeded, 1 failed, 0 aborted)"));
    assert!(text.contains("Connections opened    4 (h1 4, h2 0; 4 served requests)"));
    assert!(text.contains("saturated  1  e.g. origin saturated"));
    assert!(text.contains("Requests/sec          67.3 (66.7 of them successful)"));
    assert!(text.contains("  404  10"));
    assert!(text.contains("p99.99"), "{text}");
    assert!(text.contains("Origins"), "{text}");
    assert!(text.contains(" held "), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 ") && l.contains("51"))
        .expect("partition 1's row");
    assert!(row.contains(" 1.5 "), "held share shown: {row}");
    assert!(
        text.contains("4 requests waited for a connection"),
        "{text}"
    );
}

#[test]
fn a_run_where_every_request_failed_shows_no_rate_and_no_latency() {
    let mut record = Record::default();
    for _ in 0..3 {
        record.failed(ErrorClass::Connect, Tag::default(), || "refused".into());
    }
    let facts = Facts {
        config: config(&["http://127.0.0.1:1/"]),
        duration: Duration::from_millis(20),
        partitions: vec![PartitionResult {
            record,
            latencies: Latencies::default(),
            held: Held::default(),
        }],
        origins: vec![origin("http://127.0.0.1:1/")],
        events: events(0, Vec::new()),
        counters: PoolCounters::default(),
        peak_admitted: 0,
        second_peaks: Vec::new(),
        warmup: None,
        slots: None,
        local: None,
        request_quotas: Vec::new(),
        uploads_one_at_a_time: Vec::new(),
        larger_stream_window: Vec::new(),
        sends_empty_data_frames: Vec::new(),
        server_idle_timeouts: Vec::new(),
    };
    let summary = Summary::new(facts);
    let text = summary.text();
    assert!(
        text.contains("Requests/sec          none: no request succeeded"),
        "{text}"
    );
    assert!(
        text.contains("none measured: no request received a complete response"),
        "{text}"
    );
    assert!(!text.contains("p99.9"), "no table of zeros: {text}");
    let json = summary.json();
    assert_eq!(json["success_rps"], 0.0);
    assert_eq!(json["latency_ms"]["samples"], 0);
    assert_eq!(json["timeline"][0]["failures"], 3);
    assert_eq!(json["timeline"][0]["latency_ms"], Value::Null);
}

#[test]
fn bytes_are_shown_in_binary_units() {
    assert_eq!(human_bytes(10.0), "10.0 B");
    assert_eq!(human_bytes(2048.0), "2.0 KiB");
    assert_eq!(human_bytes(3.0 * 1024.0 * 1024.0), "3.0 MiB");
}
