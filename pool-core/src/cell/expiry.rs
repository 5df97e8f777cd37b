//! Expiry: idle HTTP/1 connections past their deadline and a generation without a dispatch
//! for the idle timeout close; the partition's maintenance runs [`Cell::expire`] when the cell
//! asked for it through [`CellHooks::arm_expiry`](super::CellHooks::arm_expiry).

use std::time::Instant;

use super::actions::close_all;
use super::{Cell, CellTypes, PooledH2};
use crate::close::CloseReason;

impl<T: CellTypes> Cell<T> {
    /// Closes what expired by `now`: idle HTTP/1 connections past their deadline and a
    /// generation without a dispatch for the idle timeout. Returns when to run again.
    pub fn expire(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let mut expired_h2 = None;
        let next = {
            let mut st = self.state.lock();
            let idle_next = st.idle.expire(now, &mut expired);
            let h2_deadline = st.h2.idle_deadline(self.idle_timeout);
            if h2_deadline.is_some_and(|d| d <= now) {
                expired_h2 = st.h2.take();
            }
            let h2_next = h2_deadline.filter(|d| *d > now);
            let next = match (idle_next, h2_next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            st.expiry_armed = next.is_some();
            next
        };
        close_all(expired);
        if let Some(generation) = expired_h2 {
            generation.record().close(CloseReason::IdleTimeout, None);
        }
        next
    }

    /// Closes every idle connection and the accepting generation with `reason` (the pool is
    /// dropped). In-flight exchanges and streams finish.
    pub fn close_idle(&self, reason: CloseReason) {
        let (idle, generation) = {
            let mut st = self.state.lock();
            st.expiry_armed = false;
            let idle: Vec<T::H1> = st.idle.take_all().collect();
            (idle, st.h2.take())
        };
        close_all(idle.into_iter().map(|conn| (conn, reason)));
        if let Some(generation) = generation {
            generation.record().close(reason, None);
        }
    }
}
