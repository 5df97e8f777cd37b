//! The bounded view of a cell: what only a cell of a bounded origin does, reached through
//! [`Cell::bounded`] so that no operation has to assume a bound exists.
//!
//! With an admission, nothing is established without a permit. A waiter that has no connection
//! coming (no attempt of its own, no flight or generation covering it) is *demand*; the cell
//! publishes the arrival order of its oldest such waiter as its ticket, and only when it
//! changed. This file holds that snapshot and the fairness rule between partitions; `permits`,
//! `borrow` and `reclaim` hold the rest of the bounded behaviour.

use super::actions::close_all;
use super::{Cell, CellAdmission, CellTypes, PooledH1, Released, State};
use crate::admission::{Demand, Membership, Precedence};
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::sync::Arc;
use std::time::Instant;

/// How many times a connection gone idle under pressure searches for a ticket to serve while
/// demand keeps changing (see [`Bounded::recheck_pressure`]): a bound, so that a connection
/// no ticket can use does not spin while other partitions publish.
const RECHECKS: usize = 4;

/// The link of a bounded cell to its origin's admission.
pub(super) struct Bound<T: CellTypes> {
    pub(super) admission: CellAdmission<T>,
    /// This cell's partition index within the admission.
    pub(super) partition: usize,
    /// The cell's membership of the admission, left when it retires (or drops).
    pub(super) membership: Membership<Cell<T>>,
}

impl<T: CellTypes> Bound<T> {
    /// The next demand version of this cell's partition.
    fn next_version(&self) -> u64 {
        self.admission.next_version(self.partition)
    }
}

/// The last demand the cell published (its version comes from the partition's slot in the
/// admission, see [`Admission::next_version`](crate::admission::Admission::next_version)).
#[derive(Debug, Default)]
pub(super) struct DemandState {
    /// The head of the last snapshot, to publish only on change.
    pub(super) published_head: Option<u64>,
    /// Since when the cell has had a head without a break (read from the clock only when a
    /// head appears after none).
    since: Option<Instant>,
}

/// A cell of a bounded origin, with its link to admission.
pub(super) struct Bounded<'a, T: CellTypes> {
    pub(super) cell: &'a Cell<T>,
    bound: &'a Bound<T>,
}

impl<T: CellTypes> Cell<T> {
    /// The bounded view of this cell, for a bounded origin.
    pub(super) fn bounded(&self) -> Option<Bounded<'_, T>> {
        self.bound
            .as_ref()
            .map(|bound| Bounded { cell: self, bound })
    }

    /// The cell's demand snapshot if the cell is bounded and its demand changed since the last
    /// publication (admission hears about changes, not about every event).
    pub(super) fn demand_change(&self, st: &mut State<T>) -> Option<Demand> {
        self.demand_snapshot(st, Publish::OnChange)
    }

    /// [`demand_change`](Self::demand_change) after a returning connection of this cell
    /// served its oldest waiting request: only demand that appeared or disappeared is
    /// published. A head that merely moved on would otherwise take the origin-wide lock on
    /// every request a busy partition serves. The published head is then older than the
    /// cell's current one, which is harmless: this cell holds a permit (the connection that
    /// served is its own), so its head takes part only in placement's choices among partitions
    /// that hold permits (which ticket a permit goes to, which one a spare connection serves),
    /// never in the first-come order among partitions that hold none; a cancellation
    /// republishes the exact head, and so does the cell when its last permit returns
    /// ([`Member::refresh_demand`](crate::admission::Member::refresh_demand)), before that
    /// permit is placed.
    pub(super) fn demand_after_serving(&self, st: &mut State<T>) -> Option<Demand> {
        self.demand_snapshot(st, Publish::OnAppearance)
    }

    /// A bounded cell's demand snapshot, taken as `publish` says (see [`snapshot`]).
    fn demand_snapshot(&self, st: &mut State<T>, publish: Publish) -> Option<Demand> {
        let bound = self.bound.as_ref()?;
        snapshot(
            st,
            publish,
            || self.hooks.time.now(),
            || bound.next_version(),
        )
    }

    /// Publishes the cell's demand if it is bounded and its demand changed.
    pub(super) fn republish(&self) {
        if let Some(bounded) = self.bounded() {
            bounded.republish();
        }
    }
}

/// When a demand snapshot is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Publish {
    /// Always (an ack must carry one).
    Always,
    /// When the head changed.
    OnChange,
    /// When demand appeared or disappeared.
    OnAppearance,
}

/// Takes the demand snapshot: the arrival order of the oldest waiting request with no
/// connection coming, and since when the cell has had one. Returns it as `publish` says.
/// `now` is read only when demand appears after none; `version` is taken only for a snapshot
/// that is published.
fn snapshot<T: CellTypes>(
    st: &mut State<T>,
    publish: Publish,
    now: impl FnOnce() -> Instant,
    version: impl FnOnce() -> u64,
) -> Option<Demand> {
    let connection_coming = st.flights.in_progress() || st.h2.can_serve();
    let head = if connection_coming {
        None
    } else {
        st.waiters.trim();
        st.waiters.oldest(|w| !w.is_launched()).map(|w| w.seq())
    };
    let published = st.demand.published_head;
    let unchanged = match publish {
        Publish::Always => false,
        Publish::OnChange => head == published,
        Publish::OnAppearance => head.is_some() == published.is_some(),
    };
    if unchanged {
        return None;
    }
    st.demand.since = match (head, st.demand.since) {
        (None, _) => None,
        (Some(_), Some(since)) => Some(since),
        (Some(_), None) => Some(now()),
    };
    st.demand.published_head = head;
    Some(Demand::new(version(), head, st.demand.since))
}

impl<T: CellTypes> Bounded<'_, T> {
    pub(super) fn admission(&self) -> &CellAdmission<T> {
        &self.bound.admission
    }

    /// This cell's partition index within the admission.
    pub(super) fn partition(&self) -> usize {
        self.bound.partition
    }

    /// The demand snapshot, changed or not (for an ack, which must carry one).
    pub(super) fn snapshot(&self, st: &mut State<T>) -> Demand {
        self.cell
            .demand_snapshot(st, Publish::Always)
            .expect("a forced snapshot is always taken")
    }

    /// Publishes the cell's demand if it changed.
    pub(super) fn republish(&self) {
        self.publish_if(Publish::OnChange);
    }

    /// After a miss: publishes demand that appeared or went, and a changed head only while
    /// this partition holds no permit. At the bound every request misses, and the head it
    /// sees has usually moved on since the last publication (a returning connection served
    /// the old one, see [`Cell::demand_after_serving`]); republishing it would take the
    /// origin-wide lock on every request. A partition holding permits may leave the older head
    /// published, for the same reason as there; one holding none publishes the exact head,
    /// which the first-come order among such partitions needs (and its last permit's return
    /// republishes it first, see `refresh_demand`).
    pub(super) fn publish_after_miss(&self) {
        if self.admission().held(self.partition()) > 0 {
            self.publish_if(Publish::OnAppearance);
        } else {
            self.publish_if(Publish::OnChange);
        }
    }

    /// Just registered: publishes the cell's demand, changed or not, and with a request
    /// waiting looks for capacity as a miss does after publishing. Until now no delivery could
    /// reach this cell: a delivery refused for it took its ticket, and a peer's connection
    /// that returned meanwhile could not be handed to it and went idle at home, beside the
    /// request. A retired cell publishes nothing: it no longer speaks for its partition.
    pub(super) fn publish_at_registration(&self) {
        let waits = self
            .publish_if(Publish::Always)
            .is_some_and(|demand| demand.head.is_some());
        if waits && !self.try_borrow() {
            self.try_reclaim();
        }
    }

    /// Publishes the cell's demand as `publish` says; what it published.
    fn publish_if(&self, publish: Publish) -> Option<Demand> {
        let demand = {
            let mut st = self.cell.state.lock();
            if self.cell.retired_under_lock() {
                // Read under the lock that set it. Its last publication cleared its head; a
                // later one would overrule its successor's, whose versions it shares.
                return None;
            }
            self.cell.demand_snapshot(&mut st, publish)
        }?;
        self.admission().publish(self.partition(), demand);
        Some(demand)
    }

    /// The cell of partition `index` of this origin.
    pub(super) fn peer(&self, index: usize) -> Option<Arc<Cell<T>>> {
        self.admission().cell(index)
    }

    /// The owner cell of a connection that belongs to another partition of this origin.
    pub(super) fn foreign_owner(&self, conn: &T::H1) -> Option<Arc<Cell<T>>> {
        if Arc::ptr_eq(conn.record().gauges(), &self.cell.gauges) {
            return None;
        }
        self.admission()
            .peers(self.partition())
            .filter_map(|p| self.peer(p))
            .find(|cell| Arc::ptr_eq(cell.gauges(), conn.record().gauges()))
    }

    /// Placement across partitions (under pressure, see `admission::placement`): a returning
    /// connection goes to a peer holding no permit with an older request (eligible: a borrow),
    /// or closes so its permit moves to a peer owed capacity (a reclaim), instead of serving a
    /// request here. Hands the connection back when this cell's own request goes first, or
    /// nobody waits here (the caller then idles it or serves peers).
    pub(super) fn yield_to_peer(&self, conn: T::H1, now: Instant) -> Result<Released, T::H1> {
        if !self.admission().under_pressure() || self.admission().keeps_local(self.partition()) {
            return Err(conn);
        }
        let local_head = self.cell.state.lock().waiters.any_head();
        let Some(local_head) = local_head else {
            return Err(conn);
        };
        match self
            .admission()
            .precedence(self.partition(), local_head, now)
        {
            Precedence::Local => Err(conn),
            Precedence::Borrow(peer, id) => {
                self.hand_to_peer(conn, peer, id);
                Ok(Released::Delivered)
            }
            Precedence::Reclaim => {
                if self.close_counted_reclaim(Some(conn.record())) {
                    drop(conn);
                    Ok(Released::Closed)
                } else {
                    Err(conn)
                }
            }
        }
    }

    /// Closes the connection of `record` (`Reclaimed`) for a reclaim placement counted as in
    /// transit; returns whether it closed. The close that releases the permit settles the
    /// reclaim. When none happens here (`record` is `None`: a peer's miss took the connection
    /// first; or it had already closed on its own, its permit back before the reclaim was
    /// counted) the reclaim is taken off the count: left counted, a permit would stay
    /// "coming" for ever and no capacity would move again.
    pub(super) fn close_counted_reclaim(&self, record: Option<&Arc<ConnectionRecord>>) -> bool {
        let closed = record.is_some_and(|record| record.close(CloseReason::Reclaimed, None));
        if !closed {
            self.admission().reclaim_abandoned();
        }
        closed
    }

    /// The second half of the idle-versus-demand handshake (see
    /// [`Admission::under_pressure`](crate::admission::Admission::under_pressure)): having
    /// entered the idle set, look again for demand a peer published meanwhile, and serve it
    /// with an idle connection.
    pub(super) fn recheck_pressure(&self) {
        for _ in 0..RECHECKS {
            crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
            if !self.admission().under_pressure() {
                return;
            }
            let epoch = self.admission().demand_epoch();
            let Some(conn) = self.cell.lend_idle() else {
                return;
            };
            let now = self.cell.hooks.time.now();
            match self.serve_peer_demand(conn, now) {
                Ok(_) => return,
                // Nobody could take it: back to idle. While it was out, a request may have
                // published and found no idle connection here; if demand changed, once more.
                Err(conn) => {
                    self.cell.idle(conn, now);
                }
            }
            crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
            if self.admission().demand_epoch() == epoch {
                return;
            }
        }
    }

    /// Sends a borrowed connection nobody here could use back to the cell that owns it.
    pub(super) fn return_to_owner(&self, conn: T::H1, owner: usize) {
        let now = self.cell.hooks.time.now();
        match self.peer(owner) {
            Some(cell) => {
                cell.release_h1(conn, now);
            }
            None => close_all([(conn, CloseReason::PoolDropped)]),
        }
    }
}
