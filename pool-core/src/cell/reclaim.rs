//! Reclaim under bounded pressure: when no permit is free and no eligible connection exists, a
//! miss closes the oldest idle HTTP/1 connection of another partition, whatever the scope
//! (reclaim moves capacity, not I/O), and the freed permit goes to the oldest ticket. Work in
//! flight is never interrupted: only idle connections are reclaimed here; a returning
//! connection nobody eligible can use closes in `borrow` and `bounded` for the same reason.

use super::actions::close_all;
use super::borrow::Lent;
use super::bounded::Bounded;
use super::{Cell, CellTypes};
use crate::close::CloseReason;
use crate::stats::Gauge;

impl<T: CellTypes> Cell<T> {
    /// Takes this cell's oldest idle HTTP/1 connection out of the idle set (committed, so a
    /// concurrent checkout cannot also take it).
    fn surrender_oldest_idle(&self) -> Option<T::H1> {
        self.state.lock().idle.pop_oldest()
    }
}

impl<T: CellTypes> Bounded<'_, T> {
    /// Closes the oldest idle HTTP/1 connection of another partition so its permit moves to
    /// the oldest ticket, when no permit is free. A peer of this cell's own group whose
    /// connection became idle since the borrow search lends it instead: closing a connection
    /// this request may use would only delay it.
    pub(super) fn try_reclaim(&self) {
        if !self.admission().wants_reclaim() {
            return;
        }
        let own_group: Vec<usize> = self.admission().peers_in_group(self.partition()).collect();
        for peer_index in self.admission().peers(self.partition()) {
            let Some(peer) = self.peer(peer_index) else {
                continue;
            };
            if peer.gauges().get(Gauge::H1Idle) == 0 {
                continue;
            }
            if own_group.contains(&peer_index) {
                if let Some(conn) = peer.lend_idle() {
                    self.accept_loan(Lent::H1(conn), peer_index);
                    return;
                }
            } else if let Some(conn) = peer.surrender_oldest_idle() {
                close_all([(conn, CloseReason::Reclaimed)]);
                return;
            }
        }
    }
}
