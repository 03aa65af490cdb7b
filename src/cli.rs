//! The command line, declared with clap.

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use planner::{LivenessMode, PlacementMode, PlanOptions};
use sim::Space;
use std::path::PathBuf;

/// Cycle-level simulator, memory planner and sync checker for Ascend-like NPU cores.
#[derive(Parser, Debug)]
#[command(name = "npusim", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The most bytes any input may have (a program, config, sweep file, CSV, measurements
    /// file, merge part, or `-`, the standard input): bytes, or with a KiB or MiB suffix. A
    /// larger input is refused (exit 2) after reading one byte more than this.
    #[arg(long, global = true, value_name = "N", default_value = "256MiB", value_parser = parse_max_bytes)]
    pub max_input_bytes: u64,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate a program against a config, plan it, and print every problem found.
    Check {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        plan: PlanArgs,
        /// Output format: `text` (an `ok:` line, or the problems on stderr), or `json` (one
        /// document on stdout, whatever the outcome).
        #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// Plan every on-chip buffer of a program to an address and print the plan.
    Plan {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        plan: PlanArgs,
        /// Say why BUFFER got its address (inplace partner, level, the buffers it shares bytes
        /// with) instead of printing the whole plan.
        #[arg(long, value_name = "BUFFER")]
        explain: Option<String>,
        /// Print the program with the synchronisation the plan needs, as a `sync: manual`
        /// YAML kernel pinned to the plan's addresses (`at:`); running it gives the same
        /// cycles as running the original. With `--format mlir`, as HIVM MLIR instead (the
        /// flags as `hivm.hir.set_flag` / `wait_flag` / `pipe_barrier`).
        #[arg(long, conflicts_with = "explain")]
        show_sync: bool,
        /// Output format (default `text`): `text`, `yaml`, `json`, or `mlir` (the program as
        /// HIVM MLIR with every buffer a `hivm.hir.pointer_cast` of its planned offsets, as
        /// `bishengir-opt -hivm-plan-memory` prints it; docs/mlir.md).
        #[arg(long, value_enum)]
        format: Option<PlanFormat>,
        /// Write the output to FILE (written only if everything succeeded).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Plan and execute a program cycle by cycle; report where every cycle of every pipe went.
    Run {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        plan: PlanArgs,
        #[command(flatten)]
        run: RunArgs,
        /// Output format.
        #[arg(long, value_enum, default_value_t = RunFormat::Text)]
        format: RunFormat,
        /// Write the report to FILE (written only if the program ran).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        views: ViewArgs,
    },
    /// Plan, synchronise and run the program once per reuse level; print one row per level
    /// (bytes per scope, buffers reused, syncs inserted, cycles, against the best level,
    /// overlap), then the stalls of every level by pipe and cause.
    Compare {
        #[command(flatten)]
        input: Input,
        /// The reuse levels to compare, in the order the rows are printed.
        #[arg(long, value_name = "LEVELS", default_value = "2,1,0", value_parser = parse_levels)]
        levels: Levels,
        #[command(flatten)]
        plan: PlanCommon,
        #[command(flatten)]
        run: RunArgs,
        /// Output format: a table, or a JSON list of `run --format json` documents.
        #[arg(long, value_enum, default_value_t = RunFormat::Text)]
        format: RunFormat,
        /// Write the output to FILE (written once every level was compared, even when one
        /// overflowed or found a problem; not on bad input).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Also write the comparison as one self-contained HTML page to FILE: the levels side
        /// by side with their stall bars and memory maps (written when `-o` would be).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// What changed from A to B: two run documents (`run --format json`), or programs run on
    /// the spot (B defaults to A, so `diff P --level 2 --vs-level 1` compares two levels):
    /// total, per core type, per pipe and cause, per op of the profile, and the plan's
    /// changes (docs/cli.md, "npusim diff").
    Diff(DiffArgs),
    /// Place a MiniMalloc CSV instance (`id,lower,upper,size[,alignment][,offset]`) under a
    /// capacity; print the placement as CSV with an `offset` column, and a summary on stderr.
    Pack {
        /// The instance (MiniMalloc CSV, half-open lifetimes [lower, upper)).
        #[arg(value_name = "INSTANCE.csv")]
        instance: PathBuf,
        /// Bytes available: a number, or with a KiB/MiB suffix; at most 2^62.
        #[arg(long, value_name = "N", value_parser = parse_pack_capacity)]
        capacity: u64,
        /// `fast`: best of several orders with best fit (milliseconds); `exact`: a complete
        /// search that finds a placement whenever one exists within the time limit.
        #[arg(long, value_enum, default_value_t = PackMode::Fast)]
        mode: PackMode,
        /// Seconds the exact search may take before it returns the best placement found.
        #[arg(long, value_name = "S", default_value_t = 60.0)]
        time_limit: f64,
        /// Exact mode: search for the smallest feasible height, not just one that fits.
        #[arg(long)]
        minimize: bool,
        /// Also print the solver's wall time in the summary (left out by default, so the same
        /// input gives the same bytes).
        #[arg(long)]
        timing: bool,
        /// Write the placement to FILE (written only when it fits the capacity).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Run every point of a sweep file (programs × configs × params × levels × capacities ×
    /// blocks × l2) on N workers and write one CSV row (or JSON line) per point, in the grid's
    /// order whatever N is; or join the parts of a sharded sweep (`--merge`); or summarise a
    /// sweep's results (`--summary`).
    Sweep(SweepArgs),
    /// Compare the simulator with measured hardware: run every case of a measurements file and
    /// report each case's measured and simulated time, their ratio and the geometric-mean error
    /// (`--check`), or fit named config numbers to the measurements and write the config with
    /// them (`--fit KEY,KEY,...`).
    Calibrate(CalibrateArgs),
    /// Run npusim's passes on HIVM MLIR the way `bishengir-opt` runs HIVM's, so a lit RUN line
    /// runs with `bishengir-opt` replaced by `npusim opt`: `npusim opt FILE
    /// [-hivm-plan-memory[=OPTIONS]] [-hivm-inject-sync[=OPTIONS]] [-split-input-file]
    /// [-verify-diagnostics] [-hacc-append-device-spec=target=NAME] [--config NAME|FILE]
    /// [--param NAME=INT] [-o FILE]` (docs/mlir.md).
    #[command(disable_help_flag = true)]
    Opt {
        /// The file and the passes, spelled as `bishengir-opt` spells them (one or two dashes).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// List the built-in chip configs, or print one's YAML (`--show NAME`).
    Configs {
        /// Print the YAML text of the built-in config NAME, verbatim: a starting point for
        /// your own (`npusim configs --show ascend910b > my.yaml`, then `--config my.yaml`).
        #[arg(long, value_name = "NAME")]
        show: Option<String>,
    },
}

/// `npusim sweep` (docs/cli.md, "npusim sweep"): run a sweep file, merge its shards, or
/// summarise its results.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("mode").args(["file", "merge", "summary"]).required(true)))]
pub struct SweepArgs {
    /// The sweep file (YAML): the lists whose product is the grid of points.
    #[arg(value_name = "SWEEP.yaml")]
    pub file: Option<PathBuf>,
    /// Workers running points at once (default: every core).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// `csv`: one row per point; `jsonl`: one JSON object per line and point, with the point's
    /// run document (`run --format json`).
    #[arg(long, value_enum, default_value_t = SweepFormat::Csv, conflicts_with_all = ["merge", "summary"])]
    pub format: SweepFormat,
    /// Write the results (or the merged parts) to FILE, whole or not at all.
    #[arg(short, long, value_name = "FILE", conflicts_with = "summary")]
    pub output: Option<PathBuf>,
    /// Run shard K of N: the points whose index mod N is K (0 <= K < N). Without it, a Slurm
    /// array task takes K and N from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT.
    #[arg(long, value_name = "K/N", value_parser = parse_shard, conflicts_with_all = ["shards", "merge", "summary"])]
    pub shard: Option<(u32, u32)>,
    /// Run one of N shards, K from the scheduler: JOB_COMPLETION_INDEX (a Kubernetes Indexed
    /// Job), HQ_TASK_ID (HyperQueue, from 0) or SLURM_ARRAY_TASK_ID.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with_all = ["merge", "summary"])]
    pub shards: Option<u32>,
    /// List the points (this shard's) as CSV without running them.
    #[arg(long, conflicts_with_all = ["merge", "summary"])]
    pub dry_run: bool,
    #[command(flatten)]
    pub checks: CheckArgs,
    /// The loop rule of liveness, for every point (see `run --help`).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = LivenessArg::Precise)]
    pub liveness: LivenessArg,
    /// How scopes are placed, for every point (see `run --help`).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = PlacementArg::FirstFit)]
    pub placement: PlacementArg,
    /// Join the parts of a sharded sweep (every shard exactly once) into the unsharded output.
    #[arg(long, value_name = "PART", num_args = 1.., conflicts_with = "summary")]
    pub merge: Vec<PathBuf>,
    /// Summarise a sweep's CSV: the best point per program and a pivot of cycles.
    #[arg(long, value_name = "RESULTS.csv")]
    pub summary: Option<PathBuf>,
    /// With --summary: also write a page plotting cycles against the column --x.
    #[arg(long, value_name = "FILE", requires = "summary")]
    pub html: Option<PathBuf>,
    /// With --summary: the pivot's rows and the plot's x axis: an input column (`level`, a
    /// param such as `tiles`, a scope such as `ub`, `blocks`, `l2`, `config`; default: per
    /// program, the first input that varies among its points).
    #[arg(long, value_name = "COLUMN", requires = "summary")]
    pub x: Option<String>,
    /// With --summary: the pivot's columns and the plot's lines (default: `level`, or the next
    /// input that varies).
    #[arg(long, value_name = "COLUMN", requires = "summary")]
    pub by: Option<String>,
}

/// `npusim diff` (docs/cli.md, "npusim diff"). Each side is a run document or a program; a
/// program runs with the options below, B's `--vs-*` replacing A's.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// A: a run document (`npusim run ... --format json -o A.json`) or a program.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// B: a run document or a program; without it, A again (with the `--vs-*` options).
    #[arg(value_name = "B")]
    pub b: Option<PathBuf>,
    /// The config a program runs on (a built-in name or a file; default ascend910b).
    #[arg(long, value_name = "NAME|FILE")]
    pub config: Option<String>,
    /// B's config, when it differs from A's.
    #[arg(long, value_name = "NAME|FILE")]
    pub vs_config: Option<String>,
    /// Override a program param: `--param n=4096`. May be repeated.
    #[arg(long = "param", value_name = "NAME=INT", value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// B's params: each replaces A's param of that name (the others stay A's).
    #[arg(long = "vs-param", value_name = "NAME=INT", value_parser = parse_param)]
    pub vs_params: Vec<(String, i64)>,
    /// Launch a program on N blocks.
    #[arg(long, value_name = "N")]
    pub blocks: Option<u32>,
    /// B's blocks, when they differ from A's.
    #[arg(long, value_name = "N")]
    pub vs_blocks: Option<u32>,
    /// The highest reuse level a program is planned at (0, 1 or 2; default 2).
    #[arg(long, value_name = "0|1|2", value_parser = parse_level)]
    pub level: Option<LevelArg>,
    /// B's level, when it differs from A's.
    #[arg(long, value_name = "0|1|2", value_parser = parse_level)]
    pub vs_level: Option<LevelArg>,
    #[command(flatten)]
    pub plan: PlanCommon,
    #[command(flatten)]
    pub run: RunArgs,
    /// Output format: the diff as text, or the diff document (JSON).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Write the diff to FILE (written once both sides were read or ran; not on bad input).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the diff as one self-contained HTML page to FILE (written when `-o` would be).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `npusim calibrate` (docs/cli.md, "npusim calibrate"; docs/calibration.md).
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("mode").args(["check", "fit"]).required(true)))]
pub struct CalibrateArgs {
    /// The measurements file (YAML): per case a program run (or a quantity derived from two),
    /// the measured time, its tolerance and its source.
    #[arg(value_name = "MEASUREMENTS")]
    pub file: PathBuf,
    /// Run every case and compare it with its measurement; exit 1 when a judged case is
    /// outside its tolerance.
    #[arg(long)]
    pub check: bool,
    /// Fit these config numbers (comma-separated keys, e.g. memory.hbm_bytes_per_cycle) to the
    /// judged cases, each within its plausible range, and write the config with the fitted
    /// values to -o FILE.
    #[arg(
        long,
        value_name = "KEY,KEY,...",
        value_delimiter = ',',
        requires = "output"
    )]
    pub fit: Option<Vec<String>>,
    /// The config the cases run on unless they name their own (a built-in name or a file);
    /// with --fit, the config whose numbers are fitted.
    #[arg(long, value_name = "NAME|FILE", default_value = sim::builtin::DEFAULT)]
    pub config: String,
    /// Workers running cases at once (default: every core).
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// The report's format (text, or a JSON document).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// --check: write the report to FILE; --fit: write the fitted config to FILE (required).
    /// Written whole or not at all.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// --check: also write the report as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "fit")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub checks: CheckArgs,
    /// --fit: the most simulations of the whole set of judged cases one fit may run (each
    /// fit: the fit on every case, and one leaving each case out).
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = clap::value_parser!(u32).range(10..=100_000), requires = "fit")]
    pub max_evals: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    Csv,
    Jsonl,
}

/// Parses `K/N`: shard K of N, 0 <= K < N.
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{s}` is not a shard: write K/N with 0 <= K < N, e.g. 0/4");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let k: u32 = k.trim().parse().map_err(|_| bad())?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(format!("`{s}`: N is the number of shards, at least 1"));
    }
    if k >= n {
        return Err(format!(
            "`{s}`: shard K of N counts from 0, so K must be below N (the last shard of {n} is {}/{n})",
            n - 1
        ));
    }
    Ok((k, n))
}

impl Cli {
    /// The command line, parsed; a usage error (also an option repeated that must not be,
    /// [`repeated_options`]) prints clap's message and exits with code 2.
    pub fn parse_checked() -> Cli {
        let matches = Cli::command().get_matches_from(std::env::args_os());
        let repeated = repeated_options(&matches);
        if !repeated.is_empty() {
            // the error shows the usage of the command the options were given to
            let mut cli = Cli::command();
            cli.build();
            let name = matches.subcommand_name().unwrap_or_default().to_string();
            let mut command = cli.find_subcommand(&name).cloned().unwrap_or(cli);
            command
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    repeated.join("\nerror: "),
                )
                .exit();
        }
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// Options that may be repeated, but not for the same name: `--param NAME=...` twice for one
/// param, `--capacity SCOPE=...` twice for one scope. Either value could be meant, so neither
/// wins: each is a problem naming both as written.
pub fn repeated_options(matches: &ArgMatches) -> Vec<String> {
    let mut m = matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    let mut problems = Vec::new();
    // the parsed values beside the values as written, for the message
    fn pairs<K: Clone + Send + Sync + 'static, V: Clone + Send + Sync + 'static>(
        m: &ArgMatches,
        id: &str,
    ) -> Vec<(K, String)> {
        let (Ok(Some(values)), Ok(Some(raw))) = (m.try_get_many::<(K, V)>(id), m.try_get_raw(id))
        else {
            return Vec::new();
        };
        values
            .map(|(k, _)| k.clone())
            .zip(raw.map(|r| r.to_string_lossy().into_owned()))
            .collect()
    }
    let mut twice = |option: &str, what: &str, given: Vec<(String, String)>| {
        for (i, (name, text)) in given.iter().enumerate() {
            if let Some((_, first)) = given[..i].iter().find(|(n, _)| n == name) {
                problems.push(format!(
                    "{option} gives the {what} `{name}` twice: `{option} {first}` and `{option} {text}`; give it once"
                ));
            }
        }
    };
    twice("--param", "param", pairs::<String, i64>(m, "params"));
    twice(
        "--capacity",
        "scope",
        pairs::<Space, u64>(m, "capacities")
            .into_iter()
            .map(|(s, t)| (s.yaml_name().to_string(), t))
            .collect(),
    );
    problems
}

/// The program and the machine it runs on.
#[derive(Args, Debug)]
pub struct Input {
    /// The kernel program (YAML).
    #[arg(value_name = "PROGRAM")]
    pub program: PathBuf,
    /// A built-in config name (see `npusim configs`) or a config file.
    #[arg(long, value_name = "NAME|FILE", default_value = sim::builtin::DEFAULT)]
    pub config: String,
    /// Override a program param: `--param n=4096`. May be repeated.
    #[arg(long = "param", value_name = "NAME=INT", value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Launch the kernel on N blocks, replacing the program's `launch: { blocks }`.
    #[arg(long, value_name = "N")]
    pub blocks: Option<u32>,
}

/// How a program runs: the race checker, the limits and the L2 at the start.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub checks: CheckArgs,
    /// The L2 at cycle 0, when the config has a `memory` section: `cold` (empty) or `warm`
    /// (every gm tensor's lines in declaration order, until full).
    #[arg(long, value_name = "STATE", value_enum, default_value = "cold")]
    pub l2: L2Arg,
}

/// The race checker and the limits: the run options a sweep takes on its command line (the
/// L2's state is one of its axes instead).
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// Skip the race checker (it runs by default and roughly doubles the run time).
    #[arg(long)]
    pub no_race_check: bool,
    /// Stop the run at this cycle (a finding, exit 1): nothing happens after it. At most 2^62.
    #[arg(long, value_name = "N", default_value = "1e10", value_parser = parse_max_cycles)]
    pub max_cycles: u64,
    /// Stop the run after this many dynamic instructions (a finding, exit 1): instructions
    /// sent to pipes or executed by the scalar unit, loop iterations and `if`s included.
    #[arg(long, value_name = "N", default_value = "1e10", value_parser = parse_count)]
    pub max_instructions: u64,
}

/// `--l2`: the L2's state at cycle 0.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum L2Arg {
    Cold,
    Warm,
}

impl L2Arg {
    /// The engine's L2 start.
    pub fn start(self) -> sim::engine::L2Start {
        match self {
            L2Arg::Cold => sim::engine::L2Start::Cold,
            L2Arg::Warm => sim::engine::L2Start::Warm,
        }
    }

    /// The name on the command line and in a sweep file.
    pub fn name(self) -> &'static str {
        match self {
            L2Arg::Cold => "cold",
            L2Arg::Warm => "warm",
        }
    }
}

impl CheckArgs {
    /// The limits of a run, with the L2 starting as `l2` says.
    pub fn limits(&self, l2: L2Arg) -> sim::engine::Limits {
        sim::engine::Limits {
            max_cycles: self.max_cycles,
            max_instructions: self.max_instructions,
            l2: l2.start(),
        }
    }
}

impl RunArgs {
    pub fn limits(&self) -> sim::engine::Limits {
        self.checks.limits(self.l2)
    }
}

/// What `run` shows besides its report (docs/trace.md, docs/json.md).
#[derive(Args, Debug, Clone, Default)]
pub struct ViewArgs {
    /// Write the run's timeline to FILE as Chrome trace event JSON (open it in
    /// ui.perfetto.dev or chrome://tracing): a track per pipe, a slice per instruction and per
    /// stall, flows from each set_flag to its wait_flag, live bytes per scope.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Keep only cycles [A, B) in the trace (slices clipped to it), so a long run gives a
    /// small file.
    #[arg(long, value_name = "A:B", requires = "trace", value_parser = parse_window)]
    pub trace_window: Option<reports::TraceWindow>,
    /// The most bytes the trace file may have (default 256MiB): bytes, or with a KiB or MiB
    /// suffix. A trace that reaches it stops there (the run goes on) and is still a valid
    /// trace of the cycles before; --trace-window then picks the part to see.
    #[arg(long, value_name = "N", requires = "trace", value_parser = parse_max_bytes)]
    pub trace_max_bytes: Option<u64>,
    /// Add the per-op profile to the report: for every op, how often it ran, its busy cycles,
    /// the stall cycles of its pipe with it at the head and, apart, the cycles S waited to
    /// send it (S held), by cause; compute and sync ops apart, each most expensive first.
    #[arg(long)]
    pub profile: bool,
    /// Add the run's critical path to the report (docs/critical-path.md): back from the last
    /// cycle through what each step waited for, its cycles by pipe, core and cause, the ops on
    /// it and the waits it ran through, and a "paced by" line in the summary.
    #[arg(long)]
    pub critical_path: bool,
    /// Do not follow the critical path: no "paced by" line in the summary (which costs about
    /// a third more time and up to about 150 MB; the line is left out past 2,000,000 instructions
    /// and scalar spans).
    #[arg(long, conflicts_with = "critical_path")]
    pub no_critical_path: bool,
    /// Add the roofline to the report (docs/roofline.md): the work the run did on the cube
    /// (MACs), the vector unit (repeats), each data path, HBM and the L2 (bytes), against the
    /// rates its config gives them, per core type and for the chip, and the nearest bound.
    #[arg(long)]
    pub roofline: bool,
    /// Also write the report as one self-contained HTML page to FILE: stall bars, the pipe
    /// timeline, the memory maps, the profile with --profile (written only if the program ran).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The cycles [A, B) the HTML page's timeline keeps (default: the whole run); its spans
    /// are clipped to the window, and the page opens on it.
    #[arg(long, value_name = "A:B", requires = "html", value_parser = parse_window)]
    pub html_window: Option<reports::TraceWindow>,
    /// The cores the HTML page's timeline shows (default: every core): a comma-separated list
    /// of `all`, a core type (`aiv`: its cores in every block) or a core type with a block or
    /// a range of blocks (`aic0`, `aiv0-3`), e.g. `aic0,aiv0-3`.
    #[arg(long, value_name = "CORES", requires = "html")]
    pub html_cores: Option<String>,
    /// For a launch of many cores, add one core's detail to the text report: `B:TYPE:I`
    /// (block, core type, index among the block's cores of that type), e.g. `3:aiv:1`.
    #[arg(long, value_name = "B:TYPE:I", value_parser = parse_core)]
    pub core: Option<(u32, String, u32)>,
}

fn parse_core(s: &str) -> Result<(u32, String, u32), String> {
    let bad = || format!("`{s}` is not a core: write BLOCK:TYPE:INDEX, e.g. 3:aiv:1");
    let mut it = s.split(':');
    let (Some(b), Some(t), Some(i), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    let b = b.trim().parse::<u32>().map_err(|_| bad())?;
    let i = i.trim().parse::<u32>().map_err(|_| bad())?;
    if t.trim().is_empty() {
        return Err(bad());
    }
    Ok((b, t.trim().to_string(), i))
}

fn parse_window(s: &str) -> Result<reports::TraceWindow, String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not a cycle window: write A:B, e.g. 0:100000"))?;
    let num = |x: &str| parse_count(x.trim()).map_err(|e| format!("`{s}`: {e}"));
    let (from, to) = (num(a)?, num(b)?);
    if from >= to {
        return Err(format!(
            "`{s}`: the window [A, B) is empty; B must be larger than A"
        ));
    }
    Ok(reports::TraceWindow { from, to })
}

/// How buffers are planned to addresses (docs/planner.md).
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// The highest reuse level tried: 2 shares bytes only within a pipeline class, 1 also
    /// upgrades a buffer to a double buffer over a multi-buffer's slots, 0 needs only disjoint
    /// lifetimes. `best` (run only): plan, synchronise and run levels 2, 1 and 0 and report the
    /// fastest, with the cycles of all three.
    #[arg(long, value_name = "0|1|2|best", default_value = "2", value_parser = parse_level)]
    pub level: LevelArg,
    #[command(flatten)]
    pub common: PlanCommon,
}

/// The plan options besides the level (`compare` takes `--levels` instead of `--level`).
#[derive(Args, Debug, Clone)]
pub struct PlanCommon {
    /// The loop rule of liveness: `precise` keeps only loop-carried values live for the whole
    /// loop; `scoped` (HIVM) keeps every buffer declared outside a loop and used inside it.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = LivenessArg::Precise)]
    pub liveness: LivenessArg,
    /// Replace a scope's capacity for a what-if study: `--capacity ub=160KiB`. Sizes are
    /// bytes, or take a KiB or MiB suffix. May be repeated.
    #[arg(long = "capacity", value_name = "SCOPE=SIZE", value_parser = parse_capacity)]
    pub capacities: Vec<(Space, u64)>,
    /// `first-fit`: HIVM's first fit (a scope it cannot place overflows); `exact`: when first
    /// fit fails, a complete search places the scope by lifetimes (up to 10 s a scope).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = PlacementArg::FirstFit)]
    pub placement: PlacementArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    FirstFit,
    Exact,
}

impl PlanCommon {
    /// These options with `--level LEVEL`.
    pub fn at_level(&self, level: u8) -> PlanArgs {
        PlanArgs {
            level: LevelArg::Fixed(level),
            common: self.clone(),
        }
    }
}

impl PlanArgs {
    /// The pipeline's options: these plan options, the race checker on or off, and the plan
    /// validator (debug builds).
    pub fn pipeline(&self, run: &RunArgs, validate: bool) -> pipeline::Options {
        pipeline::Options {
            plan: self.options(),
            race_check: !run.checks.no_race_check,
            validate,
            limits: run.limits(),
        }
    }

    pub fn options(&self) -> PlanOptions {
        let common = &self.common;
        PlanOptions {
            max_level: match self.level {
                LevelArg::Fixed(l) => l,
                LevelArg::Best => 2,
            },
            capacities: common.capacities.clone(),
            liveness: match common.liveness {
                LivenessArg::Precise => LivenessMode::Precise,
                LivenessArg::Scoped => LivenessMode::Scoped,
            },
            placement: match common.placement {
                PlacementArg::FirstFit => PlacementMode::FirstFit,
                PlacementArg::Exact => PlacementMode::Exact,
            },
            ..PlanOptions::default()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LivenessArg {
    Precise,
    Scoped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PackMode {
    Fast,
    Exact,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Yaml,
    Json,
    Mlir,
}

/// How `run` and `compare` print a run. Adding a format: a renderer in `reports`, its export
/// in `reports/src/lib.rs`, and a variant with its arm here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    Text,
    Json,
}

impl RunFormat {
    /// The run report in this format.
    pub fn render(self, config: &sim::Config, run: &reports::Run) -> String {
        match self {
            RunFormat::Text => reports::run_text(config, run),
            RunFormat::Json => crate::pretty(&reports::run_json(config, run)),
        }
    }
}

/// `--level`: one reuse level, or the fastest of all three (`best`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelArg {
    Fixed(u8),
    Best,
}

fn parse_level(s: &str) -> Result<LevelArg, String> {
    match s {
        "0" | "1" | "2" => Ok(LevelArg::Fixed(s.parse().expect("a digit"))),
        "best" => Ok(LevelArg::Best),
        _ => Err(format!("`{s}` is not a reuse level: use 0, 1, 2 or best")),
    }
}

/// The reuse levels of `compare --levels`, in the order given, each at most once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Levels(pub Vec<u8>);

/// Parses `--levels`: comma-separated reuse levels (0, 1, 2), each at most once, e.g. `2,1,0`.
pub fn parse_levels(s: &str) -> Result<Levels, String> {
    let mut levels = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!(
                "expected comma-separated reuse levels (0, 1, 2), e.g. 2,1,0; found `{s}`"
            ));
        }
        let level = match part {
            "0" => 0,
            "1" => 1,
            "2" => 2,
            _ => {
                return Err(format!(
                    "`{part}` is not a reuse level; the levels are 0, 1 and 2 (e.g. --levels 2,1,0)"
                ))
            }
        };
        if levels.contains(&level) {
            return Err(format!("level {level} is listed twice in `{s}`"));
        }
        levels.push(level);
    }
    Ok(Levels(levels))
}

/// Parses a count: a whole number (`100000`), optionally with an exponent (`1e10`).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let bad = || format!("`{s}` is not a count; write a whole number such as 1000000 or 1e6");
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<u32>().map_err(|_| bad())?),
        None => (t.as_str(), 0),
    };
    let m: u64 = mantissa.parse().map_err(|_| bad())?;
    10u64
        .checked_pow(exp)
        .and_then(|p| m.checked_mul(p))
        .ok_or_else(|| format!("`{s}` is too large (at most {})", u64::MAX))
}

/// Parses `--max-cycles`: a count of at most 2^62, so that cycle arithmetic never wraps.
pub fn parse_max_cycles(s: &str) -> Result<u64, String> {
    let n = parse_count(s)?;
    let ceiling = sim::engine::Limits::MAX_CYCLES_CEILING;
    if n > ceiling {
        return Err(format!(
            "`{s}` is above the largest cycle limit, 2^62 = {ceiling}"
        ));
    }
    Ok(n)
}

/// Parses `NAME=INT`.
pub fn parse_param(s: &str) -> Result<(String, i64), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("expected NAME=INTEGER (e.g. n=4096), found `{s}`"));
    };
    let name = name.trim();
    let valid_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name {
        return Err(format!(
            "`{name}` is not a param name (letters, digits and `_`, not starting with a digit)"
        ));
    }
    let value = value.trim();
    let v: i64 = value
        .parse()
        .map_err(|_| format!("the value of `{name}` must be an integer, found `{value}`"))?;
    Ok((name.to_string(), v))
}

/// Parses `SCOPE=SIZE`, e.g. `ub=160KiB` or `l1=524288`. Whole numbers only (`0.5MiB` is
/// refused), so a size is never rounded.
pub fn parse_capacity(s: &str) -> Result<(Space, u64), String> {
    let Some((scope, size)) = s.split_once('=') else {
        return Err(format!("expected SCOPE=SIZE (e.g. ub=160KiB), found `{s}`"));
    };
    let scope = scope.trim().to_ascii_lowercase();
    let space = match Space::parse(&scope) {
        Some(Space::Gm) | None => {
            let on_chip: Vec<&str> = Space::yaml_names()
                .into_iter()
                .filter(|n| *n != "gm")
                .collect();
            return Err(format!(
                "`{scope}` is not an on-chip scope; use one of {}",
                on_chip.join(", ")
            ));
        }
        Some(sp) => sp,
    };
    let bytes = parse_size(size)?;
    let max = sim::limits::MAX_SCOPE_BYTES;
    if bytes > max {
        return Err(format!(
            "`{size}` is larger than any scope npusim plans (at most {})",
            sim::limits::show(max)
        ));
    }
    Ok((space, bytes))
}

/// Parses `pack --capacity`: a size of at most 2^62 bytes, so that sums with it never wrap.
pub fn parse_pack_capacity(s: &str) -> Result<u64, String> {
    let n = parse_size(s)?;
    if n > 1 << 62 {
        return Err(format!(
            "`{s}` is larger than npusim places (at most 2^62 bytes)"
        ));
    }
    Ok(n)
}

/// Parses `--max-input-bytes` and `--trace-max-bytes`: a size of at least one byte.
pub fn parse_max_bytes(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err(format!("`{s}`: the limit is at least 1 byte")),
        n => Ok(n),
    }
}

/// Parses a size: bytes, or whole KiB/MiB (`160KiB`, `1MiB`).
pub fn parse_size(size: &str) -> Result<u64, String> {
    let size = size.trim();
    let split = size
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(size.len());
    let (digits, unit) = size.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1024,
        "MiB" | "M" => 1024 * 1024,
        other => {
            return Err(format!(
            "unknown size unit `{other}` in `{size}`; write bytes or use KiB or MiB (e.g. 160KiB)"
        ))
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{size}` is not a size; write e.g. 163840 or 160KiB"))?;
    n.checked_mul(scale)
        .ok_or_else(|| format!("`{size}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn a_param_or_scope_given_twice_is_refused_on_every_command() {
        let repeated = |args: &[&str]| {
            let mut all = vec!["npusim"];
            all.extend_from_slice(args);
            repeated_options(&Cli::command().try_get_matches_from(all).unwrap())
        };
        for command in ["check", "plan", "run", "compare"] {
            let p = repeated(&[command, "p.yaml", "--param", "n=1", "--param", "n=2"]);
            assert_eq!(
                p,
                ["--param gives the param `n` twice: `--param n=1` and `--param n=2`; give it once"],
                "{command}"
            );
            // scopes are compared as scopes, whatever their spelling
            let c = repeated(&[
                command,
                "p.yaml",
                "--capacity",
                "ub=1KiB",
                "--capacity",
                "UB=1024",
            ]);
            assert_eq!(c.len(), 1, "{command}: {c:?}");
            assert!(
                c[0].contains("`--capacity ub=1KiB` and `--capacity UB=1024`"),
                "{c:?}"
            );
            // different names are fine
            assert!(repeated(&[
                command,
                "p.yaml",
                "--param",
                "n=1",
                "--param",
                "m=1",
                "--capacity",
                "ub=1KiB",
                "--capacity",
                "l1=1KiB"
            ])
            .is_empty());
        }
        assert!(repeated(&["pack", "x.csv", "--capacity", "4"]).is_empty());
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn params_parse() {
        assert_eq!(parse_param("n=4096"), Ok(("n".into(), 4096)));
        assert_eq!(parse_param("tiles=-1"), Ok(("tiles".into(), -1)));
        assert!(parse_param("n").is_err());
        assert!(parse_param("n=4k").is_err());
        assert!(parse_param("=4").is_err());
        assert!(parse_param("1n=4").is_err());
    }

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("1000"), Ok(1000));
        assert_eq!(parse_count("1e10"), Ok(10_000_000_000));
        assert_eq!(parse_count("2E3"), Ok(2000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("1e20").unwrap_err().contains("too large"));
        assert!(parse_count("-1").is_err());
        assert!(parse_count("1.5e3").is_err());
        assert!(parse_count("").is_err());
        assert_eq!(parse_max_cycles("4611686018427387904"), Ok(1 << 62));
        assert!(parse_max_cycles("4611686018427387905")
            .unwrap_err()
            .contains("2^62"));
    }

    #[test]
    fn levels_parse() {
        assert_eq!(parse_levels("2,1,0"), Ok(Levels(vec![2, 1, 0])));
        assert_eq!(parse_levels("0, 2"), Ok(Levels(vec![0, 2])));
        assert_eq!(parse_levels("1"), Ok(Levels(vec![1])));
        assert!(parse_levels("3")
            .unwrap_err()
            .contains("`3` is not a reuse level"));
        assert!(parse_levels("2,2").unwrap_err().contains("listed twice"));
        assert!(parse_levels("").is_err());
        assert!(parse_levels("1,,0").is_err());
        assert!(parse_levels("-1").is_err());
    }

    #[test]
    fn shards_parse() {
        assert_eq!(parse_shard("0/4"), Ok((0, 4)));
        assert_eq!(parse_shard(" 3 / 4 "), Ok((3, 4)));
        assert!(parse_shard("4/4").unwrap_err().contains("3/4"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("1").is_err());
        assert!(parse_shard("-1/4").is_err());
        assert!(parse_shard("a/b").is_err());
    }

    #[test]
    fn capacities_parse() {
        assert_eq!(parse_capacity("ub=160KiB"), Ok((Space::Ub, 160 * 1024)));
        assert_eq!(parse_capacity("L1=1MiB"), Ok((Space::L1, 1 << 20)));
        assert_eq!(parse_capacity("l0c=4096"), Ok((Space::L0c, 4096)));
        assert_eq!(parse_capacity("ub=100B"), Ok((Space::Ub, 100)));
        assert!(parse_capacity("gm=4")
            .unwrap_err()
            .contains("not an on-chip scope"));
        assert!(parse_capacity("ub=1.5KiB").is_err());
        assert!(parse_capacity("ub=160KB").unwrap_err().contains("KiB"));
        assert!(parse_capacity("ub").is_err());
        assert!(parse_capacity("ub=99999999999999999999MiB").is_err());
    }
}

/// `npusim opt` on a YAML program (docs/mlir.md, "Writing HIVM MLIR"): the program's input and
/// plan options, and the passes in `bishengir-opt`'s spelling (rewritten to two dashes).
#[derive(Parser, Debug)]
#[command(name = "npusim opt", disable_help_flag = true)]
pub struct YamlOpt {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Plan every on-chip buffer (also spelled `-hivm-plan-memory`).
    #[arg(long)]
    pub hivm_plan_memory: bool,
    /// Insert the synchronisation the plan needs (also spelled `-hivm-inject-sync`); needs
    /// `-hivm-plan-memory`, as in `bishengir-opt`.
    #[arg(long, requires = "hivm_plan_memory")]
    pub hivm_inject_sync: bool,
    /// Write the output to FILE (written only if everything succeeded).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}
