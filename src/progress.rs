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

/// The progress of one long simulation (`run`, each level of `compare`): an observer that
/// counts the instructions S issues and, on a terminal, once the run has lasted
/// [`RunProgress::AFTER`], keeps one indicatif line on stderr up to date (simulated cycles,
/// instructions, their rate, the share of `--max-instructions` used). Nothing is made off a
/// terminal ([`RunProgress::on_terminal`] gives `None`), so output that is not a terminal never
/// changes. It costs one add and one compare per instruction: the clock is read every
/// [`RunProgress::EVERY`] instructions, the line redrawn at most every
/// [`RunProgress::REDRAW`]; it needs neither operand slots nor a global event order, so the
/// engine keeps its fast paths.
pub struct RunProgress {
    /// What runs, the line's prefix: `run`, `compare level 1`.
    label: String,
    /// `--max-instructions`.
    max_instructions: u64,
    /// Instructions S issued so far (its own ops included; loop steps and `if`s, which the
    /// limit also counts, are not issued, so the share shown is a lower bound).
    issued: u64,
    /// The latest cycle an instruction was issued at, over every core.
    cycle: u64,
    /// `issued` at which the clock is read next.
    next: u64,
    /// When this run began (the rate's).
    start: Instant,
    /// When the command began (the [`Self::AFTER`] rule's): a `compare`'s levels are shown
    /// once the comparison has lasted that long, each level short as it may be.
    began: Instant,
    last_draw: Option<Instant>,
    /// `None` until the line is first shown.
    bar: Option<indicatif::ProgressBar>,
    /// Whether to draw at all (a terminal); tests read the line without one.
    draw: bool,
}

impl RunProgress {
    /// How long a run goes before its line shows: shorter runs show nothing.
    pub const AFTER: Duration = Duration::from_secs(2);
    /// How many instructions between two looks at the clock.
    pub const EVERY: u64 = 1 << 16;
    /// The least time between two redraws.
    pub const REDRAW: Duration = Duration::from_millis(100);

    /// The progress of `label` when stderr is a terminal, else `None` (the run is watched by
    /// nothing more).
    pub fn on_terminal(label: impl Into<String>, max_instructions: u64) -> Option<RunProgress> {
        std::io::stderr()
            .is_terminal()
            .then(|| RunProgress::new(label.into(), max_instructions, true))
    }

    /// The line shows once [`Self::AFTER`] has passed since `began` (rather than since this
    /// run began).
    pub fn since(mut self, began: Instant) -> RunProgress {
        self.began = began;
        self
    }

    fn new(label: String, max_instructions: u64, draw: bool) -> RunProgress {
        let now = Instant::now();
        RunProgress {
            label,
            max_instructions,
            issued: 0,
            cycle: 0,
            next: Self::EVERY,
            start: now,
            began: now,
            last_draw: None,
            bar: None,
            draw,
        }
    }

    /// `run: 1,234,567 cycles, 8,388,608 instructions in 2.1 s (4.0 M/s), ≥ 0.1 % of
    /// --max-instructions`.
    fn line(&self, now: Instant) -> String {
        let secs = now.duration_since(self.start).as_secs_f64();
        let rate = self.issued as f64 / secs.max(1e-9);
        let share = self.issued as f64 * 100.0 / self.max_instructions.max(1) as f64;
        format!(
            "{}: {} cycles, {} instructions in {secs:.1} s ({}/s), ≥ {share:.1} % of --max-instructions",
            self.label,
            grouped(self.cycle),
            grouped(self.issued),
            si(rate)
        )
    }

    /// Whether the line is due at `now`: the command has lasted [`Self::AFTER`] and the last
    /// draw is [`Self::REDRAW`] old.
    fn due(&self, now: Instant) -> bool {
        now.duration_since(self.began) >= Self::AFTER
            && self
                .last_draw
                .map_or(true, |t| now.duration_since(t) >= Self::REDRAW)
    }

    /// The look at the clock every [`Self::EVERY`] instructions; out of line, so the hot path
    /// stays an add and a compare.
    #[cold]
    #[inline(never)]
    fn tick(&mut self) {
        self.next = self.issued.saturating_add(Self::EVERY);
        let now = Instant::now();
        if !self.due(now) {
            return;
        }
        self.last_draw = Some(now);
        if !self.draw {
            return;
        }
        let line = self.line(now);
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .expect("the template is valid"),
            );
            bar
        });
        bar.set_message(line);
        bar.tick();
    }
}

/// Dropping the progress clears its line: drop it before the run's output is written.
impl Drop for RunProgress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl sim::engine::Observer for RunProgress {
    #[inline(always)]
    fn on_issue(&mut self, issue: &sim::engine::Issue<'_>) {
        self.issued += 1;
        self.cycle = self.cycle.max(issue.cycle);
        if self.issued >= self.next {
            self.tick();
        }
    }

    #[inline(always)]
    fn watches_slots(&self) -> bool {
        false
    }

    #[inline(always)]
    fn ordered(&self) -> bool {
        false
    }
}

/// `8,388,608`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with an SI prefix: `950`, `4.0 k`, `12.5 M`.
fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.1} G", x / 1e9),
        x if x >= 1e6 => format!("{:.1} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k", x / 1e3),
        x => format!("{x:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::engine::Observer;

    #[test]
    fn the_run_line_keeps_the_engine_on_its_fast_paths() {
        let p = RunProgress::new("run".into(), 100, false);
        // a global order would force the slow scheduler on launches; slots cost every send
        assert!(!p.ordered());
        assert!(!p.watches_slots());
        assert!(p.watches_issues());
    }

    #[test]
    fn the_line_shows_after_two_seconds_at_most_ten_times_a_second() {
        let mut p = RunProgress::new("run".into(), 10_000_000, false);
        let t0 = p.start;
        assert!(!p.due(t0 + Duration::from_millis(1999)));
        assert!(p.due(t0 + RunProgress::AFTER));
        p.last_draw = Some(t0 + Duration::from_secs(2));
        assert!(!p.due(t0 + Duration::from_millis(2099)));
        assert!(p.due(t0 + Duration::from_millis(2100)));
        // 4,000,000 instructions in 2 s at cycle 123,456,789: 2.0 M/s, 40 % of 10^7
        p.issued = 4_000_000;
        p.cycle = 123_456_789;
        assert_eq!(
            p.line(t0 + Duration::from_secs(2)),
            "run: 123,456,789 cycles, 4,000,000 instructions in 2.0 s (2.0 M/s), ≥ 40.0 % of --max-instructions"
        );
    }

    /// Counts the instructions a run issues, as a second opinion on the progress' count.
    struct Count(u64);

    impl Observer for Count {
        fn on_issue(&mut self, _: &sim::engine::Issue<'_>) {
            self.0 += 1;
        }
    }

    #[test]
    fn the_progress_counts_every_issue_and_changes_nothing() {
        let config = sim::load_config(
            sim::builtin::builtin(sim::builtin::DEFAULT).expect("built in"),
            "<built-in>",
        )
        .unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/programs/vec_add_db.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        // enough tiles for the clock to be read more than once
        let program = sim::load_program(&text, path, &config, &[("tiles".into(), 20_000)]).unwrap();
        let opts = pipeline::Options::default();
        let plain = pipeline::simulate(&program, &config, &opts).unwrap();
        let mut watched = (RunProgress::new("run".into(), u64::MAX, false), Count(0));
        let sim = pipeline::simulate_observed(&program, &config, &opts, &mut watched).unwrap();
        let (progress, count) = watched;
        assert_eq!(sim.result, plain.result, "watching changes nothing");
        assert!(count.0 > 2 * RunProgress::EVERY, "{}", count.0);
        assert_eq!(progress.issued, count.0);
        assert!(progress.cycle > 0 && progress.cycle <= sim.result.total_cycles);
        // the clock was read once per EVERY instructions
        assert_eq!(
            progress.next,
            (count.0 / RunProgress::EVERY + 1) * RunProgress::EVERY
        );
    }

    #[test]
    fn a_later_run_of_a_long_command_shows_at_once() {
        let began = Instant::now();
        let p = RunProgress::new("compare level 0".into(), 100, false)
            .since(began - RunProgress::AFTER);
        // due as soon as it starts: the command has run 2 s already
        assert!(p.due(p.start));
        assert!(!RunProgress::new("run".into(), 100, false).due(began));
    }

    #[test]
    fn rates_take_a_prefix() {
        assert_eq!(si(950.0), "950");
        assert_eq!(si(4_049.0), "4.0 k");
        assert_eq!(si(12_500_000.0), "12.5 M");
        assert_eq!(si(3e9), "3.0 G");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(123_456_789), "123,456,789");
    }
}
