//! Runs a shard's points on N workers and writes their records in index order.
//!
//! Workers (scoped threads) take point indices from a crossbeam channel, run each point and
//! render its record (the CSV row or JSON line) themselves, so the main thread only puts the
//! records in order and writes them: each is written as soon as every point before it is.
//! The main thread hands out at most [`window`] points beyond the first unwritten one, so a
//! slow point holds back a bounded number of finished records, not the whole sweep.

use super::point::{self, Shared, Status};
use super::progress::Progress;
use super::shard::Shard;
use super::{table, Inputs};
use crate::cli::SweepFormat;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Points handed out beyond the first one not yet written.
fn window(jobs: usize) -> u64 {
    (jobs as u64) * 16 + 64
}

/// Why the records stopped before the last point.
#[derive(Debug)]
pub struct WriteFailed(pub std::io::Error);

/// Runs the points of `shard` on `jobs` workers, writing each record to `out` in index order
/// and telling `progress` of each. A failed write stops the workers after their current
/// point.
pub fn run(
    inputs: &Inputs,
    shared: &Shared,
    shard: Shard,
    jobs: usize,
    format: SweepFormat,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<(), WriteFailed> {
    let count = shard.count(inputs.grid.points);
    let jobs = jobs.clamp(1, count.max(1) as usize);
    let (job_tx, job_rx) = crossbeam::channel::unbounded::<(u64, u64)>();
    let (done_tx, done_rx) = crossbeam::channel::unbounded::<(u64, Status, Vec<u8>)>();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (job_rx, done_tx, stop) = (job_rx.clone(), done_tx.clone(), &stop);
            scope.spawn(move || {
                for (seq, index) in job_rx {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let point = inputs.grid.point(index);
                    let outcome = point::run(inputs, shared, &point);
                    let record = match format {
                        SweepFormat::Csv => {
                            table::csv_record(&table::cells(inputs, &point, &outcome))
                        }
                        SweepFormat::Jsonl => table::json_line(inputs, &point, &outcome),
                    };
                    if done_tx.send((seq, outcome.status, record)).is_err() {
                        break;
                    }
                }
            });
        }
        drop((job_rx, done_tx));
        let mut indices = shard.indices(inputs.grid.points);
        let (mut sent, mut written) = (0u64, 0u64);
        // the records after the first unwritten one, by their position past it
        let mut waiting: VecDeque<Option<(Status, Vec<u8>)>> = VecDeque::new();
        let result = loop {
            while sent < count && sent < written + window(jobs) {
                let index = indices.next().expect("the shard has `count` points");
                job_tx
                    .send((sent, index))
                    .expect("the workers wait for work");
                sent += 1;
            }
            if written == count {
                break Ok(());
            }
            let (seq, status, record) = done_rx.recv().expect("a worker answers every point");
            let at = (seq - written) as usize;
            if waiting.len() <= at {
                waiting.resize(at + 1, None);
            }
            waiting[at] = Some((status, record));
            let mut failed = None;
            while let Some(Some(_)) = waiting.front() {
                let (status, record) = waiting.pop_front().flatten().expect("just seen");
                if let Err(e) = progress.suspend(|| out.write_all(&record)) {
                    failed = Some(e);
                    break;
                }
                written += 1;
                progress.point_done(status);
            }
            if let Some(e) = failed.or_else(|| out.flush().err()) {
                break Err(WriteFailed(e));
            }
        };
        stop.store(true, Ordering::Relaxed);
        drop(job_tx);
        result
    })
}
