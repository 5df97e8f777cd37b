//! The future of one HTTP/1 exchange, from the hand-over to hyper until the response head.
//!
//! Written by hand rather than as an `async` block: a block keeps hyper's response future
//! twice (once as the captured value, once as the value being awaited), and every request
//! moves this future into its caller's state, so the smaller the cheaper.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use pool_core::CloseReason;

use crate::connection::{H1Connection, SendOutcome};

pin_project! {
    /// Waits for hyper's answer to a request handed over on `conn`.
    ///
    /// # Drop behavior
    ///
    /// Dropped before hyper answered (the caller gave up on the request), it closes the
    /// record as [`CloseReason::RequestCanceled`] before dropping the connection: the first
    /// close wins, so the transport close that follows does not blame the peer.
    pub(crate) struct Sending<F, B> {
        #[pin]
        pub(crate) response: F,
        // Taken when hyper answers.
        pub(crate) conn: Option<H1Connection<B>>,
        pub(crate) reused: bool,
        // The request said `Connection: close`.
        pub(crate) request_closes: bool,
        // The transport's read count at dispatch.
        pub(crate) read_mark: u64,
    }

    impl<F, B> PinnedDrop for Sending<F, B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(conn) = this.project().conn.take() {
                conn.record().close(CloseReason::RequestCanceled, None);
            }
        }
    }
}

impl<F, B> Future for Sending<F, B>
where
    F: Future<
        Output = Result<
            http::Response<hyper::body::Incoming>,
            hyper::client::conn::TrySendError<http::Request<B>>,
        >,
    >,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Output = SendOutcome<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SendOutcome<B>> {
        let this = self.project();
        let response = ready!(this.response.poll(cx));
        let conn = this.conn.take().expect("polled after completion");
        Poll::Ready(conn.outcome(
            response,
            *this.reused,
            *this.read_mark,
            *this.request_closes,
        ))
    }
}
