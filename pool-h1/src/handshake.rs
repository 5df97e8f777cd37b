//! The HTTP/1 handshake and driver: from an established transport to an [`H1Connection`] and
//! the future that drives its socket on the owner partition.
//!
//! The record is installed by the caller between the two steps, right after hyper's handshake
//! succeeds (the pool knows the connection's identity, timings and permit; this crate does
//! not), so a handshake that fails installs nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use hyper::body::Body;
use hyper::client::conn::http1::SendRequest;
use pin_project_lite::pin_project;
use pool_core::connection::{ConnectionRecord, PhysicalLink};
use pool_core::sync::Arc;

use crate::connection::{Fixed, H1Connection, H1Home};
use crate::early::{EarlyIo, FirstUse};
use crate::parking::ParkingSpot;
use crate::raw_names::{NamesIo, NamesSlot};
use crate::request::ForwardProxy;
use crate::settings::H1Settings;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Runs hyper's HTTP/1 handshake on `io` with `settings`. The caller then installs the
/// connection's record and finishes with [`Handshaken::install`].
///
/// `io` is wrapped so that what the server sends before the first request is read as that
/// request's response (see the crate docs), and, with
/// [`H1Settings::record_raw_header_names`] on, so that each response head's names are kept
/// (see [`RawHeaderNames`](crate::RawHeaderNames)).
///
/// # Errors
///
/// hyper's handshake error; nothing was installed.
pub async fn handshake<I, B>(
    settings: &H1Settings,
    io: I,
) -> hyper::Result<Handshaken<B, impl Future<Output = hyper::Result<()>> + Send + use<I, B>>>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    // What the server sends before the first request is that request's (see `early`).
    let first_use = std::sync::Arc::new(FirstUse::default());
    let io = EarlyIo::new(io, first_use.clone());
    if !settings.records_raw_header_names() {
        let (sender, conn) = settings.handshake::<EarlyIo<I>, B>(io).await?;
        return Ok(Handshaken {
            sender,
            conn: EitherConn::Plain {
                conn: conn.with_upgrades(),
            },
            names: None,
            first_use,
        });
    }
    let slot = std::sync::Arc::new(NamesSlot::default());
    let io = NamesIo::new(io, slot.clone(), settings.names_parser());
    let (sender, conn) = settings.handshake::<NamesIo<EarlyIo<I>>, B>(io).await?;
    Ok(Handshaken {
        sender,
        conn: EitherConn::Names {
            conn: conn.with_upgrades(),
        },
        names: Some(slot),
        first_use,
    })
}

pin_project! {
    /// hyper's connection future over the transport as given, or over [`NamesIo`].
    #[project = EitherConnProj]
    enum EitherConn<P, N> {
        Plain { #[pin] conn: P },
        Names { #[pin] conn: N },
    }
}

impl<P, N> Future for EitherConn<P, N>
where
    P: Future<Output = hyper::Result<()>>,
    N: Future<Output = hyper::Result<()>>,
{
    type Output = hyper::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            EitherConnProj::Plain { conn } => conn.poll(cx),
            EitherConnProj::Names { conn } => conn.poll(cx),
        }
    }
}

/// An HTTP/1 connection whose handshake succeeded, before its record exists.
#[derive(Debug)]
pub struct Handshaken<B, F> {
    sender: SendRequest<B>,
    conn: F,
    /// Where the transport leaves each response head's names, when they are recorded.
    names: Option<std::sync::Arc<NamesSlot>>,
    /// What the transport and the cell tell each other about the first use (see `early`).
    first_use: std::sync::Arc<FirstUse>,
}

impl<B: Send + 'static, F> Handshaken<B, F> {
    /// Attaches the connection's installed `record`: returns the connection (ready for its
    /// first request, returning to `home`) and its driver, which the caller must spawn on the
    /// connection's owner partition.
    /// `link` is the transport's link (its read count tells an exchange whether its response
    /// had begun when the connection failed); `forward` is set when the transport goes to a
    /// forward proxy.
    pub fn install(
        self,
        record: Arc<ConnectionRecord>,
        home: Arc<dyn H1Home<B>>,
        link: Arc<PhysicalLink>,
        forward: Option<ForwardProxy>,
    ) -> (H1Connection<B>, H1Driver<F, B>) {
        // Before anything can close the record: hyper gives a transport error to the request
        // in flight and ends its connection without one, so the close asks the link.
        record.set_end_witness(link.end_witness());
        let spot = Arc::new(ParkingSpot::default());
        let driver = H1Driver {
            conn: Some(self.conn),
            record: Some(record.clone()),
            spot: Some(spot.clone()),
            registered: None,
            home: home.clone(),
        };
        (
            H1Connection::new(
                self.sender,
                record,
                Fixed {
                    home,
                    spot,
                    link,
                    forward,
                    names: self.names,
                    first_use: self.first_use,
                },
            ),
            driver,
        )
    }
}

pin_project! {
    /// Drives one HTTP/1 connection's hyper future, finishes the returns parked on its
    /// [`ParkingSpot`], and reports how the connection ended to its record.
    pub struct H1Driver<F, B>
    where
        B: Send,
        B: 'static,
    {
        // `None` once the hyper future completed and was dropped.
        #[pin]
        conn: Option<F>,
        // Taken when the connection ends; still present at drop means the runtime dropped us.
        record: Option<Arc<ConnectionRecord>>,
        // Where a finished exchange waits for hyper's readiness.
        spot: Option<Arc<ParkingSpot<B>>>,
        // The waker this driver last stored in `spot`.
        registered: Option<Waker>,
        // The connection's cell, told when the server closes the connection while idle.
        home: Arc<dyn H1Home<B>>,
    }

    impl<F, B> PinnedDrop for H1Driver<F, B>
    where
        B: Send,
        B: 'static,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let (Some(spot), Some(record)) = (this.spot.take(), this.record.as_ref()) {
                spot.clear(record);
            }
            if let Some(record) = this.record.take() {
                record.driver_dropped();
            }
        }
    }
}

impl<F, B> Future for H1Driver<F, B>
where
    F: Future<Output = hyper::Result<()>>,
    B: Send + 'static,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        let Some(conn) = this.conn.as_mut().as_pin_mut() else {
            return Poll::Ready(());
        };
        let polled = conn.poll(cx);
        if let (Some(spot), Some(record)) = (this.spot.as_ref(), this.record.as_ref()) {
            // After hyper's poll, which is what makes a finished exchange's sender ready.
            spot.poll_parked(record, cx, this.registered);
        }
        let result = ready!(polled);
        let Some(record) = this.record.take() else {
            return Poll::Ready(());
        };
        if let Some(spot) = this.spot.take() {
            spot.clear(&record);
        }
        if record.is_idle() {
            // Nothing was sent on it since it went idle (a checkout would have made it
            // active), so the server closed it on its own: perhaps its idle timeout.
            this.home.closed_while_idle(&record);
        }
        let error = result.err().map(|e| Box::new(e) as BoxError);
        record.driver_completed(error, || this.conn.set(None));
        Poll::Ready(())
    }
}

impl<F, B: Send + 'static> std::fmt::Debug for H1Driver<F, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Driver")
            .field("running", &self.conn.is_some())
            .finish()
    }
}
