//! Unit tests of the cell's transitions, on the fakes of `fakes`: HTTP/1 (idle set and
//! attempts), HTTP/2 (flight, gate, expiry), bounded origins (permits, borrow, reclaim) and
//! placement across partitions (shares, tolerance, local preference), one file each.

mod bounded;
mod h1;
mod h2;
mod lifetime;
mod placement;
mod streams;

use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::fakes::{Fake, FakeH1, FakeH2, IDS, Rig, ended, h1, h2, record_with_permit};
use super::*;
use crate::admission::Admission;
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::{ConnectionId, ConnectionInfo, Protocol};
use crate::origin::OriginKey;
use crate::partition::PartitionId;
use crate::stats::{Gauge, PartitionStats};
use crate::waiter::Requirement;

/// A connection that comes back from an exchange, established before this test's attempts
/// (so it does not take their `establishing` count).
fn returning(cell: &Cell<Fake>) -> FakeH1 {
    cell.gauges().inc(Gauge::Establishing);
    h1(cell)
}

fn take(w: &Arc<CellWaiter<Fake>>) -> Option<Grant<Fake>> {
    let mut cx = Context::from_waker(Waker::noop());
    match w.poll_take(&mut cx) {
        Poll::Ready(g) => Some(g),
        Poll::Pending => None,
    }
}
