//! The future of one HTTP/2 exchange, from the hand-over to hyper (or, for an upload that
//! waits for its connection's permit, from before it) until the response head.
//!
//! Written by hand rather than as an `async` block, which would keep hyper's response future
//! twice (the captured value and the value being awaited) in a future every request moves.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::client::conn::http2::SendRequest;
use pin_project_lite::pin_project;

use crate::generation::H2SendOutcome;
use crate::guard::StreamGuard;
use crate::uploads::UploadInFlight;

pin_project! {
    /// Waits for hyper's answer to a request sent on the stream `guard` counts. Dropping it
    /// drops hyper's response future (which resets the stream) and then the guard.
    pub(crate) struct Sending<F> {
        #[pin]
        pub(crate) response: F,
        // Taken when hyper answers.
        pub(crate) guard: Option<StreamGuard>,
        pub(crate) reused: bool,
        // A request with a body, counted on its connection until its response head.
        pub(crate) upload: Option<UploadInFlight>,
    }
}

pin_project! {
    /// What [`StreamLease::send`](crate::StreamLease::send) returns: the exchange handed to
    /// hyper, or an upload that waits for its connection's permit first (`uploads.rs`), boxed
    /// because it is rare and holds the request and sender meanwhile.
    #[project = DispatchProj]
    pub(crate) enum Dispatch<F, B> {
        Sent {
            #[pin]
            sending: Sending<F>,
        },
        Queued {
            waiting: Pin<Box<dyn Future<Output = H2SendOutcome<B>> + Send>>,
        },
    }
}

impl<F, B> Future for Dispatch<F, B>
where
    Sending<F>: Future<Output = H2SendOutcome<B>>,
{
    type Output = H2SendOutcome<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<H2SendOutcome<B>> {
        match self.project() {
            DispatchProj::Sent { sending } => sending.poll(cx),
            DispatchProj::Queued { waiting } => waiting.as_mut().poll(cx),
        }
    }
}

impl<F, B> Future for Sending<F>
where
    F: Future<Output = Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<B>>>>,
    B: Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    type Output = H2SendOutcome<B>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<H2SendOutcome<B>> {
        let this = self.project();
        let response = ready!(this.response.poll(cx));
        // The response head: the upload's permit goes to the next one.
        drop(this.upload.take());
        let guard = this.guard.take().expect("polled after completion");
        Poll::Ready(guard.outcome(response, *this.reused))
    }
}

/// Hands `request` to hyper on the stream `guard` counts; `upload` when it has a body, counted
/// on its connection (holding the upload `permit`, if taken) until its response head.
pub(crate) fn dispatch<B>(
    mut sender: SendRequest<B>,
    guard: StreamGuard,
    request: Request<B>,
    upload: bool,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Sending<
    impl Future<Output = Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<B>>>>
    + Send
    + use<B>,
>
where
    B: Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let generation = guard.generation.as_deref();
    let dispatched = generation.map_or(0, |g| g.record.count_dispatch());
    let upload = generation
        .filter(|_| upload)
        .map(|g| UploadInFlight::new(g.streams.clone(), permit));
    let response = sender.try_send_request(request);
    drop(sender);
    if let Some(generation) = &guard.generation {
        generation.dispatched(dispatched);
    }
    let reused = dispatched > 1;
    Sending {
        response,
        guard: Some(guard),
        reused,
        upload,
    }
}
