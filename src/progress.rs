//! The progress of a command that runs many things (a sweep's points, a calibration's cases) on
//! stderr: an indicatif bar with its ETA on a terminal, plain lines otherwise (a log, a CI job, a
//! cluster's output file), one at every tenth of the work.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How one thing ended, as the progress counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    Ok,
    Finding,
    Error,
}

pub struct Progress {
    /// What is running, the lines' prefix: `sweep`.
    label: &'static str,
    /// What is counted, singular: `point`.
    unit: &'static str,
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

/// `1 point`, `2 points`.
fn counted(n: u64, unit: &str) -> String {
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

impl Progress {
    /// Progress of `label` over `total` `unit`s: a bar when stderr is a terminal. `to_stdout`:
    /// the results go to stdout, which may be the same terminal.
    pub fn new(label: &'static str, unit: &'static str, total: u64, to_stdout: bool) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {unit}s  ETA {{eta}}  {{msg}}"
                ))
                .expect("the template is valid"),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            label,
            unit,
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

    pub fn done(&mut self, tally: Tally) {
        self.done += 1;
        match tally {
            Tally::Ok => {}
            Tally::Finding => self.findings += 1,
            Tally::Error => self.errors += 1,
        }
        match &self.bar {
            Some(bar) => {
                let rate = self.done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
                bar.set_message(format!(
                    "{rate:.1} {}s/s, {} finding, {} error",
                    self.unit, self.findings, self.errors
                ));
                bar.inc(1);
            }
            None => {
                // a line at every tenth of the work (each thing of 10 or fewer)
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
            "{}: {}/{} {}s ({} %), {} finding, {} error, {elapsed:.1} s{eta}",
            self.label,
            self.done,
            self.total,
            self.unit,
            self.done * 100 / self.total.max(1),
            self.findings,
            self.errors
        )
    }

    /// Clears the bar and prints the closing line: the things done, the time, the statuses.
    pub fn finish(self, jobs: usize) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        err_line!(
            "{}: {} in {elapsed:.1} s on {}: {} ok, {} finding, {} error",
            self.label,
            counted(self.done, self.unit),
            counted(jobs as u64, "worker"),
            self.done - self.findings - self.errors,
            self.findings,
            self.errors
        );
    }
}
