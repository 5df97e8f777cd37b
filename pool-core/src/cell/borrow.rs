//! Borrowing under bounded pressure: a request uses a connection of another partition of its
//! eligibility group, and the I/O stays with its owner.
//!
//! * A miss searches the peers of its group for an idle HTTP/1 connection or an accepting
//!   generation and serves its oldest waiter with it ([`Bounded::try_borrow`]).
//! * A connection returning to a cell with nobody waiting serves the oldest ticket of its group
//!   instead of idling ([`Bounded::serve_peer_demand`]); the receiving cell acks the fenced
//!   ticket ([`Cell::accept_returning`]).
//!
//! Only connections nobody in their own partition waits for are lent: a returning connection
//! with a local request waiting serves it first (see `admission::placement`).
//! * A borrowed HTTP/1 connection nobody in the borrowing cell can use goes back to its owner.

use super::actions::close_all;
use super::bounded::Bounded;
use super::{Actions, Cell, CellTypes, Grant, PooledH1, PooledH2, Released};
use crate::admission::{DeliveryId, Demand};
use crate::close::CloseReason;
use crate::stats::Gauge;
use std::time::Instant;

/// A connection lent by a peer.
pub(super) enum Lent<T: CellTypes> {
    H1(T::H1),
    H2(T::H2),
}

impl<T: CellTypes> Cell<T> {
    /// Takes the newest idle HTTP/1 connection (committed `ACTIVE`) to lend it.
    pub(super) fn lend_idle(&self) -> Option<T::H1> {
        let mut dead = Vec::new();
        let conn = self.state.lock().idle.pop_usable(&mut dead);
        close_all(dead);
        conn
    }

    /// Lends one of this cell's connections to a peer: the accepting generation, or the newest
    /// idle HTTP/1 connection (committed `ACTIVE`).
    fn lend(&self) -> Option<Lent<T>> {
        let mut dead = Vec::new();
        let lent = {
            let mut st = self.state.lock();
            // A generation lends one reserved stream, without restarting its idle age.
            match st.h2.reserve(None) {
                Some(generation) => Some(Lent::H2(generation)),
                None => st.idle.pop_usable(&mut dead).map(Lent::H1),
            }
        };
        close_all(dead);
        lent
    }

    /// A peer's returning connection, delivered against this cell's fenced ticket `id`: its
    /// oldest waiting request takes it; if none waits any more, it goes back to its owner.
    pub(super) fn accept_returning(&self, conn: T::H1, id: DeliveryId, owner: usize) {
        let Some(bounded) = self.bounded() else {
            // Only cells of a bounded origin hold tickets.
            debug_assert!(
                false,
                "a returning connection delivered to an unbounded cell"
            );
            close_all([(conn, CloseReason::PoolDropped)]);
            return;
        };
        let (target, demand) = {
            let mut st = self.state.lock();
            let target = self.pop_any(&mut st);
            (target, bounded.snapshot(&mut st))
        };
        let back = match target {
            Some(w) => w.fill(Grant::H1(conn)).err().map(|g| match g {
                Grant::H1(conn) => conn,
                _ => unreachable!("fill returns what it was given"),
            }),
            None => Some(conn),
        };
        bounded.admission().ack(bounded.partition(), id, demand);
        if let Some(conn) = back {
            bounded.return_to_owner(conn, owner);
        }
    }
}

impl<T: CellTypes> Bounded<'_, T> {
    /// Looks for an idle HTTP/1 connection or an accepting generation in the partitions of this
    /// cell's eligibility group, and serves this cell's oldest waiter with it. Runs after the
    /// demand is published, with a fence between: the first half of the idle-versus-demand
    /// handshake (see [`Admission::under_pressure`](crate::admission::Admission::under_pressure)).
    pub(super) fn try_borrow(&self) -> bool {
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        let admission = self.admission();
        for peer_index in admission.peers_in_group(self.partition()) {
            // The peer's gauges first, without its cell: at the bound every request misses,
            // and a peer with nothing to lend is the common answer.
            let Some(gauges) = admission.gauges(peer_index) else {
                continue;
            };
            if gauges.get(Gauge::H1Idle) == 0 && gauges.get(Gauge::H2Accepting) == 0 {
                continue;
            }
            let Some(peer) = self.peer(peer_index) else {
                continue;
            };
            if let Some(lent) = peer.lend() {
                return self.accept_loan(lent, peer_index);
            }
        }
        false
    }

    /// Serves this cell's oldest waiter with a peer's connection; gives it back if nobody waits.
    pub(super) fn accept_loan(&self, lent: Lent<T>, owner: usize) -> bool {
        let cell = self.cell;
        let mut actions = Actions::default();
        let target = {
            let mut st = cell.state.lock();
            let target = match lent {
                Lent::H1(_) => cell.pop_any(&mut st),
                Lent::H2(_) => cell.pop_oldest_claimed(&mut st),
            };
            actions.publish = cell.demand_change(&mut st);
            target
        };
        cell.run(actions);
        let Some(waiter) = target else {
            match lent {
                Lent::H1(conn) => self.return_to_owner(conn, owner),
                Lent::H2(generation) => generation.unreserve(),
            }
            return false;
        };
        let grant = match lent {
            Lent::H1(conn) => Grant::H1(conn),
            Lent::H2(generation) => Grant::BorrowedH2(generation),
        };
        match waiter.fill(grant) {
            Err(Grant::H1(conn)) => self.return_to_owner(conn, owner),
            Err(Grant::BorrowedH2(generation)) => generation.unreserve(),
            _ => {}
        }
        true
    }

    /// Delivers a returning connection against `peer`'s fenced ticket `id`; a peer without a
    /// cell (the pool is being dropped) has its fence lifted with no demand, and the
    /// connection closes.
    pub(super) fn hand_to_peer(&self, conn: T::H1, peer: usize, id: DeliveryId) {
        match self.peer(peer) {
            Some(cell) => cell.accept_returning(conn, id, self.partition()),
            None => {
                self.admission()
                    .ack(peer, id, Demand::new(u64::MAX, None, None));
                close_all([(conn, CloseReason::PoolDropped)]);
            }
        }
    }

    /// A returning connection with nobody waiting here, under pressure: it serves the oldest
    /// ticket of its eligibility group (borrow), or closes so its permit moves to a partition
    /// owed capacity (reclaim). Hands the connection back when neither applies: it idles, and
    /// stays this partition's.
    pub(super) fn serve_peer_demand(&self, conn: T::H1, now: Instant) -> Result<Released, T::H1> {
        if let Some((peer, id)) = self.admission().claim_ticket_in_group(self.partition()) {
            self.hand_to_peer(conn, peer, id);
            return Ok(Released::Delivered);
        }
        if self.admission().should_release(self.partition(), now)
            && conn.record().close(CloseReason::Reclaimed, None)
        {
            drop(conn);
            return Ok(Released::Closed);
        }
        Err(conn)
    }
}
