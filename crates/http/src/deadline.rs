//! An exchange's deadline whose timer is armed once and then only read.
//!
//! `tokio::time::timeout_at` polls its `Sleep` every time the exchange's task is
//! woken: a coop-budget check, the timer entry's state and its waker registered
//! again. A streamed answer wakes the task once per piece of the body (an LLM's
//! every token), and that re-registration showed in the CPU per token. Here the
//! timer is polled (armed, its waker registered) on the first poll and again only
//! when the task's waker is not the one registered; on every other wake-up the
//! deadline is read from the timer's state (one atomic load): a timer that fired
//! has woken the task and says so.

use std::future::Future;
use std::pin::pin;
use std::task::{Poll, Waker};
use std::time::Instant;

/// The deadline passed before the future completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("deadline elapsed")]
pub struct Elapsed;

/// `fut` until `deadline`: its output, or [`Elapsed`] when the deadline passes
/// first. What `tokio::time::timeout_at` answers (the future is polled before
/// the deadline is looked at), at one atomic read per wake-up instead of a poll
/// of the timer.
pub async fn within<F: Future>(deadline: Instant, fut: F) -> Result<F::Output, Elapsed> {
    let mut fut = pin!(fut);
    let mut sleep = pin!(tokio::time::sleep_until(deadline.into()));
    // The waker the timer holds (the task's, which stays the same for the
    // task's life as a rule).
    let mut armed: Option<Waker> = None;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if armed.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            // The timer holds this task's waker: it has woken it if it fired.
            return if sleep.is_elapsed() {
                Poll::Ready(Err(Elapsed))
            } else {
                Poll::Pending
            };
        }
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => {
                armed = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A future that is woken many times (a stream's pieces) and never ends
    /// meets its deadline: the timer armed on the first poll fires though every
    /// later poll only reads it.
    #[test]
    fn a_future_woken_again_and_again_meets_its_deadline() {
        let rt = rt();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let start = Instant::now();
        let got = rt.block_on(async move {
            let feeder = tokio::spawn(async move {
                // A wake-up every millisecond, for longer than the deadline.
                for _ in 0..2_000 {
                    if tx.send(()).is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
            let mut pieces = 0u32;
            let out = within(start + Duration::from_millis(60), async {
                while rx.recv().await.is_some() {
                    pieces += 1;
                }
            })
            .await;
            feeder.abort();
            (out, pieces)
        });
        let waited = start.elapsed();
        assert_eq!(got.0, Err(Elapsed));
        assert!(
            got.1 >= 5,
            "the future was woken and polled: {} pieces",
            got.1
        );
        assert!(
            waited >= Duration::from_millis(60) && waited < Duration::from_millis(1_000),
            "the deadline ended it: {waited:?}"
        );
    }

    /// A future that completes before its deadline gives its output; a deadline
    /// already past still lets a ready future answer (it is polled first).
    #[test]
    fn a_future_done_in_time_gives_its_output() {
        let rt = rt();
        let soon = rt.block_on(within(Instant::now() + Duration::from_secs(5), async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            7
        }));
        assert_eq!(soon, Ok(7));
        let past = rt.block_on(within(Instant::now() - Duration::from_millis(1), async {
            8
        }));
        assert_eq!(past, Ok(8));
        let pending_past = rt.block_on(within(
            Instant::now() - Duration::from_millis(1),
            std::future::pending::<()>(),
        ));
        assert_eq!(pending_past, Err(Elapsed));
    }

    /// A future that never wakes its task ends at its deadline too (the timer's
    /// own wake-up).
    #[test]
    fn a_silent_future_ends_at_its_deadline() {
        let rt = rt();
        let start = Instant::now();
        let out = rt.block_on(within(
            start + Duration::from_millis(30),
            std::future::pending::<()>(),
        ));
        assert_eq!(out, Err(Elapsed));
        assert!(start.elapsed() >= Duration::from_millis(30));
    }
}
