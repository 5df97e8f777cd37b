//! The HTTP/2 handshake and driver: from an established transport to an [`H2Generation`] and
//! the future that drives its socket on the owner partition.
//!
//! hyper's HTTP/2 client needs an executor and a timer; the handshake wires in the partition's
//! [`PartitionExecutor`] and the pool's [`PoolTimer`], then applies the pool's
//! [`H2Settings`]. The record is installed by the caller between the two steps, once the
//! handshake succeeded, so a handshake that fails installs nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::Body;
use hyper::client::conn::http2::{Builder, SendRequest};
use pin_project_lite::pin_project;
use pool_core::DriverSpawner;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;

use crate::calm::CalmHint;
use crate::classify::go_away_asking_for_calm;
use crate::frames::FrameWatch;
use crate::generation::{H2Generation, no_streams_allowed};
use crate::heard::{Heard, PeerHeard};
use crate::kill::{KillSwitch, Killable};
use crate::reset::ReadPastReset;
use crate::runtime::{PartitionExecutor, PoolTimer, Turn};
use crate::settings::H2Settings;
use crate::streams::{LimitProbe, Streams};

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Where an HTTP/2 connection reports to its cell, implemented by the assembled pool.
pub trait H2Home: Send + Sync + 'static {
    /// The generation of `record` stopped accepting streams (its driver ended, or every stream
    /// left on it is abandoned and it has no room for another): remove it from its cell so the
    /// next request gets a replacement.
    fn retire(&self, record: &Arc<ConnectionRecord>);

    /// A stream of the generation of `record` became free while it was at the peer's limit (a
    /// stream ended, or the peer raised its limit): a request waiting in the cell may take it.
    fn stream_freed(&self, record: &Arc<ConnectionRecord>);

    /// A stream of the generation of `record` ended below the peer's limit. Called at the end
    /// of every such stream, so it must cost next to nothing when there is nothing to do (a
    /// bounded cell uses it to give the generation's capacity to other partitions); the
    /// default does nothing.
    fn stream_ended(&self, record: &Arc<ConnectionRecord>) {
        let _ = record;
    }

    /// The generation of `record` is about to carry the last window of its request quota: its
    /// successor should open now. The default does nothing.
    fn successor_wanted(&self, record: &Arc<ConnectionRecord>) {
        let _ = record;
    }

    /// Nothing refers to the connection of `record` any more: it carried `served` requests that
    /// its server processed, and `cut` says whether the server's GOAWAY refused at least one
    /// more. The cell learns its server's per-connection request quota from these reports;
    /// the default ignores them.
    fn connection_ended(&self, record: &Arc<ConnectionRecord>, served: u64, cut: bool) {
        let _ = (record, served, cut);
    }

    /// What the cell's connections learnt from servers that asked for calm: the stream cap
    /// they last had, which a new connection starts from (`calm.rs`), whether request bodies
    /// go one at a time (`uploads.rs`), and whether connections open with a larger stream
    /// window (`window.rs`, read by [`handshake`], which takes the hint itself). The default
    /// gives each connection a hint of its own, so each starts without a cap and nothing is
    /// learnt beyond the connection. The `pool` crate hands the cells of one origin the same
    /// hint in every partition: what the server taught one connection, every later one knows.
    fn calm(&self) -> Arc<CalmHint> {
        Arc::new(CalmHint::default())
    }
}

/// The peer's current `SETTINGS_MAX_CONCURRENT_STREAMS` as hyper's connection applies it.
pub trait PeerStreamLimit {
    /// The most streams the peer allows open at once right now.
    fn max_send_streams(&self) -> usize;
}

impl<T, B, E> PeerStreamLimit for hyper::client::conn::http2::Connection<T, B, E>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: Body + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
    E: hyper::rt::bounds::Http2ClientConnExec<B, T> + Unpin,
{
    fn max_send_streams(&self) -> usize {
        self.current_max_send_streams()
    }
}

/// Runs hyper's HTTP/2 handshake on `io` with the partition's executor, the pool's timer and
/// `settings`, and with what the cell's connections learnt (`hint`: a larger stream window,
/// `window.rs`). The caller then installs the connection's record and finishes with
/// [`Handshaken::install`]. The connection reads on after the peer reset it, to what the peer
/// sent first (`reset.rs`), and notes whether the peer sent anything at all (`heard.rs`).
/// `frames` is the count of the empty DATA frames `io`'s transport reads ([`watch_frames`]
/// under hyper's adapter, see `frames.rs`): the driver retires the generation before h2's limit
/// on them ends the connection.
///
/// [`watch_frames`]: crate::watch_frames
///
/// # Errors
///
/// hyper's handshake error; nothing was installed.
pub async fn handshake<I, B>(
    spawner: Arc<dyn DriverSpawner>,
    timer: PoolTimer,
    settings: &H2Settings,
    hint: &CalmHint,
    io: I,
    frames: FrameWatch,
) -> hyper::Result<
    Handshaken<B, impl Future<Output = hyper::Result<()>> + PeerStreamLimit + Send + use<I, B>>,
>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let turn = Turn::default();
    let mut builder = Builder::new(PartitionExecutor::new(spawner, turn.clone()));
    builder.timer(timer);
    settings.apply(&mut builder);
    if let Some(window) = crate::window::learnt_stream_window(settings, hint) {
        builder.initial_stream_window_size(Some(window));
    }
    let kill = std::sync::Arc::new(KillSwitch::default());
    let heard = std::sync::Arc::new(PeerHeard::default());
    let io = Killable::new(
        ReadPastReset::new(Heard::new(io, heard.clone())),
        kill.clone(),
    );
    let (sender, conn) = builder.handshake::<_, B>(io).await?;
    Ok(Handshaken {
        sender,
        conn,
        initial_max_send_streams: settings.initial_max_send_streams(),
        turn,
        kill,
        heard,
        frames,
    })
}

/// An HTTP/2 connection whose handshake succeeded, before its record exists.
#[derive(Debug)]
pub struct Handshaken<B, F> {
    sender: SendRequest<B>,
    conn: F,
    /// The streams h2 allows before the peer's SETTINGS.
    initial_max_send_streams: usize,
    /// The turn hyper's tasks for this connection take (see [`PartitionExecutor`]).
    turn: Turn,
    /// Ends the connection's transport (see `kill.rs`).
    kill: std::sync::Arc<KillSwitch>,
    /// Whether the peer has sent anything on the connection (see `heard.rs`).
    heard: std::sync::Arc<PeerHeard>,
    /// The empty DATA frames the peer sent (see `frames.rs`).
    frames: FrameWatch,
}

impl<B, F: PeerStreamLimit + Send + 'static> Handshaken<B, F> {
    /// Attaches the connection's installed `record`: returns the generation and its driver,
    /// which the caller must spawn on the connection's owner partition; the driver retires the
    /// generation through `home` when it ends.
    pub fn install(
        self,
        record: Arc<ConnectionRecord>,
        home: Arc<dyn H2Home>,
    ) -> (H2Generation<B>, H2Driver<F>) {
        // The driver must not hold a sender: hyper shuts an HTTP/2 connection down gracefully
        // once the last sender is gone (after the cell dropped the generation and every lease
        // handed its request over; the streams in flight finish on the connection).
        // Before anything can close the record: its close asks the frame reader why the
        // server ended the connection (`last_words.rs`).
        record.set_end_witness(self.frames.witness());
        let conn = std::sync::Arc::new(std::sync::Mutex::new(self.conn));
        let probe = ConnectionProbe(std::sync::Arc::downgrade(&conn));
        let streams = Arc::new(Streams::new(
            self.initial_max_send_streams,
            Box::new(probe),
            home.calm(),
            self.frames.clone(),
        ));
        let driver = H2Driver {
            turn: self.turn,
            conn: Some(conn),
            record: Some(record.clone()),
            home: Some(home.clone()),
            streams: streams.clone(),
            kill: self.kill.clone(),
            heard: self.heard.clone(),
            watching: true,
            frames: self.frames,
        };
        (
            H2Generation::new(self.sender, record, streams, home, self.kill, self.heard),
            driver,
        )
    }
}

pin_project! {
    /// Drives one HTTP/2 connection's hyper future, reports how it ended to its record, and
    /// retires its generation from its cell.
    pub struct H2Driver<F> {
        // `None` once the hyper future completed and was dropped. Shared (weakly) with the
        // generation's stream accounting, which reads the peer's limit through it when the
        // first response arrives; the driver holds the only strong reference, so dropping it
        // here drops the connection.
        conn: Option<std::sync::Arc<std::sync::Mutex<F>>>,
        // Taken when the connection ends; still present at drop means the runtime dropped us.
        record: Option<Arc<ConnectionRecord>>,
        // The cell to retire the generation from.
        home: Option<Arc<dyn H2Home>>,
        // Where the peer's stream limit is copied after every poll.
        streams: Arc<Streams>,
        // Held while hyper's dispatch task is polled (see `PartitionExecutor`).
        turn: Turn,
        // Ends the connection's transport (see `kill.rs`).
        kill: std::sync::Arc<KillSwitch>,
        // Wakes this driver when the peer's SETTINGS may have changed its limit, until the
        // limit is known (see `heard.rs`).
        heard: std::sync::Arc<PeerHeard>,
        // The limit was not known at the last poll.
        watching: bool,
        // The empty DATA frames the peer sent, read after every poll (see `frames.rs`).
        frames: FrameWatch,
    }

    impl<F> PinnedDrop for H2Driver<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(record) = this.record.take() {
                record.driver_dropped();
                if let Some(home) = this.home.take() {
                    home.retire(&record);
                }
            }
        }
    }
}

/// Reads the peer's current limit from the driver's connection (while it lives).
struct ConnectionProbe<F>(std::sync::Weak<std::sync::Mutex<F>>);

impl<F: PeerStreamLimit + Send + 'static> LimitProbe for ConnectionProbe<F> {
    fn record_limit(&self, record: &mut dyn FnMut(usize)) {
        let Some(conn) = self.0.upgrade() else {
            return;
        };
        let conn = conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        record(conn.max_send_streams());
    }
}

impl<F> Future for H2Driver<F>
where
    F: Future<Output = hyper::Result<()>> + PeerStreamLimit + Unpin,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let Some(shared) = this.conn.as_ref() else {
            return Poll::Ready(());
        };
        if *this.watching {
            if this.streams.is_known() {
                *this.watching = false;
                this.heard.settings_known();
            } else {
                this.heard.watch_settings(cx.waker());
            }
        }
        let (polled, grew) = {
            // The connection's turn first, then the connection: nothing takes them the other
            // way round (the first response's probe takes only the connection).
            let _turn = this.turn.take();
            // Never a pool lock: only this driver and the first response of the connection
            // take it, and neither holds a pool lock then.
            let mut conn = shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let polled = Pin::new(&mut *conn).poll(cx);
            // The peer's SETTINGS may have changed its limit since the last poll. Recorded
            // before the connection is let go, so the first response's probe cannot record a
            // newer reading in between (see `Streams::observe`).
            (polled, this.streams.observe(conn.max_send_streams()))
        };
        if grew {
            if let (Some(home), Some(record)) = (this.home.as_ref(), this.record.as_ref()) {
                home.stream_freed(record);
            }
        }
        let empty = this.frames.empty_data();
        if empty > 0 {
            if let (Some(home), Some(record)) = (this.home.as_ref(), this.record.as_ref()) {
                crate::frames::saw_empty_data(this.streams, record, &**home, empty);
            }
        }
        let result = match polled {
            Poll::Ready(result) => result,
            // The peer allows no stream (its SETTINGS_MAX_CONCURRENT_STREAMS is 0): hyper's
            // dispatch task would hold a request that reached it, waiting for a stream, for as
            // long as the peer keeps that limit, and nothing would ever bring it back. End the
            // task as if the connection had ended (see `no_streams_allowed`): a request it held
            // or still had queued comes back as refused, to be re-sent under the budget or to
            // fail once that is spent (curl and Go's Transport give up the same way).
            Poll::Pending if this.streams.allows_none() => {
                if let (Some(record), Some(home)) = (this.record.as_ref(), this.home.as_ref()) {
                    no_streams_allowed(this.streams, record, &**home, this.kill);
                }
                Ok(())
            }
            Poll::Pending => return Poll::Pending,
        };
        let Some(record) = this.record.take() else {
            return Poll::Ready(());
        };
        if let Err(error) = &result {
            if go_away_asking_for_calm(error) {
                crate::calm::learn_from_calm_goaway(&this.streams.uploads, &record);
            }
        }
        let error = result.err().map(|e| Box::new(e) as BoxError);
        let conn = this.conn;
        // Before the dispatch task is dropped: a request it still held fails in that drop.
        this.streams.end_dispatcher();
        record.driver_completed(error, || *conn = None);
        if let Some(home) = this.home.take() {
            home.retire(&record);
        }
        Poll::Ready(())
    }
}

impl<F> std::fmt::Debug for H2Driver<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Driver")
            .field("running", &self.conn.is_some())
            .finish()
    }
}
