//! Loom models of the parking spot (`RUSTFLAGS="--cfg pool_loom" cargo test -p pool-h1
//! --release --lib loom`, run by `cargo xtask ci`).
//!
//! Each model runs [`Spot`]'s protocol with a stand-in for the connection, whose sender is
//! always ready, and a flag of its own where a connection's record keeps it, and checks over
//! every interleaving loom explores:
//!
//! * a park racing the driver's poll is never stranded: the connection goes home in that
//!   poll, or the driver was woken and its next poll sends it home (with the driver's waker
//!   stored in an earlier poll, and stored in the racing poll itself);
//! * a park racing the driver's end retires the connection exactly once.

use std::task::{Context, Poll, Wake, Waker};

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use pool_core::CloseReason;
use pool_core::sync::Arc;

use crate::parking::{Parked, Spot};

/// Where the stand-in ended: home, or retired.
#[derive(Default)]
struct Ends {
    home: AtomicUsize,
    retired: AtomicUsize,
}

struct Stand(Arc<Ends>);

impl Parked for Stand {
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        Poll::Ready(Ok(()))
    }

    fn go_home(self) {
        self.0.home.fetch_add(1, Ordering::SeqCst);
    }

    fn retire(self, _: CloseReason, _: Option<hyper::Error>) {
        self.0.retired.fetch_add(1, Ordering::SeqCst);
    }
}

/// The driver task's waker: records that it was woken.
#[derive(Default)]
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A spot and its `occupied` flag, which a connection's record keeps.
struct Modeled {
    spot: Spot<Stand>,
    occupied: AtomicBool,
}

impl Modeled {
    fn new() -> Modeled {
        Modeled {
            spot: Spot::new(),
            occupied: AtomicBool::new(false),
        }
    }

    fn park(&self, conn: Stand) {
        self.spot.park(&self.occupied, conn);
    }

    fn clear(&self) {
        self.spot.clear(&self.occupied);
    }
}

/// One driver poll's `poll_parked`, with `waker` and the driver's cached registration.
fn driver_poll(spot: &Modeled, waker: &Waker, registered: &mut Option<Waker>) {
    spot.spot
        .poll_parked(&spot.occupied, &mut Context::from_waker(waker), registered);
}

fn park_racing_poll(registered_before: bool) {
    loom::model(move || {
        let spot = Arc::new(Modeled::new());
        let ends = Arc::new(Ends::default());
        let woken = std::sync::Arc::new(Woken::default());
        let waker = Waker::from(woken.clone());
        let mut registered = None;
        if registered_before {
            driver_poll(&spot, &waker, &mut registered);
        }
        let parker = {
            let (spot, ends) = (spot.clone(), ends.clone());
            loom::thread::spawn(move || spot.park(Stand(ends)))
        };
        driver_poll(&spot, &waker, &mut registered);
        parker.join().unwrap();
        if ends.home.load(Ordering::SeqCst) == 0 {
            assert!(
                woken.0.load(Ordering::SeqCst),
                "parked after the driver looked, and the driver was not woken"
            );
            driver_poll(&spot, &waker, &mut registered);
        }
        assert_eq!(ends.home.load(Ordering::SeqCst), 1);
        assert_eq!(ends.retired.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn loom_a_park_racing_a_registered_drivers_poll_is_never_stranded() {
    park_racing_poll(true);
}

#[test]
fn loom_a_park_racing_the_drivers_first_poll_is_never_stranded() {
    park_racing_poll(false);
}

#[test]
fn loom_a_park_racing_the_drivers_end_is_retired_once() {
    loom::model(|| {
        let spot = Arc::new(Modeled::new());
        let ends = Arc::new(Ends::default());
        let woken = std::sync::Arc::new(Woken::default());
        let mut registered = None;
        driver_poll(&spot, &Waker::from(woken), &mut registered);
        let parker = {
            let (spot, ends) = (spot.clone(), ends.clone());
            loom::thread::spawn(move || spot.park(Stand(ends)))
        };
        spot.clear();
        parker.join().unwrap();
        assert_eq!(
            ends.retired.load(Ordering::SeqCst),
            1,
            "retired exactly once"
        );
        assert_eq!(ends.home.load(Ordering::SeqCst), 0);
    });
}
