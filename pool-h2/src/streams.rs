//! The stream accounting of one generation: how many of the peer's concurrent streams are
//! taken, and what the peer's limit is.

use pool_core::sync::Arc;
use pool_core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::calm::{Calm, CalmHint};
use crate::frames::{EMPTY_DATA_CEILING, FrameWatch, near_the_limit};
use crate::quota::RequestQuota;
use crate::uploads::Uploads;

/// Reads the peer's current `SETTINGS_MAX_CONCURRENT_STREAMS` from the connection, while it
/// lives.
pub(crate) trait LimitProbe: Send + Sync + 'static {
    /// Calls `record` with h2's current limit while holding the connection: the lock under
    /// which the driver reads and records its own after every poll, so readings are recorded
    /// in the order they were taken. Does nothing once the connection is gone.
    fn record_limit(&self, record: &mut dyn FnMut(usize));
}

/// The stream accounting of one generation, shared by its handles, its leases and its driver.
///
/// `taken` counts streams reserved by the cell or in use; the cell reserves under its lock, so
/// it never hands out more than `limit`, the peer's `SETTINGS_MAX_CONCURRENT_STREAMS` as h2
/// applies it. The driver copies it after every poll of hyper's connection future, which
/// runs when requests are dispatched and when the connection ends (hyper reads frames on a
/// task of its own), so a SETTINGS change mid-connection is followed at the next dispatch.
///
/// h2 starts from `initial_max_send_streams` and cannot tell whether the peer's SETTINGS
/// arrived, so the copied limit is trusted once it differs from that initial value (the peer
/// announced another), or once a response arrived: the peer's SETTINGS precede any response,
/// and the first response reads the limit from the connection itself (`probe`). Until then
/// reservations are not capped (h2 applies its initial limit meanwhile), except that a
/// generation opened next to others *assumes* their known limit (unless it is 0): the same
/// server almost always announces the same one, and a scale-out connection that took every
/// waiting request before learning it would see the excess refused.
pub(crate) struct Streams {
    taken: AtomicUsize,
    limit: AtomicUsize,
    known: AtomicBool,
    /// The limit assumed until `known` (`usize::MAX`: none).
    assumed: AtomicUsize,
    /// The limit h2 applies before the peer's SETTINGS.
    initial: usize,
    /// Set by the driver when hyper's dispatch task ended on its own (see
    /// [`Streams::dispatcher_ended`]).
    dispatcher_ended: AtomicBool,
    /// A response arrived on the connection.
    responded: AtomicBool,
    /// Taken streams the pool gave up on (see `kill.rs`): still counted in `taken`, as h2
    /// still counts them against the peer's limit, but not keeping the connection in use.
    /// Never more than `taken`: a stream leaves this count before it leaves `taken`.
    abandoned: AtomicUsize,
    /// No stream can be taken any more: the generation's last handle is gone.
    sealed: AtomicBool,
    /// Reads h2's current limit from the connection.
    probe: Box<dyn LimitProbe>,
    /// The generation's requests against its server's per-connection request quota.
    pub(crate) quota: RequestQuota,
    /// The cap on streams after the peer asked for calm (`calm.rs`).
    calm: Calm,
    /// The connection's requests with a body, and its upload permit (`uploads.rs`).
    pub(crate) uploads: Uploads,
    /// The most streams taken once the server is known to send empty DATA frames
    /// (`frames.rs`; `usize::MAX`: none).
    ceiling: AtomicUsize,
    /// The empty DATA frames the server sent on the connection (`frames.rs`).
    frames: FrameWatch,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("taken", &self.taken())
            .field("limit", &self.limit())
            .finish()
    }
}

impl Streams {
    /// The accounting of a connection whose h2 starts from `initial` streams; `probe` reads
    /// the connection's current limit; its calm cap starts from the cell's `calm` hint;
    /// `frames` counts the empty DATA frames its server sends.
    pub(crate) fn new(
        initial: usize,
        probe: Box<dyn LimitProbe>,
        calm: Arc<CalmHint>,
        frames: FrameWatch,
    ) -> Streams {
        Streams {
            taken: AtomicUsize::new(0),
            limit: AtomicUsize::new(usize::MAX),
            known: AtomicBool::new(false),
            assumed: AtomicUsize::new(usize::MAX),
            initial,
            dispatcher_ended: AtomicBool::new(false),
            responded: AtomicBool::new(false),
            abandoned: AtomicUsize::new(0),
            sealed: AtomicBool::new(false),
            probe,
            quota: RequestQuota::default(),
            ceiling: AtomicUsize::new(match calm.sends_empty_data() {
                true => EMPTY_DATA_CEILING,
                false => usize::MAX,
            }),
            frames,
            uploads: Uploads::new(calm.clone()),
            calm: Calm::new(calm),
        }
    }

    /// The limit in force: the peer's once known, else the assumed one, if any; lowered to the
    /// calm cap once the peer asked for calm (`calm.rs`), and to the ceiling once it sent
    /// empty DATA frames (`frames.rs`).
    pub(crate) fn limit(&self) -> Option<usize> {
        let peer = if self.known.load(Ordering::Acquire) {
            Some(self.limit.load(Ordering::Acquire))
        } else {
            let assumed = self.assumed.load(Ordering::Acquire);
            (assumed != usize::MAX).then_some(assumed)
        };
        let lower = |limit: Option<usize>, cap: usize| Some(limit.map_or(cap, |l| l.min(cap)));
        let calmed = match self.calm.cap() {
            None => peer,
            Some(cap) => lower(peer, cap),
        };
        match self.ceiling.load(Ordering::Relaxed) {
            usize::MAX => calmed,
            ceiling => lower(calmed, ceiling),
        }
    }

    /// The peer sent an empty DATA frame that did not end its stream: the connection takes at
    /// most [`EMPTY_DATA_CEILING`] streams from now on, and so do the cell's further
    /// connections (`frames.rs`). Returns whether that was news to the cell.
    pub(crate) fn saw_empty_data(&self) -> bool {
        // Called after every poll of the driver once the server sent one: a load, not the
        // cell-wide swap, once this connection knows.
        if self.ceiling.load(Ordering::Relaxed) == EMPTY_DATA_CEILING {
            return false;
        }
        self.ceiling.store(EMPTY_DATA_CEILING, Ordering::Relaxed);
        self.calm.hint().saw_empty_data()
    }

    /// The peer reset a stream with `ENHANCE_YOUR_CALM` before answering it: the stream cap
    /// falls to one less than the streams taken now, that one included (`calm.rs`). Returns
    /// whether that lowered the cap.
    pub(crate) fn saw_calm(&self) -> bool {
        let refused = self.calm.refused(self.taken());
        tracing::debug!(
            cap = refused.cap,
            lowered = refused.lowered,
            "the HTTP/2 peer asked for calm: fewer streams"
        );
        refused.lowered
    }

    /// Reserves a stream if the peer's limit and the generation's request quota allow one, and
    /// no upload waits here for the connection's upload permit (`uploads.rs`).
    pub(crate) fn try_reserve(&self) -> bool {
        if self.uploads.any_waiting() || !self.quota.try_reserve() {
            return false;
        }
        let reserved = match self.limit() {
            None => {
                self.taken.fetch_add(1, Ordering::AcqRel);
                true
            }
            Some(limit) => self
                .taken
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                    (t < limit).then_some(t + 1)
                })
                .is_ok(),
        };
        if !reserved {
            self.quota.unreserve();
        }
        reserved
    }

    /// Gives back a reservation that was not leased (see [`release`](Self::release) for the
    /// return value).
    pub(crate) fn unreserve(&self) -> bool {
        self.quota.unreserve();
        self.release()
    }

    /// Releases one stream; returns whether the generation was at its limit (a waiting request
    /// may take the stream).
    pub(crate) fn release(&self) -> bool {
        let before = self.taken.fetch_sub(1, Ordering::AcqRel);
        self.limit().is_some_and(|limit| before >= limit)
    }

    /// Whether no stream can be reserved: every one the peer's limit allows is taken, or the
    /// request quota is, or an upload waits here for the connection's upload permit.
    pub(crate) fn is_full(&self) -> bool {
        self.limit()
            .is_some_and(|limit| self.taken.load(Ordering::Acquire) >= limit)
            || self.quota.is_reserved_out()
            || self.uploads.any_waiting()
    }

    /// Whether the server, known to send empty DATA frames, sent so many on the connection
    /// that the generation should retire (`frames.rs`). One load while the server sends none.
    pub(crate) fn frames_spent(&self) -> bool {
        self.ceiling.load(Ordering::Relaxed) != usize::MAX
            && near_the_limit(self.frames.empty_data(), self.taken())
    }

    /// The driver saw hyper's dispatch task end on its own (it returned; the runtime did not
    /// drop it) and is about to drop it. Called before the drop, so a request whose callback
    /// that drop fails can tell (see `classify::held_back`).
    pub(crate) fn end_dispatcher(&self) {
        self.dispatcher_ended.store(true, Ordering::Release);
    }

    /// Whether [`end_dispatcher`](Self::end_dispatcher) was called.
    pub(crate) fn dispatcher_ended(&self) -> bool {
        self.dispatcher_ended.load(Ordering::Acquire)
    }

    /// Whether the peer's limit is known (not only assumed).
    pub(crate) fn is_known(&self) -> bool {
        self.known.load(Ordering::Acquire)
    }

    /// Whether the peer's known limit is 0: it allows no stream at all until it says otherwise.
    pub(crate) fn allows_none(&self) -> bool {
        self.known.load(Ordering::Acquire) && self.limit.load(Ordering::Acquire) == 0
    }

    /// Whether a response ever arrived on the connection.
    pub(crate) fn responded(&self) -> bool {
        self.responded.load(Ordering::Relaxed)
    }

    /// Streams reserved or in use.
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }

    /// Whether a taken stream is one the pool has not given up on. Exact while nothing can
    /// take a stream between the two loads (the cell asks under its lock, which reserving
    /// takes): `abandoned` never exceeds `taken` (a stream leaves it before it leaves `taken`),
    /// so when the second load finds as many abandoned as the first found taken, every stream
    /// was abandoned at that moment.
    pub(crate) fn in_use(&self) -> bool {
        let taken = self.taken();
        taken > self.abandoned.load(Ordering::Acquire)
    }

    /// One taken stream is abandoned (see `kill.rs`).
    pub(crate) fn abandon(&self) {
        self.abandoned.fetch_add(1, Ordering::AcqRel);
    }

    /// An abandoned stream is about to be released: called before its [`release`](Self::release).
    pub(crate) fn forget_abandoned(&self) {
        self.abandoned.fetch_sub(1, Ordering::AcqRel);
    }

    /// No stream will be taken any more.
    pub(crate) fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    /// Whether the connection is sealed and every stream left on it is abandoned (at least one):
    /// nothing will end it but a kill. Once sealed, `taken` only falls, so the answer read here
    /// stays true until the connection ends.
    pub(crate) fn only_abandoned_left(&self) -> bool {
        if !self.sealed.load(Ordering::Acquire) {
            return false;
        }
        let taken = self.taken();
        let abandoned = self.abandoned.load(Ordering::Acquire);
        abandoned > 0 && abandoned >= taken
    }

    /// Assumes `limit` until the peer's is known.
    pub(crate) fn assume(&self, limit: usize) {
        self.assumed.store(limit, Ordering::Release);
    }

    /// Records `limit`, h2's current one, after a driver poll. Returns whether the limit in
    /// force grew (streams may be free for waiting requests).
    ///
    /// The driver calls this while it still holds the connection it read `limit` from. The
    /// race that prevents: a reading taken before the peer's SETTINGS applied (h2's initial
    /// 100) recorded after the first response recorded the peer's real limit, which would
    /// then pass for the peer's own, so a cold burst past 100 streams would see its one
    /// connection as full and open another.
    pub(crate) fn observe(&self, limit: usize) -> bool {
        let before = self.limit();
        self.limit.store(limit, Ordering::Release);
        if limit != self.initial {
            self.known.store(true, Ordering::Release);
        }
        grew(before, self.limit())
    }

    /// The peer refused a stream (`REFUSED_STREAM`): like a response, the reset came after the
    /// peer's SETTINGS (h2 applies those before it reads the next frame), so the limit is read
    /// from the connection and trusted, as after [`saw_response`](Self::saw_response), but read
    /// again even if it was known: a refusal says the copy the pool went by was over the limit,
    /// which the peer may have lowered since the driver last copied it. Returns whether the
    /// limit in force grew, and whether the peer allows no stream at all.
    pub(crate) fn saw_refusal(&self) -> (bool, bool) {
        let grew = self.read_limit();
        (grew, self.limit() == Some(0))
    }

    /// A response arrived, so the peer's SETTINGS did before it: read the limit from the
    /// connection and trust it. Returns whether the limit in force grew (that, or the calm cap
    /// rose).
    pub(crate) fn saw_response(&self) -> bool {
        if !self.responded.load(Ordering::Relaxed) {
            self.responded.store(true, Ordering::Relaxed);
        }
        let calm_rose = self.calm.responded();
        if self.known.load(Ordering::Acquire) {
            return calm_rose;
        }
        self.read_limit() || calm_rose
    }

    /// Reads the limit from the connection and trusts it; returns whether the limit in force
    /// grew.
    fn read_limit(&self) -> bool {
        let before = self.limit();
        self.probe
            .record_limit(&mut |limit| self.limit.store(limit, Ordering::Release));
        self.known.store(true, Ordering::Release);
        grew(before, self.limit())
    }
}

/// Whether the limit in force went from `before` to a larger `after` (no limit is the largest).
fn grew(before: Option<usize>, after: Option<usize>) -> bool {
    match (before, after) {
        (Some(before), Some(after)) => after > before,
        (Some(_), None) => true,
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A connection whose h2 currently applies the shared number of streams.
    struct Fixed(std::sync::Arc<AtomicUsize>);

    impl LimitProbe for Fixed {
        fn record_limit(&self, record: &mut dyn FnMut(usize)) {
            record(self.0.load(Ordering::SeqCst));
        }
    }

    /// The accounting of a connection whose h2 applies `current` streams (and a handle to
    /// change that).
    pub(crate) fn accounting(current: usize) -> (Streams, std::sync::Arc<AtomicUsize>) {
        let h2 = std::sync::Arc::new(AtomicUsize::new(current));
        (
            Streams::new(
                100,
                Box::new(Fixed(h2.clone())),
                Arc::new(CalmHint::default()),
                FrameWatch::default(),
            ),
            h2,
        )
    }

    #[test]
    fn the_initial_limit_is_not_trusted_until_the_peer_announces_another_or_a_response_came() {
        let (streams, h2) = accounting(100);
        assert!(!streams.observe(100));
        assert_eq!(streams.limit(), None, "h2's initial value, not the peer's");
        assert!(streams.try_reserve() && streams.try_reserve());
        // The peer's SETTINGS announce 10.
        assert!(!streams.observe(10));
        assert_eq!(streams.limit(), Some(10));
        // A peer that announces exactly 100: known with the first response, read from h2.
        let (said_100, _) = accounting(100);
        said_100.saw_response();
        assert_eq!(said_100.limit(), Some(100));
        drop(h2);
    }

    #[test]
    fn a_refusal_reads_the_limit_again_and_tells_when_the_peer_allows_none() {
        let (streams, h2) = accounting(100);
        assert!(!streams.observe(100));
        // The peer's SETTINGS said 0 and it refused the stream sent before they arrived; the
        // driver has not polled since.
        h2.store(0, Ordering::SeqCst);
        assert_eq!(streams.saw_refusal(), (false, true));
        assert!(
            !streams.try_reserve(),
            "no stream is taken past a limit of 0"
        );
        // Known at 10, then lowered to 2 before the driver copied it: the refusal reads 2.
        let (known, h2) = accounting(100);
        known.observe(10);
        h2.store(2, Ordering::SeqCst);
        assert_eq!(known.saw_refusal(), (false, false));
        assert_eq!(known.limit(), Some(2));
        // Raised meanwhile: the limit grew, and waiting requests may take the new streams.
        h2.store(20, Ordering::SeqCst);
        assert_eq!(known.saw_refusal(), (true, false));
    }

    #[test]
    fn the_first_response_reads_the_limit_the_driver_had_not_copied_yet() {
        let (streams, h2) = accounting(100);
        assert!(!streams.observe(100));
        // h2 processed the peer's SETTINGS (limit 2) but the driver has not polled since.
        h2.store(2, Ordering::SeqCst);
        streams.saw_response();
        assert_eq!(streams.limit(), Some(2));
    }

    #[test]
    fn reservations_stop_at_the_limit_and_a_release_at_the_limit_says_so() {
        let (streams, _) = accounting(2);
        streams.observe(2);
        assert!(streams.try_reserve() && streams.try_reserve());
        assert!(!streams.try_reserve());
        assert!(streams.is_full());
        assert!(
            streams.release(),
            "it was at the limit: a waiter may take the stream"
        );
        assert!(!streams.release());
    }

    #[test]
    fn settings_that_raise_or_lower_the_limit_mid_connection_are_followed() {
        let (streams, _) = accounting(2);
        streams.observe(2);
        assert!(streams.try_reserve() && streams.try_reserve());
        assert!(streams.observe(4), "raised: streams are free");
        assert!(streams.try_reserve() && streams.try_reserve() && !streams.try_reserve());
        assert!(!streams.observe(1), "lowered");
        assert!(streams.is_full());
        assert!(
            streams.release(),
            "above the new limit, a release still says so"
        );
    }

    #[test]
    fn abandoned_streams_are_taken_but_not_in_use_and_only_a_sealed_connection_is_ended() {
        let (streams, _) = accounting(100);
        assert!(streams.try_reserve() && streams.try_reserve());
        streams.abandon();
        assert!(streams.in_use(), "one stream is not abandoned");
        assert!(!streams.only_abandoned_left(), "not sealed");
        streams.release();
        assert_eq!(streams.taken(), 1);
        assert!(!streams.in_use(), "the one left is abandoned");
        assert!(
            !streams.only_abandoned_left(),
            "a stream may still be taken"
        );
        streams.seal();
        assert!(streams.only_abandoned_left());
        // The abandoned stream ends after all (hyper let go of its body).
        streams.forget_abandoned();
        streams.release();
        assert!(!streams.only_abandoned_left(), "nothing is left to end");
        assert!(!streams.in_use());
    }

    #[test]
    fn a_peer_asking_for_calm_caps_the_streams_below_its_limit_until_responses_raise_it() {
        // A peer that announces no limit (h2 runs on its initial 100 until a response).
        let (streams, _) = accounting(100);
        for _ in 0..8 {
            assert!(streams.try_reserve());
        }
        // The peer takes four and refuses the other four, each released after its refusal.
        for _ in 0..4 {
            streams.saw_calm();
            streams.release();
        }
        assert_eq!(streams.limit(), Some(4));
        assert!(streams.is_full() && !streams.try_reserve());
        streams.release();
        assert!(streams.try_reserve(), "three taken, under the cap of four");
        assert!(!streams.try_reserve());
        // Four responses (a cap's worth) raise it by one, and say a stream is free.
        assert!(!streams.saw_response() && !streams.saw_response() && !streams.saw_response());
        assert!(streams.saw_response());
        assert_eq!(streams.limit(), Some(5));
        assert!(streams.try_reserve());
        // A known peer limit below the cap still rules.
        streams.observe(2);
        assert_eq!(streams.limit(), Some(2));
    }

    #[test]
    fn a_sibling_limit_is_assumed_until_the_own_is_known() {
        let (streams, _) = accounting(100);
        streams.assume(3);
        assert_eq!(streams.limit(), Some(3));
        streams.observe(8);
        assert_eq!(streams.limit(), Some(8));
    }
}
