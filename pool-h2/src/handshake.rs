//! The HTTP/2 handshake and driver: from an established transport to an [`H2Generation`] and
//! the future that drives its socket on the owner partition.
//!
//! hyper's HTTP/2 client needs an executor and a timer; the handshake wires in the partition's
//! [`PartitionExecutor`] and the pool's [`PoolTimer`], then applies the pool's
//! [`H2Settings`]. The record is installed by the caller between the two steps, once the
//! handshake succeeded, so a handshake that fails installs nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use hyper::body::Body;
use hyper::client::conn::http2::{Builder, SendRequest};
use pin_project_lite::pin_project;
use pool_core::DriverSpawner;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;

use crate::generation::H2Generation;
use crate::runtime::{PartitionExecutor, PoolTimer};
use crate::settings::H2Settings;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Where an HTTP/2 connection reports that it stopped, implemented by the assembled pool.
pub trait H2Home: Send + Sync + 'static {
    /// The generation of `record` stopped accepting streams (its driver ended): remove it from
    /// its cell so the next request gets a replacement.
    fn retire(&self, record: &Arc<ConnectionRecord>);
}

/// Runs hyper's HTTP/2 handshake on `io` with the partition's executor, the pool's timer and
/// `settings`. The caller then installs the connection's record and finishes with
/// [`Handshaken::install`].
///
/// # Errors
///
/// hyper's handshake error; nothing was installed.
pub async fn handshake<I, B>(
    spawner: Arc<dyn DriverSpawner>,
    timer: PoolTimer,
    settings: &H2Settings,
    io: I,
) -> hyper::Result<Handshaken<B, impl Future<Output = hyper::Result<()>> + Send + use<I, B>>>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut builder = Builder::new(PartitionExecutor::new(spawner));
    builder.timer(timer);
    settings.apply(&mut builder);
    let (sender, conn) = builder.handshake::<I, B>(io).await?;
    Ok(Handshaken { sender, conn })
}

/// An HTTP/2 connection whose handshake succeeded, before its record exists.
#[derive(Debug)]
pub struct Handshaken<B, F> {
    sender: SendRequest<B>,
    conn: F,
}

impl<B, F> Handshaken<B, F> {
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
        // ended).
        let driver = H2Driver {
            conn: Some(self.conn),
            record: Some(record.clone()),
            home: Some(home),
        };
        (H2Generation::new(self.sender, record), driver)
    }
}

pin_project! {
    /// Drives one HTTP/2 connection's hyper future, reports how it ended to its record, and
    /// retires its generation from its cell.
    pub struct H2Driver<F> {
        // `None` once the hyper future completed and was dropped.
        #[pin]
        conn: Option<F>,
        // Taken when the connection ends; still present at drop means the runtime dropped us.
        record: Option<Arc<ConnectionRecord>>,
        // The cell to retire the generation from.
        home: Option<Arc<dyn H2Home>>,
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

impl<F> Future for H2Driver<F>
where
    F: Future<Output = hyper::Result<()>>,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        let Some(conn) = this.conn.as_mut().as_pin_mut() else {
            return Poll::Ready(());
        };
        let result = ready!(conn.poll(cx));
        let Some(record) = this.record.take() else {
            return Poll::Ready(());
        };
        let error = result.err().map(|e| Box::new(e) as BoxError);
        record.driver_completed(error, || this.conn.set(None));
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
