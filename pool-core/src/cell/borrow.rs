//! Borrowing under bounded pressure: a request uses a connection of another partition of its
//! eligibility group, and the I/O stays with its owner.
//!
//! * A miss searches the peers of its group for an idle HTTP/1 connection or an accepting
//!   generation and serves its oldest waiter with it ([`Bounded::try_borrow`]).
//! * A connection returning to a cell with nobody waiting serves the oldest ticket of its group
//!   instead of idling ([`Bounded::serve_peer_demand`]); the receiving cell acks the fenced
//!   ticket ([`Cell::accept_returning`]).
//! * A generation that can take a stream nobody in its own partition waits for (its handshake
//!   completed, a stream ended at its limit, the last activation turn ended) lends it to the
//!   oldest ticket of its group ([`Cell::lend_streams`]), the HTTP/2 side of a returning
//!   connection: a peer's request that missed while the generation was being established, or
//!   was at its stream limit, has no other way to learn that a stream became free.
//!
//! Only connections nobody in their own partition waits for are lent: a returning connection
//! with a local request waiting serves it first (see `admission::placement`).
//! * A borrowed HTTP/1 connection nobody in the borrowing cell can use goes back to its owner.

use super::actions::close_all;
use super::bounded::Bounded;
use super::{Actions, Cell, CellTypes, Grant, PooledH1, PooledH2, Released};
use crate::admission::DeliveryId;
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::stats::Gauge;
use crate::sync::Arc;
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
            if self.retired_under_lock() {
                // Nobody waits in a retired cell, and it speaks for its partition no more.
                drop(st);
                bounded.admission().refuse(bounded.partition(), id, None);
                bounded.return_to_owner(conn, owner);
                return;
            }
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

impl<T: CellTypes> Cell<T> {
    /// Lends this cell's free HTTP/2 streams to the oldest tickets of its group, one stream a
    /// ticket, while nobody waits here and no activation turn is out (the cell's own requests,
    /// and the turn that learns a new generation's limit, go first).
    ///
    /// The second half of a handshake with a peer's miss, as for an idle HTTP/1 connection
    /// (see [`Admission::under_pressure`](crate::admission::Admission::under_pressure)): the
    /// generation became able to serve (written under this cell's lock) before the fence, and
    /// the pressure flag is read after it; a miss publishes its demand, then reads this cell's
    /// gauges and tries to borrow. One of the two sees the other.
    pub(super) fn lend_streams(&self) {
        let Some(bounded) = self.bounded() else {
            return;
        };
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        self.lend_streams_after_fence(&bounded);
    }

    /// [`lend_streams`](Self::lend_streams) for a caller that has passed the fence itself.
    pub(super) fn lend_streams_after_fence(&self, bounded: &Bounded<'_, T>) {
        while bounded.admission().under_pressure() {
            let generation = {
                let mut st = self.state.lock();
                if st.h2.activations > 0 || self.gauges.get(Gauge::WaitingRequests) > 0 {
                    return;
                }
                match st.h2.reserve(None) {
                    Some(generation) => generation,
                    None => return,
                }
            };
            match bounded
                .admission()
                .claim_ticket_in_group(bounded.partition())
            {
                Some((peer, id)) => bounded.lend_stream(generation, peer, id),
                None => {
                    // Given back under the lock, without the notice a stream freed at the
                    // limit sends (that notice would bring this cell straight back here). A
                    // request of this cell that missed while the stream was held takes it.
                    let mut actions = Actions::default();
                    {
                        let mut st = self.state.lock();
                        generation.unreserve_quietly();
                        self.activate(&mut st, &mut actions.grants);
                    }
                    self.run(actions);
                    return;
                }
            }
        }
    }

    /// A peer's stream, delivered against this cell's fenced ticket `id`: its oldest waiting
    /// request takes it; if none waits any more, the reservation is given back.
    fn accept_lent_stream(&self, generation: T::H2, id: DeliveryId) -> Option<T::H2> {
        let Some(bounded) = self.bounded() else {
            debug_assert!(false, "a lent stream delivered to an unbounded cell");
            return Some(generation);
        };
        let (target, demand) = {
            let mut st = self.state.lock();
            if self.retired_under_lock() {
                drop(st);
                bounded.admission().refuse(bounded.partition(), id, None);
                return Some(generation);
            }
            let target = self.pop_oldest_claimed(&mut st);
            (target, bounded.snapshot(&mut st))
        };
        let back = match target {
            Some(w) => match w.fill(Grant::BorrowedH2(generation)) {
                Ok(()) => None,
                Err(Grant::BorrowedH2(generation)) => Some(generation),
                Err(_) => unreachable!("fill returns what it was given"),
            },
            None => Some(generation),
        };
        bounded.admission().ack(bounded.partition(), id, demand);
        back
    }
}

impl<T: CellTypes> Bounded<'_, T> {
    /// Delivers a reserved stream of this cell's generation against `peer`'s fenced ticket
    /// `id`; a stream nobody there takes is given back (after the fence is lifted, and with no
    /// lock held: giving back may tell this cell a stream is free).
    fn lend_stream(&self, generation: T::H2, peer: usize, id: DeliveryId) {
        let back = match self.peer(peer) {
            Some(cell) => cell.accept_lent_stream(generation, id),
            None => {
                self.admission().refuse(peer, id, None);
                Some(generation)
            }
        };
        if let Some(generation) = back {
            generation.unreserve();
        }
    }

    /// A stream of the generation of `record` ended while nobody here waits: the generation
    /// closes (`Reclaimed`) when a partition that may not use it (another eligibility group)
    /// is owed capacity, as a returning HTTP/1 connection closes in
    /// [`serve_peer_demand`](Self::serve_peer_demand). Its open streams finish on the
    /// connection; the permit moves at once. Partitions of its own group borrow its streams
    /// instead ([`Cell::lend_streams`]), and a generation whose own partition has requests
    /// waiting stays: they are served first, as placement's local rule says.
    pub(super) fn release_generation(&self, record: &Arc<ConnectionRecord>) {
        if self.cell.gauges.get(Gauge::WaitingRequests) > 0 {
            return;
        }
        let now = self.cell.hooks.time.now();
        if !self
            .admission()
            .should_release_across_groups(self.partition(), now)
        {
            return;
        }
        // A generation whose connection failed stays here until it retires, and its streams
        // end meanwhile: taken, it may close nothing (see `close_counted_reclaim`).
        let taken = self.cell.state.lock().h2.take_record(record);
        self.close_counted_reclaim(taken.as_ref().map(|generation| generation.record()));
    }

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
    /// cell has its fence lifted ([`Admission::refuse`](crate::admission::Admission::refuse)),
    /// and the connection returns here.
    pub(super) fn hand_to_peer(&self, conn: T::H1, peer: usize, id: DeliveryId) {
        match self.peer(peer) {
            Some(cell) => cell.accept_returning(conn, id, self.partition()),
            None => {
                // No cell there now (retired, or the pool is being dropped): the ticket goes,
                // and the connection returns here as if it had just come back.
                self.admission().refuse(peer, id, None);
                self.cell.release_h1(conn, self.cell.hooks.time.now());
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
            && self.close_counted_reclaim(Some(conn.record()))
        {
            drop(conn);
            return Ok(Released::Closed);
        }
        Err(conn)
    }
}
