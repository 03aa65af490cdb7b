//! Runs a shard's points on N workers ([`crate::workers`]) and writes their records in index
//! order.
//!
//! Each worker runs its point and renders its record (the CSV row or JSON line) itself, so the
//! main thread only writes the records: each as soon as every point before it is.

use super::merge::PartDigest;
use super::point::{self, Shared, Status};
use super::shard::Shard;
use super::{table, Inputs};
use crate::cli::SweepFormat;
use crate::progress::Progress;
use crate::workers::{self, Sink};
use std::io::Write;

/// Why the records stopped before the last point.
#[derive(Debug)]
pub struct WriteFailed(pub std::io::Error);

/// Writes each record, adds it to the part's digest, and tells the progress of it.
struct Records<'a> {
    out: &'a mut dyn Write,
    digest: Option<&'a mut PartDigest>,
    progress: &'a mut Progress,
}

impl Sink<(Status, Vec<u8>)> for Records<'_> {
    type Error = WriteFailed;

    fn take(&mut self, (status, record): (Status, Vec<u8>)) -> Result<(), WriteFailed> {
        let out = &mut self.out;
        self.progress
            .suspend(|| out.write_all(&record))
            .map_err(WriteFailed)?;
        if let Some(d) = self.digest.as_deref_mut() {
            d.add(&record);
        }
        self.progress.done(status.tally());
        Ok(())
    }

    fn caught_up(&mut self) -> Result<(), WriteFailed> {
        self.out.flush().map_err(WriteFailed)
    }
}

/// Runs the points of `shard` on `jobs` workers, writing each record to `out` in index order,
/// adding it to `digest` (a part's) and telling `progress` of each. A failed write stops the workers after their current
/// point.
#[allow(clippy::too_many_arguments)]
pub fn run(
    inputs: &Inputs,
    shared: &Shared,
    shard: Shard,
    jobs: usize,
    format: SweepFormat,
    out: &mut dyn Write,
    digest: Option<&mut PartDigest>,
    progress: &mut Progress,
) -> Result<(), WriteFailed> {
    let count = shard.count(inputs.grid.points);
    let render = |index: u64| {
        let point = inputs.grid.point(index);
        let outcome = point::run(inputs, shared, &point);
        let record = match format {
            SweepFormat::Csv => table::csv_record(&table::cells(inputs, &point, &outcome)),
            SweepFormat::Jsonl => table::json_line(inputs, &point, &outcome),
        };
        (outcome.status, record)
    };
    workers::in_order(
        count,
        shard.indices(inputs.grid.points),
        jobs,
        render,
        &mut Records {
            out,
            digest,
            progress,
        },
    )
}
