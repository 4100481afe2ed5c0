//! A borrowed future run to its end by a task of its own on the current `LocalSet`.
//!
//! A streamed answer (an LLM's tokens over Server-Sent Events) wakes its reader once
//! per piece of the body. Read inside the VU's task, every wake-up resumes the VU's
//! whole chain of futures (the run, the iteration, the step, the exchange and its
//! deadline) down to the read: a state load from the VU's future per level, each a
//! cache miss when a thousand streams share a core. Read by a task of its own, a
//! piece wakes only that small task; the VU's task is woken when the body ends (or
//! by its own timers: a deadline that passes drops the reader with it).
//!
//! The reader borrows the exchange's state (the connection, the parser, the
//! handler), so it is not `'static` as `spawn_local` wants. It is kept in a slot
//! shared with the task, and the guard awaiting the task empties the slot (drops
//! the reader) when it is dropped: the reader is never polled, nor dropped, after
//! the frame it borrows from.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// The reader as the task sees it: taken out (dropped) by the guard.
type Slot<'a, T> = Rc<RefCell<Option<Pin<Box<dyn Future<Output = T> + 'a>>>>>;

/// `fut`'s output, `fut` polled by a task of its own (`tokio::task::spawn_local`:
/// call it only inside a `LocalSet`). A panic in `fut` is raised here; dropping the
/// returned future drops `fut` at once, before anything `fut` borrows.
///
/// Private to the crate on purpose: it relies on its caller's future being dropped
/// (or run to its end) rather than leaked with `mem::forget` while what `fut`
/// borrows is freed, which holds for the exchange's futures (awaited in place, in
/// tasks that the runtime drops).
pub(crate) async fn run<'a, T: 'static>(fut: impl Future<Output = T> + 'a) -> T {
    let slot: Slot<'a, T> = Rc::new(RefCell::new(Some(Box::pin(fut))));
    // SAFETY: only the lifetime changes (the two types have one layout). The task
    // polls the reader only while it is in the slot, and `Guard::drop` takes it out
    // (dropping it) when this function's future ends or is dropped, which happens
    // before anything borrowed for `'a` is freed: `'a` outlives this future, and
    // this future is dropped in place, never leaked, by the exchange that awaits it
    // (see the function's documentation). Once the slot is empty the task only
    // finds `None` and ends. The slot is an `Rc` (the task is local to this
    // thread), and the task never runs during `Guard::drop`: a `LocalSet` polls one
    // task at a time, and the guard belongs to another one.
    let shared: Slot<'static, T> =
        unsafe { std::mem::transmute::<Slot<'a, T>, Slot<'static, T>>(Rc::clone(&slot)) };
    let task = tokio::task::spawn_local(Reader(shared));
    let mut guard = Guard { slot, task };
    match (&mut guard.task).await {
        Ok(Some(out)) => out,
        // The slot is emptied only by the guard, which is still here.
        Ok(None) => unreachable!("a reader's slot was emptied while it was awaited"),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: only when the runtime shuts down, which drops this
            // future's task too before it is polled again.
            Err(e) => panic!("a stream's reader task was cancelled: {e}"),
        },
    }
}

/// The task's future: polls the reader in the slot; `None` once it was taken.
struct Reader<T: 'static>(Slot<'static, T>);

impl<T: 'static> Future for Reader<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.0.borrow_mut();
        let Some(fut) = slot.as_mut() else {
            return Poll::Ready(None);
        };
        match fut.as_mut().poll(cx) {
            Poll::Ready(out) => {
                // Done: the reader (and its borrows) goes now, not with the guard.
                *slot = None;
                Poll::Ready(Some(out))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Owns the slot on the caller's side: dropping it drops the reader.
struct Guard<'a, T: 'static> {
    slot: Slot<'a, T>,
    task: tokio::task::JoinHandle<Option<T>>,
}

impl<T: 'static> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        // Out of the slot first, then dropped: a reader whose drop looked at the
        // slot would find it empty, not borrowed.
        let reader = self.slot.borrow_mut().take();
        drop(reader);
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;

    fn local<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    /// Counts the polls of the future it wraps.
    struct Polls<'c, F> {
        fut: Pin<Box<F>>,
        count: &'c Cell<u32>,
    }

    impl<F: Future> Future for Polls<'_, F> {
        type Output = F::Output;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.count.set(self.count.get() + 1);
            self.fut.as_mut().poll(cx)
        }
    }

    /// Sets its flag when dropped.
    struct DropFlag<'c>(&'c Cell<bool>);

    impl Drop for DropFlag<'_> {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    /// A reader woken a hundred times (a stream's pieces) answers with what it
    /// read from borrowed state, and the caller's task is polled a handful of
    /// times, not once per piece: the pieces wake the reader's own task.
    #[test]
    fn a_reader_woken_per_piece_does_not_wake_its_caller_per_piece() {
        let (sum, outer, inner) = local(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            tokio::task::spawn_local(async move {
                for i in 0..100 {
                    tx.send(i).unwrap();
                    tokio::task::yield_now().await;
                }
            });
            // The caller as a VU is: a task of its own (the block_on's future is
            // polled whenever any task of the set is woken).
            let caller = tokio::task::spawn_local(async move {
                let outer_polls = Cell::new(0);
                let inner_polls = Cell::new(0);
                let mut sum = 0u32; // borrowed by the reader
                let reader = async {
                    while let Some(i) = rx.recv().await {
                        sum += i;
                    }
                };
                let counted = Polls {
                    fut: Box::pin(reader),
                    count: &inner_polls,
                };
                Polls {
                    fut: Box::pin(run(counted)),
                    count: &outer_polls,
                }
                .await;
                (sum, outer_polls.get(), inner_polls.get())
            });
            caller.await.unwrap()
        });
        assert_eq!(sum, (0..100).sum::<u32>());
        assert!(inner >= 100, "{inner} polls of the reader");
        assert!(outer <= 3, "{outer} polls of the caller");
    }

    /// The caller dropped while the reader waits (a deadline passed): the reader is
    /// dropped at once, with the caller, not later by its task.
    #[test]
    fn dropping_the_caller_drops_the_reader_at_once() {
        let dropped = Cell::new(false);
        local(async {
            let reader = async {
                let _flag = DropFlag(&dropped);
                std::future::pending::<()>().await;
            };
            let timed = tokio::time::timeout(Duration::from_millis(20), run(reader)).await;
            assert!(timed.is_err(), "the reader never ends");
            assert!(dropped.get(), "dropped with its caller");
            // Its task, polled again, finds nothing and ends.
            tokio::task::yield_now().await;
        });
        assert!(dropped.get());
    }

    /// A panic in the reader is raised in its caller, as if it had run there.
    #[test]
    fn a_panic_in_the_reader_is_raised_in_its_caller() {
        let caught = std::panic::catch_unwind(|| {
            local(async {
                run(async {
                    tokio::task::yield_now().await;
                    panic!("the reader failed");
                })
                .await
            })
        });
        let panic = caught.expect_err("the panic reaches the caller");
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert_eq!(text, "the reader failed");
    }
}
