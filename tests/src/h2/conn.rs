//! One accepted connection: the h2 handshake with the scripted settings, accepting streams
//! into their tasks, and the connection plan's GOAWAYs.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use ::h2::server::Connection;
use bytes::Bytes;
use tokio::task::JoinSet;

use crate::counters::Shared;
use crate::server::ServerIo;

use super::Settings;
use super::plan::{GoAway, H2ConnPlan, StreamFn, Trigger};
use super::records::{H2Records, InFlight};
use super::stream::StreamTask;

/// Everything a connection task needs, shared by all connections.
pub(super) struct H2Ctx {
    pub(super) settings: Settings,
    pub(super) conn_plans: Vec<H2ConnPlan>,
    pub(super) default_conn_plan: H2ConnPlan,
    pub(super) fallback: Option<StreamFn>,
    pub(super) records: Arc<H2Records>,
}

/// Flags a connection task sets for its stream tasks, so resets caused by the connection going
/// away are not mistaken for client resets.
#[derive(Debug, Default)]
pub(super) struct ConnFlags {
    /// Set before the server sends an abrupt GOAWAY.
    pub(super) abrupt: AtomicBool,
    /// Set when the connection ended or failed.
    pub(super) dead: AtomicBool,
}

/// Whether an h2 error just means the client went away.
pub(super) fn is_benign(e: &::h2::Error) -> bool {
    match e.get_io() {
        Some(io) => matches!(
            io.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::NotConnected
        ),
        None => !e.is_library(),
    }
}

pub(super) async fn serve_conn(ctx: Arc<H2Ctx>, id: u64, io: ServerIo, shared: Arc<Shared>) {
    let plan = ctx
        .conn_plans
        .get(id as usize)
        .unwrap_or(&ctx.default_conn_plan)
        .clone();
    for wait in &plan.before_handshake {
        wait.run().await;
    }
    let mut conn: Connection<ServerIo, Bytes> = match ctx.settings.builder().handshake(io).await {
        Ok(conn) => conn,
        Err(e) => {
            if !is_benign(&e) {
                shared.error(format!("conn {id}: h2 handshake failed: {e}"));
            }
            return;
        }
    };
    let flags = Arc::new(ConnFlags::default());
    let mut streams = JoinSet::new();
    let mut accepted = 0usize;
    let mut gate_waits: Vec<GateWait> = Vec::new();
    for (trigger, action) in &plan.actions {
        match trigger {
            Trigger::AfterStreams(0) => fire(&mut conn, *action, &flags),
            Trigger::AfterStreams(_) => {}
            Trigger::Gate(gate) => {
                let gate = gate.clone();
                gate_waits.push((*action, Box::pin(async move { gate.wait().await })));
            }
        }
    }
    loop {
        tokio::select! {
            res = conn.accept() => match res {
                Some(Ok((request, respond))) => {
                    let index = accepted;
                    accepted += 1;
                    let in_flight = InFlight::new(ctx.records.clone(), id);
                    let scripted = plan
                        .streams
                        .get(index)
                        .or(plan.default_stream.as_ref())
                        .cloned();
                    let task = StreamTask {
                        conn_id: id,
                        index,
                        ctx: ctx.clone(),
                        shared: shared.clone(),
                        flags: flags.clone(),
                        scripted,
                        in_flight: Some(in_flight),
                    };
                    streams.spawn(task.run(request, respond));
                    for (trigger, action) in &plan.actions {
                        if matches!(trigger, Trigger::AfterStreams(n) if *n == accepted) {
                            fire(&mut conn, *action, &flags);
                        }
                    }
                }
                Some(Err(e)) => {
                    flags.dead.store(true, Ordering::SeqCst);
                    if !is_benign(&e) {
                        shared.error(format!("conn {id}: h2 connection error: {e}"));
                    }
                    break;
                }
                None => break,
            },
            action = first_open(&mut gate_waits), if !gate_waits.is_empty() => {
                fire(&mut conn, action, &flags);
            }
            Some(res) = streams.join_next() => {
                if let Err(e) = res {
                    if e.is_panic() {
                        shared.error(format!("conn {id}: stream task panicked: {e}"));
                    }
                }
            }
        }
    }
    flags.dead.store(true, Ordering::SeqCst);
    // Dropping `streams` aborts stream tasks still parked: the connection is gone.
}

pub(super) fn fire(conn: &mut Connection<ServerIo, Bytes>, action: GoAway, flags: &ConnFlags) {
    match action {
        GoAway::Graceful => conn.graceful_shutdown(),
        GoAway::Abrupt(reason) => {
            flags.abrupt.store(true, Ordering::SeqCst);
            conn.abrupt_shutdown(reason);
        }
    }
}

/// A connection action waiting for its gate.
pub(super) type GateWait = (GoAway, Pin<Box<dyn Future<Output = ()> + Send>>);

/// Resolves with the action of the first gate that opens, removing it from the list.
pub(super) async fn first_open(waits: &mut Vec<GateWait>) -> GoAway {
    poll_fn(|cx| {
        for i in 0..waits.len() {
            if waits[i].1.as_mut().poll(cx).is_ready() {
                return Poll::Ready(waits.remove(i).0);
            }
        }
        Poll::Pending
    })
    .await
}
