//! The future of one HTTP/2 exchange, from the hand-over to hyper until the response head.
//!
//! Written by hand rather than as an `async` block, which would keep hyper's response future
//! twice (the captured value and the value being awaited) in a future every request moves.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use hyper::body::{Body, Incoming};
use pin_project_lite::pin_project;

use crate::generation::H2SendOutcome;
use crate::guard::StreamGuard;

pin_project! {
    /// Waits for hyper's answer to a request sent on the stream `guard` counts. Dropping it
    /// drops hyper's response future (which resets the stream) and then the guard.
    pub(crate) struct Sending<F> {
        #[pin]
        pub(crate) response: F,
        // Taken when hyper answers.
        pub(crate) guard: Option<StreamGuard>,
        pub(crate) reused: bool,
    }
}

impl<F, B> Future for Sending<F>
where
    F: Future<
        Output = Result<
            http::Response<Incoming>,
            hyper::client::conn::TrySendError<http::Request<B>>,
        >,
    >,
    B: Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    type Output = H2SendOutcome<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<H2SendOutcome<B>> {
        let this = self.project();
        let response = ready!(this.response.poll(cx));
        let guard = this.guard.take().expect("polled after completion");
        Poll::Ready(guard.outcome(response, *this.reused))
    }
}
