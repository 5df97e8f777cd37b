//! `cargo xtask bench [--quick] [--json] [--url URL] [--only N]`: our pool side by side with hyper's raw
//! connection API (pre-established senders, no pool: the limit) and hyper-util's legacy client
//! (what users pick today), in one process, interleaved round by round on the same machine.
//!
//! 1. HTTP/1.1 keep-alive, c = 1, 64, 256.
//! 2. HTTP/2 over h2c on one connection, c = 64, 256.
//! 3. A bounded origin (N = 8, c = 256) through 1 and 2 partitions, against hyper-util with a
//!    connection-cap semaphore in its connector.
//! 4. A cold burst of 256 requests to a fresh TLS origin offering h2: connections, TLS
//!    handshakes and time to complete.
//! 5. Allocations per request on the reuse-hit path (counting allocator, client thread only).
//! 6. Partition scaling on an in-memory transport: 2 vs 1 partitions on 2 threads, unbounded
//!    and bounded (N = 8).
//! 7. Placement in steady state: 4 partitions, N = 8, c = 256 against the loopback server under
//!    each reuse scope: new connections per 1,000 requests, borrowed requests, reclaims.
//! 8. Placement fairness: N = 8 shared by a partition with c = 200 and one with c = 20; the
//!    light partition's p99 wait for a connection beside the heavy one, alone, alone
//!    with the bound at its equal share (N / 2), and beside the heavy one through two
//!    separate pools of N / 2 (the control: the same CPU load, no shared bound).
//! 9. pool-smithy vs the AWS SDK's own clients (its `pool` module and its hyper-util client),
//!    all through `HttpConnector::call` (`smithy.rs`).
//!
//! Clients run on current-thread runtimes (one thread; partitions add threads), the servers on
//! their own thread. `--url` points scenarios 1, 3 and 5 at an external HTTP/1.1 server.
//! `--only N` runs scenario N alone and `--contender NAME` (`pool`, `raw`, `hyper-util`, ...)
//! only that contender of scenarios 1-3 and 6, for profiling one of them; `--concurrency C`
//! runs scenarios 1 and 2 at that concurrency alone (their usual values are 1, 64, 256).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "../../tests/common/hyper_util_tls.rs"]
mod hyper_util_tls;

mod alloc;
mod contenders;
mod partitions;
mod report;
mod scenarios;
mod server;
mod smithy;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

struct Args {
    quick: bool,
    json: bool,
    url: Option<String>,
    only: Option<u32>,
    /// `--concurrency`: scenarios 1 and 2 at this concurrency alone.
    concurrency: Option<usize>,
}

impl Args {
    fn wants(&self, scenario: u32) -> bool {
        self.only.is_none_or(|only| only == scenario)
    }
}

const USAGE: &str = "usage: pool_bench [--quick] [--json] [--url URL] [--only 1-9] [--contender NAME] \
     [--concurrency C]";

fn parse_args() -> Args {
    let mut args = Args {
        quick: false,
        json: false,
        url: None,
        only: None,
        concurrency: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => args.quick = true,
            "--json" => args.json = true,
            "--url" => args.url = it.next(),
            "--contender" => {
                if let Some(name) = it.next() {
                    let _ = scenarios::CONTENDER.set(name);
                }
            }
            "--concurrency" => match it.next().and_then(|n| n.parse().ok()) {
                Some(c @ 1..) => args.concurrency = Some(c),
                _ => {
                    eprintln!("pool_bench: --concurrency takes a positive number\n{USAGE}");
                    std::process::exit(2);
                }
            },
            "--only" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n @ 1..=9) => args.only = Some(n),
                _ => {
                    eprintln!("pool_bench: --only takes a scenario number, 1 to 9\n{USAGE}");
                    std::process::exit(2);
                }
            },
            // cargo bench passes `--bench` to harness-less benches.
            "--bench" => {}
            other => {
                eprintln!("pool_bench: unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    args
}

fn external_target(url: &str) -> SocketAddr {
    let uri: http::Uri = url.parse().expect("--url must be an absolute http:// URL");
    let host = uri.host().expect("--url needs a host");
    let port = uri.port_u16().unwrap_or(80);
    (host, port)
        .to_socket_addrs()
        .expect("resolve --url")
        .next()
        .expect("--url resolves to an address")
}

fn main() {
    let args = parse_args();
    let plan = if args.quick {
        scenarios::Plan {
            rounds: 3,
            warmup: Duration::from_millis(200),
            measure: Duration::from_millis(800),
        }
    } else {
        scenarios::Plan {
            rounds: 5,
            warmup: Duration::from_millis(500),
            measure: Duration::from_secs(3),
        }
    };
    let started = Instant::now();
    let servers = server::start();
    let target = args.url.as_deref().map(external_target);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    // Scenarios 1 and 2 run at their usual concurrencies, or at `--concurrency` alone.
    let concurrency = |usual: &'static [usize]| -> &[usize] {
        args.concurrency
            .as_ref()
            .map_or(usual, std::slice::from_ref)
    };
    let mut scenarios_run = Vec::new();
    if args.wants(1) {
        scenarios_run.extend(scenarios::h1_keep_alive(
            &servers,
            target,
            plan,
            concurrency(&[1, 64, 256]),
        ));
    }
    if args.wants(2) {
        scenarios_run.extend(scenarios::h2c(&servers, plan, concurrency(&[64, 256])));
    }
    if args.wants(3) {
        scenarios_run.extend(scenarios::bounded(&servers, target, plan));
    }
    let bursts = if args.wants(4) {
        scenarios::cold_alpn_burst(&servers, if args.quick { 3 } else { 5 })
    } else {
        Vec::new()
    };
    let allocations = if args.wants(5) {
        scenarios::allocations(&servers, target, if args.quick { 2_000 } else { 10_000 })
    } else {
        Vec::new()
    };
    if args.wants(6) {
        scenarios_run.extend(partitions::partition_scaling(plan));
    }
    let mut placement = String::new();
    if args.wants(7) {
        placement += &partitions::placement_steady_state(target.unwrap_or(servers.h1), plan);
    }
    if args.wants(8) {
        placement += &partitions::placement_fairness(target.unwrap_or(servers.h1), plan, None);
        // The same split where the upstream's latency, not the two cores, sets the service
        // time (the bench's own slow listener; `--url` does not apply).
        placement +=
            &partitions::placement_fairness(servers.slow_h1, plan, Some(server::UPSTREAM_LATENCY));
    }
    let smithy = args
        .wants(9)
        .then(|| smithy::run(&servers, plan, args.quick));

    if args.json {
        let out = json!({
            "machine": { "cores": cores },
            "plan": { "rounds": plan.rounds, "measure_s": plan.measure.as_secs_f64(), "quick": args.quick },
            "scenarios": scenarios_run.iter().map(report::Scenario::json).collect::<Vec<_>>(),
            "cold_alpn_burst": bursts.iter().map(|(name, runs)| json!({
                "name": name,
                "connections": runs.iter().map(|b| b.connections).collect::<Vec<_>>(),
                "tls_handshakes": runs.iter().map(|b| b.handshakes).collect::<Vec<_>>(),
                "millis": runs.iter().map(|b| b.millis).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "allocations_per_request": allocations.iter().map(|(k, v)| json!({ "contender": k, "allocations": v })).collect::<Vec<_>>(),
            "smithy": smithy.as_ref().map(smithy::Report::json),
            "elapsed_s": started.elapsed().as_secs_f64(),
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
        return;
    }

    println!(
        "# pool benchmark ({} mode, {} rounds × {:?}, {cores} cores)",
        if args.quick { "quick" } else { "full" },
        plan.rounds,
        plan.measure
    );
    if let Some(url) = &args.url {
        println!("\nexternal target for scenarios 1, 3, 5: {url}");
    }
    for scenario in &scenarios_run {
        print!("{}", scenario.markdown());
    }
    if !bursts.is_empty() {
        println!(
            "\n### 4. cold ALPN burst: 256 concurrent requests to a fresh TLS origin offering h2\n"
        );
        println!(
            "| contender | TCP connections | TLS handshakes | time to complete (median ms) |\n|---|---:|---:|---:|"
        );
    }
    for (name, runs) in &bursts {
        let ms = report::spread(&runs.iter().map(|b| b.millis).collect::<Vec<_>>());
        let conns: Vec<u64> = runs.iter().map(|b| b.connections).collect();
        let hs: Vec<u64> = runs.iter().map(|b| b.handshakes).collect();
        println!("| {name} | {conns:?} | {hs:?} | {:.1} |", ms.median);
    }
    if !allocations.is_empty() {
        println!(
            "\n### 5. allocations per request on the reuse-hit path\n\n| contender | allocations / request |\n|---|---:|"
        );
    }
    for (name, per) in &allocations {
        println!("| {name} | {per:.2} |");
    }
    print!("{placement}");
    if let Some(smithy) = &smithy {
        print!("{}", smithy.markdown());
    }
    println!("\n(completed in {:.1?})", started.elapsed());
}
