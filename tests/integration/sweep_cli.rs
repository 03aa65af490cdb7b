//! `npusim sweep` (docs/cli.md, "npusim sweep"): the design's first sweep file
//! (tests/fixtures/sweep/design.yaml) runs as written; the
//! CSV is the same bytes whatever `-j`; every row's cycles are what the pipeline gives for
//! that point's inputs; failing points are recorded and the sweep goes on; the shards of a
//! sweep (by `--shard` or by each scheduler's variables) merge to the unsharded bytes, and a
//! missing, duplicated or foreign part is an error naming it; bad input is refused at its
//! place with nothing written; the summary and its page (loaded in headless Chromium).

use crate::html_cli::{assert_clean, browser, files_in, load, load_at, scratch};
use crate::{default_config, root, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The variables a scheduler sets: cleared for every run here (and for the docs' sweep
/// commands), so that a test run inside a cluster job sees only what the test sets.
pub(crate) const SCHEDULER_VARS: [&str; 5] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "JOB_COMPLETION_INDEX",
    "HQ_TASK_ID",
];

/// `npusim ARGS` in the workspace root with `env` set (and no other scheduler variable).
fn npusim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_npusim"));
    c.args(args).current_dir(root());
    for v in SCHEDULER_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().expect("npusim runs")
}

fn sweep(args: &[&str]) -> Output {
    npusim_env(args, &[])
}

/// `npusim ARGS`, which must exit 0; its stdout.
fn ok(args: &[&str]) -> Vec<u8> {
    let o = sweep(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    o.stdout
}

/// The records of a CSV: header, rows.
fn parse(csv: &[u8]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(csv);
    let header = r.headers().unwrap().iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// The design's first sweep file, byte for byte.
const DESIGN: &str = include_str!("../fixtures/sweep/design.yaml");

/// A directory holding that file beside a `programs/` with the two programs it names
/// (its paths are relative to its directory).
fn design_dir(name: &str) -> PathBuf {
    let dir = scratch(&format!("sweep-{name}"));
    std::fs::create_dir_all(dir.join("programs")).unwrap();
    for p in ["vec_add_db.yaml", "matmul.yaml"] {
        std::fs::copy(
            root().join("programs").join(p),
            dir.join("programs").join(p),
        )
        .unwrap();
    }
    std::fs::write(dir.join("sweep.yaml"), DESIGN).unwrap();
    dir
}

/// The total cycles the pipeline gives for a program with these inputs, computed here with
/// the library (not by the command line whose output is checked).
fn cycles_of(program: &Path, params: &[(String, i64)], level: u8, ub: Option<u64>) -> u64 {
    let config = default_config();
    let text = std::fs::read_to_string(program).unwrap();
    let kernel = sim::load_kernel(&text, "p", &config, params, None).unwrap();
    let mut opts = pipeline::Options::default();
    opts.plan.max_level = level;
    if let Some(b) = ub {
        opts.plan.capacities = vec![(sim::Space::Ub, b)];
    }
    pipeline::simulate_kernel(&kernel, &config, &opts)
        .unwrap()
        .result
        .total_cycles
}

#[test]
fn the_design_example_runs_as_written_and_each_row_is_its_point() {
    let dir = design_dir("design");
    let file = dir.join("sweep.yaml");
    let out = ok(&["sweep", &file.to_string_lossy(), "-j", "2"]);
    let (header, rows) = parse(&out);
    let at = |name| col(&header, name);
    // vec_add_db: 2 tiles × 3 levels × 2 capacities; matmul declares no tiles and its cube
    // core has no UB: one point per level
    assert_eq!(rows.len(), 12 + 3);
    let mut expected = Vec::new();
    for tiles in [64, 128] {
        for level in [2, 1, 0] {
            for ub in [None, Some(128 * 1024)] {
                expected.push(("programs/vec_add_db.yaml", Some(tiles), level, ub));
            }
        }
    }
    for level in [2, 1, 0] {
        expected.push(("programs/matmul.yaml", None, level, None));
    }
    for (i, (row, (program, tiles, level, ub))) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(row[at("index")], i.to_string());
        assert_eq!(row[at("program")], *program);
        assert_eq!(row[at("config")], "ascend910b");
        assert_eq!(
            row[at("param_tiles")],
            tiles.map_or(String::new(), |t| t.to_string())
        );
        assert_eq!(row[at("level")], level.to_string());
        assert_eq!(
            row[at("capacity_ub")],
            ub.map_or(String::new(), |b: u64| b.to_string())
        );
        assert_eq!(row[at("status")], "ok", "point {i}: {}", row[at("message")]);
        let params: Vec<(String, i64)> = tiles.iter().map(|t| ("tiles".into(), *t)).collect();
        let cycles = cycles_of(&root().join(program), &params, *level, *ub);
        assert_eq!(row[at("cycles")], cycles.to_string(), "point {i}");
        // every point is a one-core run: the built-in launch cost 12,500 + 1 core x 340
        assert_eq!(
            row[at("end_to_end_cycles")],
            (cycles + 12_840).to_string(),
            "point {i}"
        );
        assert_eq!(row[at("hazards")], "0");
    }
    // the vector add's first core has V and UB; the matmul's has M and L0C
    let vec_row = &rows[0];
    assert!(!vec_row[at("v_busy")].is_empty() && vec_row[at("m_busy")].is_empty());
    assert!(!vec_row[at("ub_bytes")].is_empty() && vec_row[at("l0c_bytes")].is_empty());
    let mm = &rows[12];
    assert!(!mm[at("m_busy")].is_empty() && mm[at("v_busy")].is_empty());
    assert_eq!(mm[at("l0c_bytes")], "131072");
}

#[test]
fn the_same_bytes_whatever_j_and_in_shards_merged() {
    let dir = design_dir("shards");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    for format in ["csv", "jsonl"] {
        let one = ok(&["sweep", &file, "-j", "1", "--format", format]);
        let two = ok(&["sweep", &file, "-j", "2", "--format", format]);
        assert!(one == two, "{format}: -j 1 and -j 2 differ");
        let four = ok(&["sweep", &file, "-j", "4", "--format", format]);
        assert!(one == four, "{format}: -j 1 and -j 4 differ");
        // written with -o: the same bytes
        let o = dir.join(format!("all.{format}"));
        ok(&[
            "sweep",
            &file,
            "--format",
            format,
            "-o",
            &o.to_string_lossy(),
        ]);
        assert!(std::fs::read(&o).unwrap() == one);

        let parts: Vec<String> = (0..4)
            .map(|k| {
                let p = dir.join(format!("part-{k}.{format}"));
                let shard = format!("{k}/4");
                ok(&[
                    "sweep",
                    &file,
                    "--shard",
                    &shard,
                    "--format",
                    format,
                    "-o",
                    &p.to_string_lossy(),
                ]);
                p.to_string_lossy().into_owned()
            })
            .collect();
        // each part holds its shard's points, after the line naming the part
        let part0 = std::fs::read_to_string(&parts[0]).unwrap();
        assert!(part0.starts_with(&format!(
            "#npusim-sweep-part format={format} shard=0/4 points=15 sweep="
        )));
        let merged = dir.join(format!("merged.{format}"));
        let mut args = vec!["sweep", "--merge"];
        // any order of the parts
        args.extend(parts.iter().rev().map(String::as_str));
        let m = merged.to_string_lossy().into_owned();
        args.extend(["-o", &m]);
        ok(&args);
        assert!(
            std::fs::read(&merged).unwrap() == one,
            "{format}: merged differs"
        );
        // to stdout too
        let mut args = vec!["sweep", "--merge"];
        args.extend(parts.iter().map(String::as_str));
        assert!(ok(&args) == one);
    }
    // a shard of more shards than points is empty, and still merges
    let parts: Vec<String> = (0..16)
        .map(|k| {
            let p = dir.join(format!("p16-{k}.csv"));
            ok(&[
                "sweep",
                &file,
                "--shard",
                &format!("{k}/16"),
                "-o",
                &p.to_string_lossy(),
            ]);
            p.to_string_lossy().into_owned()
        })
        .collect();
    let mut args = vec!["sweep", "--merge"];
    args.extend(parts.iter().map(String::as_str));
    assert!(ok(&args) == ok(&["sweep", &file]));
}

/// Extra flags of a sweep, and the variables a scheduler sets.
type Flags<'a> = &'a [&'a str];
type Env<'a> = &'a [(&'a str, &'a str)];

#[test]
fn each_scheduler_names_the_same_shard() {
    let dir = design_dir("schedulers");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    let by_flag = ok(&["sweep", &file, "--shard", "2/3"]);
    let cases: [(Flags, Env); 5] = [
        (
            &[],
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
        ),
        // `sbatch --array=1-3`: ids from 1
        (
            &[],
            &[
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
        ),
        (&["--shards", "3"], &[("JOB_COMPLETION_INDEX", "2")]),
        (&["--shards", "3"], &[("HQ_TASK_ID", "2")]),
        (&["--shards", "3"], &[("SLURM_ARRAY_TASK_ID", "2")]),
    ];
    for (flags, env) in cases {
        let mut args = vec!["sweep", file.as_str()];
        args.extend_from_slice(flags);
        let o = npusim_env(&args, env);
        assert_eq!(o.status.code(), Some(0), "{env:?}: {}", stderr(&o));
        assert!(o.stdout == by_flag, "{env:?}: not shard 2/3");
        assert!(stderr(&o).contains("shard 2/3"), "{env:?}: {}", stderr(&o));
    }
    // bad values: exit 2, the variable named, nothing run
    let bad: [(Flags, Env, &str); 6] = [
        (
            &["--shards", "3"],
            &[("HQ_TASK_ID", "3")],
            "HQ_TASK_ID=3 is not below --shards 3",
        ),
        (
            &["--shards", "3"],
            &[("HQ_TASK_ID", "one")],
            "HQ_TASK_ID=`one` is not a shard index",
        ),
        (&["--shards", "3"], &[], "none of JOB_COMPLETION_INDEX"),
        (
            &["--shards", "3"],
            &[("HQ_TASK_ID", "1"), ("JOB_COMPLETION_INDEX", "2")],
            "disagree",
        ),
        (
            &[],
            &[("SLURM_ARRAY_TASK_ID", "2")],
            "SLURM_ARRAY_TASK_COUNT is not",
        ),
        (&["--shard", "3/3"], &[], "K must be below N"),
    ];
    for (flags, env, message) in bad {
        let mut args = vec!["sweep", file.as_str()];
        args.extend_from_slice(flags);
        let o = npusim_env(&args, env);
        assert_eq!(o.status.code(), Some(2), "{flags:?} {env:?}");
        assert!(
            stderr(&o).contains(message),
            "{flags:?} {env:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_missing_duplicated_or_foreign_part_is_named_and_nothing_is_written() {
    let dir = design_dir("merge");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    let part = |k: u32, n: u32, extra: &[&str]| {
        let p = dir.join(format!("p{k}of{n}{}.csv", extra.join("")));
        let mut args = vec!["sweep", file.as_str(), "--shard"];
        let shard = format!("{k}/{n}");
        args.push(&shard);
        args.extend_from_slice(extra);
        let o = p.to_string_lossy().into_owned();
        args.extend(["-o", &o]);
        ok(&args);
        o
    };
    let (p0, p1, p2) = (part(0, 3, &[]), part(1, 3, &[]), part(2, 3, &[]));
    // the same sweep run with other options is another sweep
    let other = part(2, 3, &["--no-race-check"]);
    let merged = dir.join("merged.csv");
    let m = merged.to_string_lossy().into_owned();
    let cases: [(Vec<&str>, Vec<String>); 3] = [
        (
            vec![&p0, &p2],
            vec!["shard 1/3 is missing (its part holds points 1, 4, 7, 10, ...".into()],
        ),
        (
            vec![&p0, &p1, &p2, &p1],
            vec![format!("shard 1/3 is given twice: {p1} and {p1}")],
        ),
        (
            vec![&p0, &p1, &other],
            vec![format!(
                "{p0} and {other} are parts of different sweeps: fingerprints"
            )],
        ),
    ];
    for (parts, messages) in cases {
        let mut args = vec!["sweep", "--merge"];
        args.extend(parts.iter().copied());
        args.extend(["-o", &m]);
        let o = sweep(&args);
        assert_eq!(o.status.code(), Some(2), "{parts:?}");
        for message in &messages {
            assert!(
                stderr(&o).contains(message.as_str()),
                "{parts:?}: {}",
                stderr(&o)
            );
        }
        assert!(!merged.exists(), "{parts:?}: a merged file was written");
    }
    // a part that lost its last point and its end line (a run stopped early), or holds one
    // twice (a row copied below the end line)
    let text = std::fs::read_to_string(&p1).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let short = dir.join("short.csv");
    std::fs::write(&short, format!("{}\n", lines[..lines.len() - 2].join("\n"))).unwrap();
    let twice = dir.join("twice.csv");
    std::fs::write(&twice, format!("{text}{}\n", lines[2])).unwrap();
    let s = short.to_string_lossy().into_owned();
    let t = twice.to_string_lossy().into_owned();
    // the file's lines: the part line, the header, 5 rows (points 1, 4, 7, 10, 13), the end
    // line; short.csv has 6 lines, twice.csv its copied row on line 9
    for (part, messages) in [
        (
            &s,
            [
                format!("{s}:6: the part has no end line"),
                format!("{s}: shard 1/3 lacks point 13"),
            ],
        ),
        (
            &t,
            [
                format!("{t}:9: a row after the part's end line"),
                format!("{t}: point 1 appears twice"),
            ],
        ),
    ] {
        let o = sweep(&["sweep", "--merge", &p0, part, &p2]);
        assert_eq!(o.status.code(), Some(2));
        for message in messages {
            assert!(stderr(&o).contains(&message), "{}", stderr(&o));
        }
    }
    // the output of a whole sweep is not a part
    let whole = dir.join("whole.csv");
    ok(&["sweep", &file, "-o", &whole.to_string_lossy()]);
    let o = sweep(&["sweep", "--merge", &whole.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a part of a sharded sweep"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn failing_points_are_recorded_and_the_sweep_goes_on() {
    let dir = scratch("sweep-failing");
    let file = dir.join("s.yaml");
    let p = |rel: &str| root().join(rel).to_string_lossy().into_owned();
    std::fs::write(
        &file,
        format!(
            "programs: [{}, {}]\nparams: {{ n: [1024, -4] }}\ncapacities: [{{}}, {{ ub: 32KiB }}]\n",
            p("programs/vec_add_db.yaml"),
            p("tests/fixtures/unpaired.yaml")
        ),
    )
    .unwrap();
    let out = ok(&["sweep", &file.to_string_lossy()]);
    let (header, rows) = parse(&out);
    let at = |name| col(&header, name);
    let status: Vec<&str> = rows.iter().map(|r| r[at("status")].as_str()).collect();
    // vec_add_db n=1024 (fits 32 KiB too), n=-4 (does not load) twice; unpaired: always its
    // unpaired set_flag
    assert_eq!(
        status,
        ["ok", "ok", "error", "error", "finding", "finding", "error", "error"]
    );
    // the message of a finding is the line `npusim run` prints for it (the program named as the
    // sweep file names it)
    let unpaired = p("tests/fixtures/unpaired.yaml");
    let run = crate::npusim(&["run", &unpaired, "--param", "n=1024"]);
    let line = stderr(&run)
        .lines()
        .find(|l| l.starts_with("finding: "))
        .unwrap()
        .to_string();
    assert_eq!(rows[4][at("message")], line);
    assert_eq!(rows[4][at("findings")], "1");
    // the load error of n=-4, located in the program: the whole diagnostic, commas and all
    let m = &rows[2][at("message")];
    assert!(
        m.starts_with(&format!("{}:", p("programs/vec_add_db.yaml"))),
        "{m}"
    );
    assert!(rows[2][at("cycles")].is_empty());
    // an overflow is a finding: the HIVM message (several lines) survives the CSV quoting
    let file2 = dir.join("overflow.yaml");
    std::fs::write(
        &file2,
        format!(
            "programs: [{}]\ncapacities: [{{ ub: 64KiB }}]\n",
            p("programs/vec_add_db.yaml")
        ),
    )
    .unwrap();
    let (header, rows) = parse(&ok(&["sweep", &file2.to_string_lossy()]));
    let message = &rows[0][col(&header, "message")];
    assert_eq!(rows[0][col(&header, "status")], "finding");
    assert!(
        message.contains("ub overflow, requires") && message.lines().count() > 2,
        "{message}"
    );
}

#[test]
fn jsonl_carries_the_run_document_of_each_point() {
    let dir = design_dir("jsonl");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    let out = String::from_utf8(ok(&["sweep", &file, "--format", "jsonl"])).unwrap();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 15);
    let p = &lines[7];
    assert_eq!(p["index"], 7);
    assert_eq!(p["params"], serde_json::json!({ "tiles": 128 }));
    assert_eq!(
        (p["level"].as_u64(), p["status"].as_str()),
        (Some(2), Some("ok"))
    );
    assert_eq!(p["capacities"], serde_json::json!({ "ub": 131072 }));
    // the run document `npusim run` writes for the same inputs (a sweep does not follow the
    // critical path: no "paced by")
    let run = crate::json_of(
        "run",
        &[
            "programs/vec_add_db.yaml",
            "--param",
            "tiles=128",
            "--level",
            "2",
            "--capacity",
            "ub=128KiB",
            "--no-critical-path",
        ],
    );
    assert_eq!(p["run"], run);
    assert_eq!(lines[12]["params"], serde_json::json!({}));
    assert_eq!(lines[12]["program"], "programs/matmul.yaml");
}

#[test]
fn dry_run_lists_the_points_and_runs_none() {
    let dir = design_dir("dry");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    let (header, rows) = parse(&ok(&["sweep", &file, "--dry-run"]));
    assert_eq!(
        header,
        [
            "index",
            "program",
            "config",
            "param_tiles",
            "level",
            "capacity_ub",
            "blocks",
            "l2"
        ]
    );
    assert_eq!(rows.len(), 15);
    let (_, shard) = parse(&ok(&["sweep", &file, "--dry-run", "--shard", "1/4"]));
    let indices: Vec<&str> = shard.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(indices, ["1", "5", "9", "13"]);
    assert_eq!(shard[3], rows[13]);
}

/// `text` without white space and miette's gutter: miette wraps a message that quotes a long
/// path (a clone in a deep directory), and what a test looks for must not depend on that.
fn flat(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

/// Bad sweep files: exit 2, every problem at its place (`[FILE:LINE:COL]` in the snippet),
/// nothing written.
#[test]
fn bad_sweep_files_are_refused_at_their_place() {
    let dir = scratch("sweep-bad");
    let vec_add = root().join("programs/vec_add_db.yaml");
    let v = vec_add.to_string_lossy();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "unknown_key",
            format!("programs: [{v}]\nlevles: [2]\n"),
            vec![
                "unknown key \"levles\" in a sweep file",
                ":2:9]",
                "did you mean \"levels\"?",
            ],
        ),
        (
            "not_a_list",
            format!("programs: [{v}]\nlevels: 2\n"),
            vec!["expected a list, found 2", ":2:9]", "`levels: [2]`"],
        ),
        (
            "missing_program",
            "programs: [nosuch.yaml]\n".to_string(),
            vec![
                "cannot read program file",
                "nosuch.yaml",
                ":1:12]",
                "relative to the sweep file's directory",
            ],
        ),
        (
            "bad_capacity",
            format!("programs: [{v}]\ncapacities: [{{ ub: 12QB }}, {{ gm: 1KiB }}]\n"),
            vec![
                "unknown size unit `QB`",
                "not an on-chip scope",
                "2 problems",
            ],
        ),
        (
            "unknown_param",
            format!("programs: [{v}]\nparams: {{ tile: [1] }}\n"),
            vec![
                "no program of the sweep declares the param `tile`",
                "did you mean `tiles`?",
            ],
        ),
        (
            "several",
            format!("programs: [{v}, {v}]\nlevels: [3]\nl2: [hot]\nconfigs: [ascend]\n"),
            vec![
                "listed twice",
                "3 is too large (at most 2)",
                "unknown L2 state \"hot\"",
                "unknown config `ascend`",
                "4 problems",
            ],
        ),
        (
            "syntax",
            "programs: [a.yaml\n".to_string(),
            vec!["YAML syntax error"],
        ),
    ];
    for (name, text, messages) in cases {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let out = dir.join(format!("{name}.csv"));
        let o = sweep(&[
            "sweep",
            &file.to_string_lossy(),
            "-o",
            &out.to_string_lossy(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = stderr(&o);
        for m in messages {
            assert!(flat(&err).contains(&flat(m)), "{name}: no `{m}` in\n{err}");
        }
        assert!(!err.contains("panicked"), "{name}");
        assert!(!out.exists(), "{name}: wrote {}", out.display());
    }
    // a program that does not load: its own problems, in its own file
    let broken = dir.join("broken.yaml");
    std::fs::write(&broken, "kernel: k\ncore: aiv\nbody: [{ nosuchop: 1 }]\n").unwrap();
    let file = dir.join("broken_program.yaml");
    std::fs::write(&file, "programs: [broken.yaml]\n").unwrap();
    let o = sweep(&["sweep", &file.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("broken.yaml:3:"), "{}", stderr(&o));
    assert_eq!(
        files_in(&dir)
            .iter()
            .filter(|f| f.ends_with(".csv"))
            .count(),
        0
    );
}

/// The points a plot of `x` × `by` draws for the rows of one program: one per distinct
/// (x, by) with an ok row, counted from the CSV.
fn plotted(header: &[String], rows: &[Vec<String>], program: &str, x: &str, by: &str) -> usize {
    let (p, s, xc, bc) = (
        col(header, "program"),
        col(header, "status"),
        col(header, x),
        col(header, by),
    );
    let mut seen: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r[p] == program && r[s] == "ok")
        .map(|r| (r[xc].as_str(), r[bc].as_str()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.len()
}

#[test]
fn the_summary_and_its_page_show_the_best_points() {
    let dir = scratch("sweep-summary");
    let results = dir.join("results.csv");
    let r = results.to_string_lossy().into_owned();
    ok(&["sweep", "programs/sweeps/example.yaml", "-o", &r]);
    let page = dir.join("plot.html");
    let text = String::from_utf8(ok(&[
        "sweep",
        "--summary",
        &r,
        "--html",
        &page.to_string_lossy(),
    ]))
    .unwrap();
    let (header, rows) = parse(&std::fs::read(&results).unwrap());
    // the best vec_add_db point, found here from the rows
    let (p, s, c, i) = (
        col(&header, "program"),
        col(&header, "status"),
        col(&header, "cycles"),
        col(&header, "index"),
    );
    let best = rows
        .iter()
        .filter(|r| r[p] == "../vec_add_db.yaml" && r[s] == "ok")
        .min_by_key(|r| r[c].parse::<u64>().unwrap())
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("../vec_add_db.yaml "))
        .unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        (fields[1], fields[2]),
        (best[i].as_str(), best[c].as_str()),
        "{text}"
    );
    assert!(text.contains("n \\ level"), "{text}");

    if let Some(chromium) = browser("sweep_cli::the_summary_and_its_page_show_the_best_points") {
        let loaded = load(&chromium, &page);
        assert_clean("sweep page", &loaded);
        let expected = plotted(&header, &rows, "../vec_add_db.yaml", "param_n", "level")
            + plotted(&header, &rows, "../matmul.yaml", "param_kt", "level");
        assert_eq!(
            loaded.dom.matches("<path class=\"point\"").count(),
            expected
        );
        // every point that did not run ok is listed, in the CSV's order, with its message's
        // first line (the example's overflows at ub: 64KiB)
        let m = col(&header, "message");
        let failed: Vec<&Vec<String>> = rows.iter().filter(|r| r[s] != "ok").collect();
        assert!(!failed.is_empty(), "the example sweep has failed points");
        assert_eq!(
            loaded.dom.matches("<tr class=\"failed\">").count(),
            failed.len()
        );
        let mut at = 0;
        for r in &failed {
            let first = r[m].lines().next().unwrap();
            let row = format!(
                "<tr class=\"failed\"><td>{}</td><td>{}</td><td class=\"bad\">{}</td>",
                r[i], r[p], r[s]
            );
            let found = loaded.dom[at..]
                .find(&row)
                .unwrap_or_else(|| panic!("point {} is not listed (in order)", r[i]));
            at += found;
            let end = at + loaded.dom[at..].find("</tr>").unwrap();
            assert!(
                loaded.dom[at..end].contains(first),
                "point {}: no `{first}`",
                r[i]
            );
        }
        // `#log` opens the plots on the log scale: the script moved every point there
        let log = load_at(&chromium, &page, "#log");
        assert_clean("sweep page, log scale", &log);
        assert_eq!(log.dom.matches(" data-scale=\"log\" viewBox").count(), 2);
        let moved = log
            .dom
            .split("<path class=\"point\"")
            .skip(1)
            .filter(|p| {
                let attr = |name: &str| {
                    let start = p.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    &p[start..start + p[start..].find('"').unwrap()]
                };
                attr("transform") == format!("translate({})", attr("data-log"))
            })
            .count();
        assert_eq!(moved, expected);
    }

    // --x and --by choose the axes; an unknown column is bad input naming the inputs
    let o = sweep(&["sweep", "--summary", &r, "--x", "ub", "--by", "n"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ub \\ n"));
    let o = sweep(&["sweep", "--summary", &r, "--x", "tiles"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no input column `tiles`; the inputs of this sweep are config, n, kt, level, ub, blocks, l2"), "{}", stderr(&o));
}

#[test]
fn progress_goes_to_stderr_in_plain_lines_off_a_terminal() {
    let o = sweep(&["sweep", "programs/sweeps/example.yaml", "-j", "2"]);
    assert_eq!(o.status.code(), Some(0));
    let (header, rows) = parse(&o.stdout);
    let count = |status: &str| {
        let s = col(&header, "status");
        rows.iter().filter(|r| r[s] == status).count()
    };
    let n = rows.len();
    let err = stderr(&o);
    // a line at every tenth of the points, the last at 100 %, then the closing line
    assert_eq!(
        err.lines().filter(|l| l.contains(" points (")).count(),
        10,
        "{err}"
    );
    assert!(
        err.contains(&format!("sweep: {n}/{n} points (100 %)")),
        "{err}"
    );
    let closing = format!(
        "on 2 workers: {} ok, {} finding, {} error",
        count("ok"),
        count("finding"),
        count("error")
    );
    assert!(err.contains(&format!("sweep: {n} points in ")), "{err}");
    assert!(err.contains(&closing), "{err}");
}

/// A scheduler variable that is set but is not UTF-8 is an error naming it, not "unset" (which
/// would run the whole sweep in every task of the array).
#[test]
fn a_scheduler_variable_that_is_not_utf8_is_refused() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = design_dir("not-utf8");
    let file = dir.join("sweep.yaml").to_string_lossy().into_owned();
    for (var, flags) in [
        ("HQ_TASK_ID", &["--shards", "3"][..]),
        ("SLURM_ARRAY_TASK_ID", &[][..]),
    ] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_npusim"));
        c.args(["sweep", &file]).args(flags).current_dir(root());
        for v in SCHEDULER_VARS {
            c.env_remove(v);
        }
        // `2` then 0xff, a byte no UTF-8 text holds
        c.env(var, OsStr::from_bytes(b"2\xff"));
        c.env("SLURM_ARRAY_TASK_COUNT", "3");
        let o = c.output().expect("npusim runs");
        assert_eq!(o.status.code(), Some(2), "{var}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{var}: something ran");
        insta::assert_snapshot!(format!("not_utf8_{var}"), stderr(&o));
    }
}
