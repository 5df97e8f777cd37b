//! Happy eyeballs: racing connection attempts across addresses (RFC 8305, section 5,
//! simplified).
//!
//! The racing core is generic over what "an attempt" is, so the timing rules can be tested
//! with fake attempts under paused tokio time; [`dial`](crate::dial) plugs real TCP connects
//! into it.
//!
//! ```text
//!  addr[0] |=====x                      (fails: next starts at once)
//!  addr[1]       |==========...         (slow)
//!  addr[2]           delay |=====ok     (started `delay` after addr[1] started; wins)
//!                                       everything still in flight is dropped
//! ```
//!
//! What this module does not do: resolve names, prefer a family learned from history, or
//! implement the RFC's resolution delay (waiting briefly for AAAA answers); the resolver hands
//! over one finished list.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::ConnectError;

/// Orders addresses for racing: families alternate, starting with the family of the first
/// address, and each family keeps the resolver's order (RFC 8305 section 4 with a "First
/// Address Family Count" of one).
pub(crate) fn interleave(addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else {
        return addrs;
    };
    let first_is_v6 = first.is_ipv6();
    let total = addrs.len();
    let (preferred, other): (Vec<_>, Vec<_>) = addrs
        .into_iter()
        .partition(|addr| addr.is_ipv6() == first_is_v6);

    let mut ordered = Vec::with_capacity(total);
    let mut preferred = preferred.into_iter();
    let mut other = other.into_iter();
    loop {
        match (preferred.next(), other.next()) {
            (None, None) => break,
            (a, b) => ordered.extend(a.into_iter().chain(b)),
        }
    }
    ordered
}

/// Races `connect_one` over `addrs`, in the given order, and returns the first success.
///
/// * The first attempt starts immediately.
/// * The next attempt starts when `delay` has elapsed since the previous attempt *started*, or
///   immediately when every attempt in flight has failed.
/// * `None` or a zero `delay` means one attempt at a time, strictly in order.
/// * The first success wins; every other attempt still in flight is dropped (cancelled).
/// * If every attempt fails, the error of the attempt that failed last is returned.
///
/// # Cancel safety
///
/// Dropping the returned future drops every attempt in flight.
pub(crate) async fn race<F, Fut, T>(
    addrs: Vec<SocketAddr>,
    delay: Option<Duration>,
    mut connect_one: F,
) -> Result<T, ConnectError>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: Future<Output = Result<T, ConnectError>>,
{
    let delay = delay.filter(|d| !d.is_zero());
    let mut waiting: VecDeque<SocketAddr> = addrs.into();
    let mut in_flight: Vec<Pin<Box<Fut>>> = Vec::new();
    let mut last_error: Option<ConnectError> = None;
    // Fires `delay` after the latest start. Created by the first start, and only when there
    // is a delay, so sequential dialing never touches the timer driver. Polled only while
    // more addresses wait, so a deadline left over from the last start is harmless.
    let mut next_start: Pin<&mut Option<Sleep>> = pin!(None);

    poll_fn(|cx| {
        loop {
            // Start an attempt when nothing is in flight (the beginning, or everything failed)
            // or when the delay since the latest start has elapsed.
            let start_now = in_flight.is_empty()
                || (!waiting.is_empty() && timer_fired(next_start.as_mut(), cx));
            if start_now {
                let Some(addr) = waiting.pop_front() else {
                    // Nothing in flight and nothing left to try.
                    let error = last_error.take().unwrap_or_else(no_addresses);
                    return Poll::Ready(Err(error));
                };
                in_flight.push(Box::pin(connect_one(addr)));
                if let Some(delay) = delay {
                    let deadline = Instant::now() + delay;
                    match next_start.as_mut().as_pin_mut() {
                        Some(timer) => timer.reset(deadline),
                        None => next_start.set(Some(tokio::time::sleep_until(deadline))),
                    }
                }
            }

            let mut i = 0;
            while i < in_flight.len() {
                match in_flight[i].as_mut().poll(cx) {
                    // Returning ends `race`, whose `in_flight` drops the losers.
                    Poll::Ready(Ok(won)) => return Poll::Ready(Ok(won)),
                    Poll::Ready(Err(error)) => {
                        last_error = Some(error);
                        drop(in_flight.swap_remove(i));
                    }
                    Poll::Pending => i += 1,
                }
            }

            if in_flight.is_empty() {
                // Every attempt failed: the next one starts now, not when the timer fires.
                continue;
            }
            if !waiting.is_empty() && timer_fired(next_start.as_mut(), cx) {
                continue;
            }
            // Every attempt in flight, and the timer when more addresses wait, has registered
            // this task's waker.
            return Poll::Pending;
        }
    })
    .await
}

/// Polls the start timer, if there is one; registers the task's waker when it has not fired.
fn timer_fired(timer: Pin<&mut Option<Sleep>>, cx: &mut Context<'_>) -> bool {
    timer
        .as_pin_mut()
        .is_some_and(|timer| timer.poll(cx).is_ready())
}

/// The error for a race that had nothing to race; the connector rejects empty resolutions
/// before dialing, so this only guards the invariant.
fn no_addresses() -> ConnectError {
    ConnectError::connect(io::Error::new(
        io::ErrorKind::InvalidInput,
        "no addresses to connect to",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    const DELAY: Duration = Duration::from_millis(250);

    fn addr(n: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, n], 443))
    }

    fn v6(n: u16) -> SocketAddr {
        SocketAddr::from(([0xfd00, 0, 0, 0, 0, 0, 0, n], 443))
    }

    fn refused(addr: SocketAddr) -> ConnectError {
        ConnectError::connect(io::Error::from(io::ErrorKind::ConnectionRefused)).with_addr(addr)
    }

    /// What the fake attempt for an address does, after `after` of (paused) time.
    #[derive(Clone, Copy)]
    enum Outcome {
        Succeed(Duration),
        Fail(Duration),
        Hang,
    }

    /// Records when each attempt started, how many ran at once, and which were dropped.
    #[derive(Default)]
    struct Log {
        starts: Mutex<Vec<(SocketAddr, Instant)>>,
        running: AtomicUsize,
        max_running: AtomicUsize,
        dropped_unfinished: Mutex<Vec<SocketAddr>>,
    }

    /// Decrements `running` when the attempt ends, and notes attempts dropped before finishing.
    struct Attempt {
        addr: SocketAddr,
        log: Arc<Log>,
        finished: bool,
    }

    impl Drop for Attempt {
        fn drop(&mut self) {
            self.log.running.fetch_sub(1, Ordering::SeqCst);
            if !self.finished {
                self.log.dropped_unfinished.lock().unwrap().push(self.addr);
            }
        }
    }

    async fn run_race(
        plan: &[(SocketAddr, Outcome)],
        delay: Option<Duration>,
    ) -> (Result<SocketAddr, ConnectError>, Arc<Log>) {
        let log = Arc::new(Log::default());
        let addrs = plan.iter().map(|(a, _)| *a).collect();
        let result = race(addrs, delay, |addr| {
            let outcome = plan.iter().find(|(a, _)| *a == addr).unwrap().1;
            log.starts.lock().unwrap().push((addr, Instant::now()));
            let running = log.running.fetch_add(1, Ordering::SeqCst) + 1;
            log.max_running.fetch_max(running, Ordering::SeqCst);
            let guard = Attempt {
                addr,
                log: log.clone(),
                finished: false,
            };
            async move {
                // Move the whole guard in, so it is dropped with the attempt.
                let mut guard = guard;
                let result = match outcome {
                    Outcome::Succeed(after) => {
                        tokio::time::sleep(after).await;
                        Ok(addr)
                    }
                    Outcome::Fail(after) => {
                        tokio::time::sleep(after).await;
                        Err(refused(addr))
                    }
                    Outcome::Hang => std::future::pending().await,
                };
                guard.finished = true;
                result
            }
        })
        .await;
        (result, log)
    }

    fn start_offsets(log: &Log, t0: Instant) -> Vec<(SocketAddr, Duration)> {
        log.starts
            .lock()
            .unwrap()
            .iter()
            .map(|(a, t)| (*a, *t - t0))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn hanging_first_attempt_starts_second_after_exactly_the_delay_and_it_wins() {
        let t0 = Instant::now();
        let plan = [
            (addr(1), Outcome::Hang),
            (addr(2), Outcome::Succeed(Duration::ZERO)),
        ];
        let (result, log) = run_race(&plan, Some(DELAY)).await;

        assert_eq!(result.unwrap(), addr(2));
        assert_eq!(
            start_offsets(&log, t0),
            vec![(addr(1), Duration::ZERO), (addr(2), DELAY)]
        );
        // The loser was cancelled, not left running.
        assert_eq!(*log.dropped_unfinished.lock().unwrap(), vec![addr(1)]);
        assert_eq!(log.running.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn fast_failure_starts_the_next_attempt_immediately() {
        let t0 = Instant::now();
        let fail_after = Duration::from_millis(10);
        let plan = [
            (addr(1), Outcome::Fail(fail_after)),
            (addr(2), Outcome::Succeed(fail_after)),
        ];
        let (result, log) = run_race(&plan, Some(DELAY)).await;

        assert_eq!(result.unwrap(), addr(2));
        assert_eq!(
            start_offsets(&log, t0),
            vec![(addr(1), Duration::ZERO), (addr(2), fail_after)]
        );
        assert_eq!(Instant::now() - t0, 2 * fail_after);
    }

    #[tokio::test(start_paused = true)]
    async fn all_failing_returns_the_last_error_with_its_address() {
        // addr(1) fails last in time although addr(3) is last in order: addr(2) starts at
        // 250ms and fails at 260ms, addr(3) starts at 500ms and fails at 510ms, addr(1) fails
        // at 600ms.
        let t0 = Instant::now();
        let ten = Duration::from_millis(10);
        let plan = [
            (addr(1), Outcome::Fail(Duration::from_millis(600))),
            (addr(2), Outcome::Fail(ten)),
            (addr(3), Outcome::Fail(ten)),
        ];
        let (result, log) = run_race(&plan, Some(DELAY)).await;

        let err = result.unwrap_err();
        assert!(err.is_connect());
        assert_eq!(err.addr(), Some(addr(1)));
        assert_eq!(
            start_offsets(&log, t0),
            vec![
                (addr(1), Duration::ZERO),
                (addr(2), DELAY),
                (addr(3), 2 * DELAY)
            ]
        );
        assert_eq!(Instant::now() - t0, Duration::from_millis(600));
    }

    #[tokio::test(start_paused = true)]
    async fn all_failing_immediately_tries_each_in_order_and_reports_the_last() {
        let plan = [
            (addr(1), Outcome::Fail(Duration::ZERO)),
            (addr(2), Outcome::Fail(Duration::ZERO)),
            (addr(3), Outcome::Fail(Duration::ZERO)),
        ];
        let (result, log) = run_race(&plan, Some(DELAY)).await;

        assert_eq!(result.unwrap_err().addr(), Some(addr(3)));
        let order: Vec<_> = log.starts.lock().unwrap().iter().map(|(a, _)| *a).collect();
        assert_eq!(order, vec![addr(1), addr(2), addr(3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_delay_is_strictly_sequential() {
        for delay in [None, Some(Duration::ZERO)] {
            let t0 = Instant::now();
            let second = Duration::from_secs(1);
            let plan = [
                (addr(1), Outcome::Fail(second)),
                (addr(2), Outcome::Fail(second)),
                (addr(3), Outcome::Succeed(Duration::ZERO)),
            ];
            let (result, log) = run_race(&plan, delay).await;

            assert_eq!(result.unwrap(), addr(3));
            assert_eq!(log.max_running.load(Ordering::SeqCst), 1, "delay {delay:?}");
            assert_eq!(
                start_offsets(&log, t0),
                vec![
                    (addr(1), Duration::ZERO),
                    (addr(2), second),
                    (addr(3), 2 * second)
                ]
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn empty_address_list_is_a_connect_error() {
        let result: Result<(), _> = race(Vec::new(), Some(DELAY), |_| async {
            unreachable!("no address to dial")
        })
        .await;
        assert!(result.unwrap_err().is_connect());
    }

    #[test]
    fn interleave_alternates_families_starting_with_the_first() {
        let ordered = interleave(vec![v6(1), v6(2), v6(3), addr(1), addr(2)]);
        assert_eq!(ordered, vec![v6(1), addr(1), v6(2), addr(2), v6(3)]);

        let ordered = interleave(vec![addr(1), v6(1), v6(2), addr(2)]);
        assert_eq!(ordered, vec![addr(1), v6(1), addr(2), v6(2)]);

        assert_eq!(interleave(vec![addr(2), addr(1)]), vec![addr(2), addr(1)]);
        assert_eq!(interleave(Vec::new()), Vec::new());
    }
}
