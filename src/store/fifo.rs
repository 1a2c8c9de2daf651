//! A fair FIFO of operations on one store, after LevelDB's writer queue.
//!
//! Every operation enters the queue in arrival order and waits until it is at the
//! front; the front operation runs alone, then hands the queue to the next one. The
//! front operation may also take the payloads of operations queued right behind it
//! and finish them in one go (group commit), delivering each its own result. Each
//! waiter sleeps on its own condition variable and is woken only when it reaches the
//! front or its result arrives: no thundering herd, no starvation.

use std::collections::VecDeque;
use std::sync::PoisonError;

// Under `--cfg loom` (or `--cfg shuttle`) the FIFO runs on that checker's primitives,
// so that its model tests can explore interleavings (`loom_model`, `shuttle_model`).
#[cfg(loom)]
use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(all(shuttle, not(loom)))]
use shuttle::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::Arc;
#[cfg(not(any(loom, shuttle)))]
use std::sync::{Condvar, Mutex, MutexGuard};

/// What a waiting operation receives from the operation that ran it.
pub(crate) enum Delivered<R> {
    Result(R),
    /// The front operation panicked before finishing this one.
    Abandoned,
}

/// How an operation's wait ended.
pub(crate) enum Entered<'f, T, R> {
    /// An earlier operation ran this one as part of its group.
    Done(Delivered<R>),
    /// This operation is at the front; it runs now, with its payload.
    Turn(Turn<'f, T, R>, T),
}

pub(crate) struct Fifo<T, R> {
    queue: Mutex<Queue<T, R>>,
}

struct Queue<T, R> {
    next_ticket: u64,
    slots: VecDeque<Slot<T, R>>,
}

struct Slot<T, R> {
    ticket: u64,
    /// `None` for an operation that found the queue empty: it never waits, and nothing
    /// is delivered to it, so the uncontended path allocates nothing.
    waiter: Option<Arc<Waiter<R>>>,
    /// `None` once the operation is running or was taken by the front operation.
    payload: Option<T>,
}

struct Waiter<R> {
    wake: Condvar,
    delivered: Mutex<Option<Delivered<R>>>,
}

/// The queue's bookkeeping stays consistent across a panic (no code that can panic
/// runs while it is half-updated), so a poisoned lock is safe to keep using.
fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T, R> Fifo<T, R> {
    pub(crate) fn new() -> Fifo<T, R> {
        Fifo {
            queue: Mutex::new(Queue {
                next_ticket: 0,
                slots: VecDeque::new(),
            }),
        }
    }

    /// Enters the queue and waits for this operation's turn (or for an earlier
    /// operation to have run it).
    pub(crate) fn enter(&self, payload: T) -> Entered<'_, T, R> {
        let mut queue = lock(&self.queue);
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        if queue.slots.is_empty() {
            queue.slots.push_back(Slot {
                ticket,
                waiter: None,
                payload: None,
            });
            let turn = Turn {
                fifo: self,
                taken: 0,
                released: false,
            };
            return Entered::Turn(turn, payload);
        }
        let waiter = Arc::new(Waiter {
            wake: Condvar::new(),
            delivered: Mutex::new(None),
        });
        queue.slots.push_back(Slot {
            ticket,
            waiter: Some(Arc::clone(&waiter)),
            payload: Some(payload),
        });
        loop {
            if let Some(delivered) = lock(&waiter.delivered).take() {
                return Entered::Done(delivered);
            }
            if let Some(front) = queue.slots.front_mut()
                && front.ticket == ticket
                && let Some(payload) = front.payload.take()
            {
                let turn = Turn {
                    fifo: self,
                    taken: 0,
                    released: false,
                };
                return Entered::Turn(turn, payload);
            }
            queue = waiter
                .wake
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The right to run, held by the operation at the front of the queue. Dropping it
/// (also during a panic) hands the queue to the next operation.
pub(crate) struct Turn<'f, T, R> {
    fifo: &'f Fifo<T, R>,
    /// Operations right behind this one whose payloads this turn has taken.
    taken: usize,
    released: bool,
}

impl<T, R> Turn<'_, T, R> {
    /// Takes, in order, the payloads of up to `max` operations queued right behind
    /// this turn, stopping at the first that `accept` refuses. The turn must then
    /// deliver one result to each, in the same order, with [`Turn::finish`].
    pub(crate) fn take_following(&mut self, max: usize, accept: impl Fn(&T) -> bool) -> Vec<T> {
        let mut queue = lock(&self.fifo.queue);
        let mut taken = Vec::new();
        for slot in queue.slots.iter_mut().skip(1 + self.taken) {
            if taken.len() == max || !slot.payload.as_ref().is_some_and(&accept) {
                break;
            }
            if let Some(payload) = slot.payload.take() {
                taken.push(payload);
            }
        }
        self.taken += taken.len();
        taken
    }

    /// Ends the turn, delivering `results` to the taken operations in order.
    pub(crate) fn finish(mut self, results: Vec<R>) {
        self.release(results.into_iter().map(Delivered::Result));
    }

    fn release(&mut self, outcomes: impl Iterator<Item = Delivered<R>>) {
        self.released = true;
        let mut outcomes = outcomes;
        let mut queue = lock(&self.fifo.queue);
        queue.slots.pop_front();
        for _ in 0..self.taken {
            let Some(slot) = queue.slots.pop_front() else {
                break;
            };
            let outcome = outcomes.next().unwrap_or(Delivered::Abandoned);
            // A taken operation was queued behind this turn, so it has a waiter.
            if let Some(waiter) = &slot.waiter {
                *lock(&waiter.delivered) = Some(outcome);
                waiter.wake.notify_one();
            }
        }
        if let Some(waiter) = queue.slots.front().and_then(|front| front.waiter.as_ref()) {
            waiter.wake.notify_one();
        }
    }
}

impl<T, R> Drop for Turn<'_, T, R> {
    fn drop(&mut self) {
        if !self.released {
            self.release(std::iter::empty());
        }
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread;

    /// Runs `op` through the FIFO; a turn runs only itself.
    fn run_alone(fifo: &Fifo<usize, usize>, op: usize, log: &Mutex<Vec<usize>>) -> usize {
        match fifo.enter(op) {
            Entered::Turn(turn, payload) => {
                lock(log).push(payload);
                turn.finish(Vec::new());
                payload
            }
            Entered::Done(_) => panic!("nobody takes payloads here"),
        }
    }

    #[test]
    fn operations_run_one_at_a_time_in_arrival_order_per_thread() {
        let fifo: Fifo<usize, usize> = Fifo::new();
        let log = Mutex::new(Vec::new());
        let running = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..8 {
                let (fifo, log, running) = (&fifo, &log, &running);
                s.spawn(move || {
                    for i in 0..500 {
                        if let Entered::Turn(turn, op) = fifo.enter(t * 1000 + i) {
                            assert_eq!(
                                running.fetch_add(1, Ordering::SeqCst),
                                0,
                                "two turns at once"
                            );
                            lock(log).push(op);
                            running.fetch_sub(1, Ordering::SeqCst);
                            drop(turn);
                        }
                    }
                });
            }
        });
        let log = log.into_inner().unwrap();
        assert_eq!(log.len(), 4000);
        for t in 0..8 {
            let mine: Vec<usize> = log.iter().copied().filter(|op| op / 1000 == t).collect();
            assert_eq!(mine, (0..500).map(|i| t * 1000 + i).collect::<Vec<_>>());
        }
    }

    #[test]
    fn front_operation_can_finish_the_ones_behind_it() {
        let fifo: Fifo<usize, usize> = Fifo::new();
        let log = Mutex::new(Vec::new());
        // Hold the front so that others queue up behind it.
        let Entered::Turn(mut first, zero) = fifo.enter(0) else {
            panic!()
        };
        thread::scope(|s| {
            let handles: Vec<_> = (1..=3)
                .map(|i| {
                    let fifo = &fifo;
                    let h = s.spawn(move || match fifo.enter(i) {
                        Entered::Done(Delivered::Result(r)) => r,
                        _ => panic!("expected to be run by the front operation"),
                    });
                    // Let each thread enqueue before the next, so arrival order is known.
                    while lock(&fifo.queue).slots.len() < i + 1 {
                        thread::yield_now();
                    }
                    h
                })
                .collect();
            let taken = first.take_following(10, |_| true);
            assert_eq!(taken, [1, 2, 3]);
            lock(&log).push(zero);
            first.finish(taken.iter().map(|x| x * 10).collect());
            let results: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(results, [10, 20, 30]);
        });
        assert_eq!(run_alone(&fifo, 4, &log), 4);
    }

    #[test]
    fn taking_stops_at_an_operation_the_turn_refuses() {
        let fifo: Fifo<usize, usize> = Fifo::new();
        let Entered::Turn(mut first, _) = fifo.enter(0) else {
            panic!()
        };
        thread::scope(|s| {
            for i in 1..=3 {
                let fifo = &fifo;
                s.spawn(move || match fifo.enter(i) {
                    Entered::Done(Delivered::Result(_)) => {}
                    Entered::Turn(turn, _) => drop(turn),
                    Entered::Done(Delivered::Abandoned) => panic!(),
                });
                while lock(&fifo.queue).slots.len() < i + 1 {
                    thread::yield_now();
                }
            }
            assert_eq!(first.take_following(10, |&op| op != 2), [1]);
            first.finish(vec![1]);
        });
    }

    #[test]
    fn a_turn_dropped_by_a_panic_abandons_taken_operations_and_hands_over() {
        let fifo: Fifo<usize, usize> = Fifo::new();
        let Entered::Turn(mut first, _) = fifo.enter(0) else {
            panic!()
        };
        thread::scope(|s| {
            let fifo_ref = &fifo;
            let taken_op =
                s.spawn(move || matches!(fifo_ref.enter(1), Entered::Done(Delivered::Abandoned)));
            while lock(&fifo.queue).slots.len() < 2 {
                thread::yield_now();
            }
            let next_op = s.spawn(move || matches!(fifo_ref.enter(2), Entered::Turn(..)));
            while lock(&fifo.queue).slots.len() < 3 {
                thread::yield_now();
            }
            assert_eq!(first.take_following(1, |_| true), [1]);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _turn = first;
                panic!("injected");
            }));
            assert!(result.is_err());
            assert!(
                taken_op.join().unwrap(),
                "taken operation must be told it was abandoned"
            );
            assert!(
                next_op.join().unwrap(),
                "the next operation must get its turn"
            );
        });
    }
}

/// What the model tests run: operations through the FIFO as `Store::run_appends` does
/// it (a turn takes the operations queued behind it, runs them in order, delivers their
/// results), one of which fails as a write would and taints every later one.
#[cfg(all(test, any(loom, shuttle)))]
mod model {
    use super::*;

    /// The outcome each operation gets: its own number, or the failing one's.
    pub(super) type Outcome = Result<usize, usize>;

    pub(super) fn operate(
        fifo: &Fifo<usize, Outcome>,
        op: usize,
        failing: usize,
        runs: &Mutex<Vec<usize>>,
        taint: &Mutex<Option<usize>>,
    ) -> Outcome {
        match fifo.enter(op) {
            Entered::Done(Delivered::Result(result)) => result,
            Entered::Done(Delivered::Abandoned) => panic!("no turn panics in this model"),
            Entered::Turn(mut turn, first) => {
                let mut group = vec![first];
                group.extend(turn.take_following(8, |_| true));
                let mut results: Vec<Outcome> = Vec::new();
                for op in group {
                    lock(runs).push(op);
                    let mut taint = lock(taint);
                    results.push(match *taint {
                        Some(first_failure) => Err(first_failure),
                        None if op == failing => {
                            *taint = Some(op);
                            Err(op)
                        }
                        None => Ok(op),
                    });
                }
                let own = results.remove(0);
                turn.finish(results);
                own
            }
        }
    }

    /// Each operation ran exactly once, and every operation from the failing one on (in
    /// run order) carries that failure; the ones before it succeeded.
    pub(super) fn check(order: &[usize], results: &[(usize, Outcome)], failing: usize) {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..results.len()).collect::<Vec<_>>(),
            "each ran once"
        );
        let failed_at = order.iter().position(|&op| op == failing).unwrap();
        for &(op, result) in results {
            let at = order.iter().position(|&o| o == op).unwrap();
            let expected = if at < failed_at { Ok(op) } else { Err(failing) };
            assert_eq!(result, expected, "op {op} ran at {at} in {order:?}");
        }
    }
}

/// T9: the FIFO under loom, which runs the model once for every interleaving of its
/// threads (up to `LOOM_MAX_PREEMPTIONS` preemptions) and reports deadlocks and lost
/// wake-ups. Run with:
///
/// ```text
/// RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --lib loom_model
/// ```
#[cfg(all(test, loom))]
mod loom_model {
    use super::model::{check, operate};
    use super::*;
    use loom::thread;

    #[test]
    fn each_operation_completes_once_in_fifo_order_and_later_ones_carry_the_first_failure() {
        const FAILING: usize = 0;
        loom::model(|| {
            let fifo = Arc::new(Fifo::new());
            let runs = Arc::new(Mutex::new(Vec::new()));
            let taint = Arc::new(Mutex::new(None));
            let others: Vec<_> = [1usize, 2]
                .into_iter()
                .map(|op| {
                    let (fifo, runs, taint) =
                        (Arc::clone(&fifo), Arc::clone(&runs), Arc::clone(&taint));
                    thread::spawn(move || (op, operate(&fifo, op, FAILING, &runs, &taint)))
                })
                .collect();
            let mut results = vec![(FAILING, operate(&fifo, FAILING, FAILING, &runs, &taint))];
            results.extend(others.into_iter().map(|h| h.join().unwrap()));
            check(&lock(&runs), &results, FAILING);
        });
    }
}

/// T10: the FIFO under shuttle, with more threads and operations than loom can explore
/// exhaustively: random schedules and PCT (probabilistic concurrency testing, which
/// finds bugs of depth d with known probability). Run with:
///
/// ```text
/// RUSTFLAGS="--cfg shuttle" cargo test --release --lib shuttle_model
/// ```
#[cfg(all(test, shuttle))]
mod shuttle_model {
    use super::model::{check, operate};
    use super::*;
    use shuttle::thread;

    /// `threads` × `per_thread` operations; operation `failing` fails.
    fn scenario(threads: usize, per_thread: usize, failing: usize) {
        let fifo = Arc::new(Fifo::new());
        let runs = Arc::new(Mutex::new(Vec::new()));
        let taint = Arc::new(Mutex::new(None));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (fifo, runs, taint) =
                    (Arc::clone(&fifo), Arc::clone(&runs), Arc::clone(&taint));
                thread::spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            let op = t * per_thread + i;
                            (op, operate(&fifo, op, failing, &runs, &taint))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let results: Vec<_> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        let order = lock(&runs).clone();
        check(&order, &results, failing);
        for t in 0..threads {
            let mine: Vec<usize> = order
                .iter()
                .copied()
                .filter(|op| op / per_thread == t)
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "thread {t} ran out of order: {mine:?}"
            );
        }
    }

    #[test]
    fn random_schedules_of_4_threads_keep_fifo_order_and_the_first_failure() {
        shuttle::check_random(|| scenario(4, 20, 37), 1000);
    }

    #[test]
    fn pct_schedules_of_8_threads_keep_fifo_order_and_the_first_failure() {
        shuttle::check_pct(|| scenario(8, 20, 3), 1000, 3);
    }
}
