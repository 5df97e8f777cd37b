//! Reclaim under bounded pressure: when no permit is free and no eligible connection exists, a
//! miss closes the oldest idle HTTP/1 connection of another partition, whatever the scope
//! (reclaim moves capacity, not I/O), and the freed permit goes to a partition below its share
//! (see `admission::placement`). Only a connection that is spare is taken: idle for longer
//! than the placement tolerance, or owned by a partition that owes this one capacity. A
//! connection idle only between two requests of its own partition stays. Work in flight is
//! never interrupted: only idle connections are reclaimed here; a returning connection closes
//! in `borrow` and `bounded` for the same reason.
//!
//! An HTTP/2 generation with no stream open, in a partition where nobody waits, is the
//! HTTP/2 form of an idle connection: a miss of a partition it owes capacity closes it
//! (`Reclaimed`) when it may not borrow its streams. A stream that starts on it meanwhile
//! finishes there; the permit moves at once. (The generation's own side of the same rule is
//! `borrow::Bounded::release_generation`, at the end of each stream.)

use super::actions::close_all;
use super::borrow::Lent;
use super::bounded::Bounded;
use super::gate::close_generations;
use super::{Cell, CellTypes};
use crate::close::CloseReason;
use crate::stats::Gauge;
use std::time::Instant;

impl<T: CellTypes> Cell<T> {
    /// Takes this cell's oldest idle HTTP/1 connection out of the idle set (committed, so a
    /// concurrent checkout cannot also take it) if `spare` says it may go, given when it
    /// became idle.
    fn surrender_oldest_idle(&self, spare: impl FnOnce(Instant) -> bool) -> Option<T::H1> {
        let mut st = self.state.lock();
        let since = st.idle.oldest_since()?;
        if !spare(since) {
            return None;
        }
        st.idle.pop_oldest()
    }

    /// Takes this cell's oldest accepting generation out, when it has no stream open and
    /// nobody here waits (read from the gauges; see the module docs for a stream that starts
    /// meanwhile).
    fn surrender_quiet_generation(&self) -> Option<T::H2> {
        if self.gauges.get(Gauge::H2ActiveStreams) > 0
            || self.gauges.get(Gauge::WaitingRequests) > 0
        {
            return None;
        }
        self.state.lock().h2.take_oldest_accepting()
    }
}

impl<T: CellTypes> Bounded<'_, T> {
    /// Closes the oldest idle HTTP/1 connection of another partition so its permit moves, when
    /// no permit is free and that connection is spare (see the module docs). A peer of this
    /// cell's own group whose connection became idle since the borrow search lends it instead:
    /// closing a connection this request may use would only delay it.
    pub(super) fn try_reclaim(&self) {
        let admission = self.admission();
        let me = self.partition();
        // Only an idle connection (or a generation with no stream open) can be reclaimed: with
        // none at any peer (the steady state at the bound), neither the admission lock nor a
        // peer's cell is touched.
        let idle_at = |peer: usize| {
            admission.gauges(peer).is_some_and(|gauges| {
                gauges.get(Gauge::H1Idle) > 0
                    || (gauges.get(Gauge::H2Accepting) > 0
                        && gauges.get(Gauge::H2ActiveStreams) == 0)
            })
        };
        if !admission.peers(me).any(idle_at) || !admission.wants_reclaim() {
            return;
        }
        let now = self.cell.hooks.time.now();
        for peer_index in admission.peers(me).filter(|p| idle_at(*p)) {
            let Some(peer) = self.peer(peer_index) else {
                continue;
            };
            if admission.same_group(me, peer_index) {
                if let Some(conn) = peer.lend_idle() {
                    self.accept_loan(Lent::H1(conn), peer_index);
                    return;
                }
                continue;
            }
            // Decided before the peer's lock is taken: never two pool locks at once.
            let owed = admission.may_reclaim_from(me, peer_index, now);
            let tolerance = admission.tolerance();
            let spare = |since: Instant| owed || now.saturating_duration_since(since) >= tolerance;
            if let Some(conn) = peer.surrender_oldest_idle(spare) {
                close_all([(conn, CloseReason::Reclaimed)]);
                return;
            }
            // A generation keeps no idle age: only a partition owed capacity takes it (its
            // idle timeout closes one nobody is owed).
            if owed {
                if let Some(generation) = peer.surrender_quiet_generation() {
                    close_generations(vec![generation], CloseReason::Reclaimed);
                    return;
                }
            }
        }
    }
}
