//! A sweep's progress on stderr: an indicatif bar with its ETA on a terminal, plain lines
//! otherwise (a log, a CI job, a cluster's output file), one at every tenth of the points.

use super::point::Status;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub struct Progress {
    total: u64,
    done: u64,
    findings: u64,
    errors: u64,
    start: Instant,
    /// `None`: plain lines.
    bar: Option<indicatif::ProgressBar>,
    /// The results are written to the bar's terminal.
    shares_terminal: bool,
}

impl Progress {
    /// Progress over `total` points: a bar when stderr is a terminal. `to_stdout`: the results
    /// go to stdout, which may be the same terminal.
    pub fn new(total: u64, to_stdout: bool) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} points  ETA {eta}  {msg}",
                )
                .expect("the template is valid"),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            total,
            done: 0,
            findings: 0,
            errors: 0,
            start: Instant::now(),
            bar,
            shares_terminal: to_stdout && std::io::stdout().is_terminal(),
        }
    }

    /// Runs `write` with the bar cleared and redraws it after: what `write` prints to a
    /// terminal (the rows, when stdout is the bar's terminal too) then does not tear the bar.
    pub fn suspend<R>(&self, write: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) if self.shares_terminal => bar.suspend(write),
            _ => write(),
        }
    }

    pub fn point_done(&mut self, status: Status) {
        self.done += 1;
        match status {
            Status::Ok => {}
            Status::Finding => self.findings += 1,
            Status::Error => self.errors += 1,
        }
        match &self.bar {
            Some(bar) => {
                let rate = self.done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
                bar.set_message(format!(
                    "{rate:.1} points/s, {} finding, {} error",
                    self.findings, self.errors
                ));
                bar.inc(1);
            }
            None => {
                // a line at every tenth of the points (each point of a sweep of 10 or fewer)
                if self.done * 10 / self.total != (self.done - 1) * 10 / self.total {
                    err_line!("{}", self.line());
                }
            }
        }
    }

    /// `sweep: D/T points (P %), F finding, E error, S s, ETA R s`.
    fn line(&self) -> String {
        let elapsed = self.start.elapsed().as_secs_f64();
        let left = self.total - self.done;
        let eta = if self.done == 0 {
            String::new()
        } else {
            format!(", ETA {:.0} s", elapsed / self.done as f64 * left as f64)
        };
        format!(
            "sweep: {}/{} points ({} %), {} finding, {} error, {elapsed:.1} s{eta}",
            self.done,
            self.total,
            self.done * 100 / self.total.max(1),
            self.findings,
            self.errors
        )
    }

    /// Clears the bar and prints the closing line: the points, the time, the statuses.
    pub fn finish(self, jobs: usize) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        err_line!(
            "sweep: {} point{} in {elapsed:.1} s on {jobs} worker{}: {} ok, {} finding, {} error",
            self.done,
            if self.done == 1 { "" } else { "s" },
            if jobs == 1 { "" } else { "s" },
            self.done - self.findings - self.errors,
            self.findings,
            self.errors
        );
    }
}
