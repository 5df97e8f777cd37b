//! `validate_base_client_config` runs the pool's TLS preflight: the platform's trust store is
//! read when an SDK client selects this HTTP client, once, and not when the client is built.
//!
//! The roots load once per process, so this is its own test binary. What happened is read
//! from the pool's `tracing` events (the loader reports how many roots it loaded, or that it
//! found none) through a recording subscriber installed around each step.

use std::sync::{Arc, Mutex, PoisonError};

use aws_smithy_runtime_api::client::http::HttpClient;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
use aws_smithy_types::config_bag::ConfigBag;
use pool_smithy::PoolHttpClient;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every event's message.
#[derive(Clone, Default)]
struct Recorder {
    messages: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// How many events reported loading the native roots (with or without finding any).
    fn root_loads(&self) -> usize {
        self.messages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|m| {
                m.contains("loaded native root certificates")
                    || m.contains("no native root certificates found")
            })
            .count()
    }
}

struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.messages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn validate(client: &PoolHttpClient) {
    client
        .validate_base_client_config(&RuntimeComponentsBuilder::for_tests(), &ConfigBag::base())
        .expect("preflight succeeds");
}

#[test]
fn selecting_the_client_loads_the_native_roots_once_and_building_it_does_not() {
    let building = Recorder::default();
    let client = tracing::subscriber::with_default(building.clone(), || {
        PoolHttpClient::new().expect("client")
    });
    assert_eq!(building.root_loads(), 0, "building reads no trust store");

    let selecting = Recorder::default();
    tracing::subscriber::with_default(selecting.clone(), || validate(&client));
    assert_eq!(
        selecting.root_loads(),
        1,
        "the preflight read the trust store"
    );

    let again = Recorder::default();
    tracing::subscriber::with_default(again.clone(), || {
        validate(&client);
        validate(&client.clone());
    });
    assert_eq!(again.root_loads(), 0, "the preflight is idempotent");
}
