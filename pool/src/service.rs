//! The client as a tower service.
//!
//! [`Client`] implements `tower_service::Service<Request<RequestBody>>`: one request type, so
//! `svc.ready().await?.call(request)`, `oneshot` and tower's middleware (`ServiceBuilder`,
//! timeouts, concurrency limits, tower-http layers) infer everything and need no annotations.
//! hyper-util's legacy client gets the same property from its body type parameter; here the one
//! body every pooled connection is typed over, [`RequestBody`], is that parameter, and
//! [`Client::service`] gives a [`ClientService<B>`] for a stack whose requests carry another
//! body (converted once per request, as [`Client::request`] does).
//!
//! Both are always ready: the pool applies backpressure per origin when a request is sent (a
//! bounded origin queues it, or refuses it with `is_saturated` over the pending cap), not in
//! `poll_ready`. Put `tower::limit::ConcurrencyLimit` in front to bound a caller's requests in
//! flight. What this module does not do: retry (the pool re-sends only what the server did not
//! process; see [`RetryPolicy`](crate::RetryPolicy)) or time out (compose `tower::timeout`).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};

use crate::body::{Body, RequestBody};
use crate::client::{BoxError, Client};
use crate::error::Error;

/// The future of a tower `call`: the response once its head arrives.
pub struct ResponseFuture {
    inner: Pin<Box<dyn Future<Output = Result<Response<Body>, Error>> + Send + 'static>>,
}

impl ResponseFuture {
    fn send(client: Client, request: Request<RequestBody>) -> ResponseFuture {
        ResponseFuture {
            inner: Box::pin(async move { client.send(request).await }),
        }
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<Body>, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl tower_service::Service<Request<RequestBody>> for Client {
    type Response = Response<Body>;
    type Error = Error;
    type Future = ResponseFuture;

    /// Always ready (see the module docs).
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<RequestBody>) -> ResponseFuture {
        ResponseFuture::send(self.clone(), request)
    }
}

impl Client {
    /// This client as a tower service for requests with body type `B`, for a stack whose
    /// requests do not carry [`RequestBody`] (the client itself serves those). It shares this
    /// client's partition, timeouts and connections.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use http_body_util::Full;
    ///
    /// # fn demo(client: pool::Client) {
    /// let service = client.service::<Full<Bytes>>();
    /// # let _ = service;
    /// # }
    /// ```
    pub fn service<B>(&self) -> ClientService<B>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        ClientService {
            client: self.clone(),
            body: PhantomData,
        }
    }
}

/// A [`Client`] as a tower service for requests with body type `B` (see [`Client::service`]).
pub struct ClientService<B> {
    client: Client,
    body: PhantomData<fn(B)>,
}

impl<B> ClientService<B> {
    /// The client underneath.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl<B> Clone for ClientService<B> {
    fn clone(&self) -> Self {
        ClientService {
            client: self.client.clone(),
            body: PhantomData,
        }
    }
}

impl<B> fmt::Debug for ClientService<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientService")
            .field("client", &self.client)
            .field("body", &std::any::type_name::<B>())
            .finish()
    }
}

impl<B> tower_service::Service<Request<B>> for ClientService<B>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Error;
    type Future = ResponseFuture;

    /// Always ready (see the module docs).
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture {
        ResponseFuture::send(self.client.clone(), request.map(RequestBody::new))
    }
}
