//! Resolvers for tests: one address for every name, fixed answers (several addresses for one
//! name), one that never answers, and one that holds lookups at a gate.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use pool::{Resolve, ResolveFuture};

use crate::gate::Gate;

/// Answers every name with one address (many origins, one server).
#[derive(Clone, Debug)]
pub struct EveryName(pub SocketAddr);

impl Resolve for EveryName {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        let addr = self.0;
        Box::pin(async move { Ok(vec![addr]) })
    }
}

/// Answers chosen names with chosen addresses; any other name fails to resolve.
#[derive(Clone, Debug, Default)]
pub struct FixedResolver {
    answers: Arc<HashMap<String, Vec<SocketAddr>>>,
}

impl FixedResolver {
    /// A resolver answering `name` with `addrs` (the port of each address is used as given,
    /// regardless of the port asked for).
    pub fn new(
        entries: impl IntoIterator<Item = (&'static str, Vec<SocketAddr>)>,
    ) -> FixedResolver {
        let answers = entries
            .into_iter()
            .map(|(name, addrs)| (name.to_owned(), addrs))
            .collect();
        FixedResolver {
            answers: Arc::new(answers),
        }
    }
}

impl Resolve for FixedResolver {
    fn resolve(&self, host: &str, _port: u16) -> ResolveFuture {
        let answer = self.answers.get(host).cloned();
        let host = host.to_owned();
        Box::pin(async move {
            answer.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no test answer for {host}"),
                )
            })
        })
    }
}

/// A resolver whose lookups never complete (for connect-timeout tests under paused time).
#[derive(Clone, Copy, Debug, Default)]
pub struct HangingResolver;

impl Resolve for HangingResolver {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        Box::pin(std::future::pending())
    }
}

/// A resolver whose one answer the test can change, standing in for a DNS name whose record
/// changes (a service moved to another address): every lookup returns the current answer.
#[derive(Clone, Debug)]
pub struct SwitchResolver {
    answer: Arc<std::sync::Mutex<SocketAddr>>,
    lookups: Arc<std::sync::atomic::AtomicUsize>,
}

impl SwitchResolver {
    /// A resolver answering every name with `addr`.
    pub fn new(addr: SocketAddr) -> SwitchResolver {
        SwitchResolver {
            answer: Arc::new(std::sync::Mutex::new(addr)),
            lookups: Arc::default(),
        }
    }

    /// Answers with `addr` from now on.
    pub fn switch_to(&self, addr: SocketAddr) {
        *self.answer.lock().unwrap() = addr;
    }

    /// How many lookups were made.
    pub fn lookups(&self) -> usize {
        self.lookups.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Resolve for SwitchResolver {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let addr = *self.answer.lock().unwrap();
        Box::pin(async move { Ok(vec![addr]) })
    }
}

/// Answers every name with one address, the first `free` lookups at once and every later one
/// once its gate opens: an establishment the test holds at its lookup while other requests
/// arrive.
#[derive(Clone, Debug)]
pub struct GatedResolver {
    addr: SocketAddr,
    free: usize,
    gate: Gate,
    lookups: Arc<std::sync::atomic::AtomicUsize>,
}

impl GatedResolver {
    /// A resolver answering `addr`, holding lookups after the first `free` at `gate`.
    pub fn new(addr: SocketAddr, free: usize, gate: Gate) -> GatedResolver {
        GatedResolver {
            addr,
            free,
            gate,
            lookups: Arc::default(),
        }
    }
}

impl Resolve for GatedResolver {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        let n = self
            .lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (addr, gate) = (self.addr, (n >= self.free).then(|| self.gate.clone()));
        Box::pin(async move {
            if let Some(gate) = gate {
                gate.wait().await;
            }
            Ok(vec![addr])
        })
    }
}
