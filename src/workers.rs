//! Work on N threads with its results taken in order: a sweep's points, a calibration's cases.
//!
//! Workers (scoped threads) take indices from a crossbeam channel and run `work` on each, so the
//! calling thread only puts the results back in index order and hands each to the [`Sink`] as
//! soon as every result before it has been. The caller hands out at most [`window`] indices
//! beyond the first result not yet taken, so a slow item holds back a bounded number of
//! finished results, not the whole run.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `work`, turning a panic in it (an npusim bug) into the message an item's failure
/// carries, so one broken item does not end the whole run.
pub fn guarded<R>(work: impl FnOnce() -> R, failed: impl FnOnce(String) -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        failed(format!(
            "internal: npusim panicked (a bug; please report it): {what}"
        ))
    })
}

/// Indices handed out beyond the first one whose result was not taken yet.
fn window(jobs: usize) -> u64 {
    (jobs as u64) * 16 + 64
}

/// Where the results go, in index order.
pub trait Sink<R> {
    type Error;
    /// The next result in index order. An error stops the run: the workers stop after their
    /// current item and [`in_order`] returns it.
    fn take(&mut self, result: R) -> Result<(), Self::Error>;
    /// Every result that has arrived so far was taken (a writer flushes here).
    fn caught_up(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Runs `work` on each of the `count` indices `indices` yields, on `jobs` workers, and hands
/// the results to `sink` in the order of `indices`.
pub fn in_order<R: Send, S: Sink<R>>(
    count: u64,
    mut indices: impl Iterator<Item = u64>,
    jobs: usize,
    work: impl Fn(u64) -> R + Sync,
    sink: &mut S,
) -> Result<(), S::Error> {
    let jobs = jobs.clamp(1, count.max(1) as usize);
    let (job_tx, job_rx) = crossbeam::channel::unbounded::<(u64, u64)>();
    let (done_tx, done_rx) = crossbeam::channel::unbounded::<(u64, R)>();
    let stop = AtomicBool::new(false);
    let work = &work;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (job_rx, done_tx, stop) = (job_rx.clone(), done_tx.clone(), &stop);
            scope.spawn(move || {
                for (seq, index) in job_rx {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if done_tx.send((seq, work(index))).is_err() {
                        break;
                    }
                }
            });
        }
        drop((job_rx, done_tx));
        let (mut sent, mut taken) = (0u64, 0u64);
        // the results after the first one not taken, by their position past it
        let mut waiting: VecDeque<Option<R>> = VecDeque::new();
        let result = loop {
            while sent < count && sent < taken + window(jobs) {
                let index = indices.next().expect("`indices` yields `count` indices");
                job_tx
                    .send((sent, index))
                    .expect("the workers wait for work");
                sent += 1;
            }
            if taken == count {
                break Ok(());
            }
            let (seq, result) = done_rx.recv().expect("a worker answers every index");
            let at = (seq - taken) as usize;
            if waiting.len() <= at {
                waiting.resize_with(at + 1, || None);
            }
            waiting[at] = Some(result);
            let mut failed = None;
            while let Some(Some(_)) = waiting.front() {
                let result = waiting.pop_front().flatten().expect("just seen");
                if let Err(e) = sink.take(result) {
                    failed = Some(e);
                    break;
                }
                taken += 1;
            }
            if let Some(e) = failed {
                break Err(e);
            }
            if let Err(e) = sink.caught_up() {
                break Err(e);
            }
        };
        stop.store(true, Ordering::Relaxed);
        drop(job_tx);
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<u64>);

    impl Sink<u64> for Collect {
        type Error = u64;
        fn take(&mut self, r: u64) -> Result<(), u64> {
            if r == 1_000 {
                return Err(r);
            }
            self.0.push(r);
            Ok(())
        }
    }

    #[test]
    fn results_come_in_the_order_of_the_indices() {
        for jobs in [1, 2, 7] {
            let mut sink = Collect(Vec::new());
            // later indices finish first: the sink still sees them in order
            in_order(
                50,
                (0..50).rev(),
                jobs,
                |i| {
                    std::thread::sleep(std::time::Duration::from_micros(50 - i));
                    i * 2
                },
                &mut sink,
            )
            .unwrap();
            let want: Vec<u64> = (0..50).rev().map(|i| i * 2).collect();
            assert_eq!(sink.0, want, "{jobs} jobs");
        }
    }

    #[test]
    fn a_sink_error_stops_the_run() {
        let mut sink = Collect(Vec::new());
        let e = in_order(2_000, 0..2_000, 2, |i| i, &mut sink).unwrap_err();
        assert_eq!(e, 1_000);
        assert_eq!(sink.0.len(), 1_000);
    }
}
