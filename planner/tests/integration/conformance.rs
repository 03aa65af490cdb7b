//! The HIVM PlanMemory conformance suite (`planner/tests/conformance/`): the 60 tabulated cases
//! of HIVM's `plan-memory.mlir` (docs/sources.md, HIVM-PM-TEST; `tests/conformance/README.md`) as npusim programs, with their
//! expected results in `expected.yaml`. See `planner/tests/conformance/README.md`.
//!
//! For now these tests check the suite itself: 60 cases, every expressible case has a program
//! that loads against the conformance config (or fails to load with the expected error, for the
//! read-before-write case), and every program on disk is listed. The planner assertions (offsets,
//! ties, relations, errors, warnings) are added when the reuse planner exists; they read the
//! same [`expectations`].
#![allow(dead_code)]

use sim::yaml::{self, Node, Value};
use std::path::{Path, PathBuf};

/// How faithfully a case is translated (README.md, column "status").
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// The program is the HIVM test, op for op.
    Exact,
    /// The program differs in a way stated in its header and in `approximation`.
    Approx,
    /// No program: a feature our format lacks (`gap` says which).
    NotExpressible,
}

/// One alternative of a TIE: either a full offset map or a set of relations.
#[derive(Clone, PartialEq, Debug)]
pub enum Tie {
    Offsets(Vec<(String, Vec<u64>)>),
    Relations(Vec<String>),
}

/// One case of `expected.yaml`.
#[derive(Clone, PartialEq, Debug)]
pub struct Case {
    /// `T01` ... `T79`.
    pub id: String,
    /// The HIVM test function name.
    pub name: String,
    /// The program file, relative to the suite directory; `None` when not expressible.
    pub file: Option<String>,
    /// `seq`, `reuse` or `err` (the mode the HIVM test exercises).
    pub mode: String,
    pub status: Status,
    /// The plan must succeed (cases that pin no offsets).
    pub success: bool,
    /// Pinned offsets per buffer, one per slot.
    pub offsets: Vec<(String, Vec<u64>)>,
    /// When non-empty, the result must match one of these alternatives (the pinned `offsets`
    /// are the reference's choice, and one of them).
    pub tie: Vec<Tie>,
    /// Relations between offsets that must hold (README.md, "Relations").
    pub relations: Vec<String>,
    /// Relations the reference shows but our program format rules out (not asserted).
    pub unasserted: Vec<String>,
    /// The expected error text (a prefix of the planner's message, or a substring of the
    /// loader's for `load_error` cases).
    pub error: Option<String>,
    /// The error is found by `sim::load_program` itself.
    pub load_error: bool,
    /// The expected DMA-reuse warning text.
    pub warning: Option<String>,
    /// The feature missing from our format (not-expressible cases).
    pub gap: Option<String>,
    pub note: Option<String>,
    /// The liveness mode the case is planned with: `scoped` (HIVM's, the default) or
    /// `precise` (the unstructured-control-flow cases, where HIVM uses MLIR's block liveness).
    pub liveness: planner::LivenessMode,
}

/// The suite directory.
pub fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(case: &str, node: &Node, key: &str) -> Option<String> {
    let other = node.get(key)?;
    match &other.value {
        Value::Null => None,
        Value::Str(s) => Some(s.clone()),
        _ => panic!("{case}.{key}: expected a string, found {}", other.kind()),
    }
}

fn flag(case: &str, node: &Node, key: &str) -> bool {
    match node.get(key).map(|n| (n, &n.value)) {
        None => false,
        Some((_, Value::Bool(b))) => *b,
        Some((other, _)) => panic!("{case}.{key}: expected a boolean, found {}", other.kind()),
    }
}

fn strings(case: &str, node: Option<&Node>, key: &str) -> Vec<String> {
    match node.map(|n| (n, &n.value)) {
        None => vec![],
        Some((_, Value::Seq(items))) => items
            .iter()
            .map(|n| match &n.value {
                Value::Str(s) => s.clone(),
                _ => panic!("{case}.{key}: expected strings, found {}", n.kind()),
            })
            .collect(),
        Some((other, _)) => panic!("{case}.{key}: expected a list, found {}", other.kind()),
    }
}

fn offset_map(case: &str, node: &Node, key: &str) -> Vec<(String, Vec<u64>)> {
    let Value::Map(entries) = &node.value else {
        panic!(
            "{case}.{key}: expected a map of buffer -> [offsets], found {}",
            node.kind()
        );
    };
    entries
        .iter()
        .map(|(buf, v)| {
            let Value::Seq(items) = &v.value else {
                panic!("{case}.{key}.{buf}: expected a list of offsets");
            };
            let offs = items
                .iter()
                .map(|o| match &o.value {
                    Value::Int(i) if *i >= 0 => *i as u64,
                    other => panic!("{case}.{key}.{buf}: bad offset {other:?}"),
                })
                .collect();
            (buf.clone(), offs)
        })
        .collect()
}

/// Parses `expected.yaml` into its cases, in file order.
pub fn expectations() -> Vec<Case> {
    let path = suite_dir().join("expected.yaml");
    let root =
        yaml::parse(&read(&path)).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    let Value::Map(entries) = root.value else {
        panic!("expected.yaml: expected a map of case id -> case");
    };
    entries
        .iter()
        .map(|(id, n)| {
            let status = match text(id, n, "status").as_deref() {
                Some("exact") => Status::Exact,
                Some("approx") => Status::Approx,
                Some("none") => Status::NotExpressible,
                other => panic!("{id}.status: unknown {other:?}"),
            };
            let tie = match n.get("tie").map(|t| &t.value) {
                None => vec![],
                Some(Value::Seq(alts)) => alts
                    .iter()
                    .map(|a| match &a.value {
                        Value::Map(_) => Tie::Offsets(offset_map(id, a, "tie")),
                        Value::Seq(_) => Tie::Relations(strings(id, Some(a), "tie")),
                        _ => panic!("{id}.tie: bad alternative {}", a.kind()),
                    })
                    .collect(),
                Some(_) => panic!("{id}.tie: expected a list"),
            };
            Case {
                id: id.clone(),
                name: text(id, n, "name").unwrap_or_else(|| panic!("{id}: no name")),
                file: text(id, n, "file"),
                mode: text(id, n, "mode").unwrap_or_else(|| panic!("{id}: no mode")),
                status,
                success: flag(id, n, "success"),
                offsets: n
                    .get("offsets")
                    .map(|o| offset_map(id, o, "offsets"))
                    .unwrap_or_default(),
                tie,
                relations: strings(id, n.get("relations"), "relations"),
                unasserted: strings(id, n.get("unasserted"), "unasserted"),
                error: text(id, n, "error"),
                load_error: flag(id, n, "load_error"),
                warning: text(id, n, "warning"),
                gap: text(id, n, "gap"),
                note: text(id, n, "note"),
                liveness: match text(id, n, "liveness").as_deref() {
                    None | Some("scoped") => planner::LivenessMode::Scoped,
                    Some("precise") => planner::LivenessMode::Precise,
                    Some(other) => panic!("{id}.liveness: unknown {other}"),
                },
            }
        })
        .collect()
}

fn conformance_config() -> sim::Config {
    let path = suite_dir().join("config.yaml");
    sim::load_config(&read(&path), "conformance/config.yaml")
        .unwrap_or_else(|e| panic!("conformance config does not load: {e:?}"))
}

#[test]
fn expected_yaml_lists_the_60_cases_once_each() {
    let cases = expectations();
    assert_eq!(cases.len(), 60, "the conformance table lists 60 cases");
    let mut ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 60, "duplicate case ids");
    for c in &cases {
        assert!(
            matches!(c.mode.as_str(), "seq" | "reuse" | "err"),
            "{}: mode {}",
            c.id,
            c.mode
        );
        match c.status {
            Status::NotExpressible => {
                assert!(c.file.is_none(), "{}: not expressible but has a file", c.id);
                assert!(c.gap.is_some(), "{}: not expressible needs a gap", c.id);
            }
            _ => {
                let f = c
                    .file
                    .as_deref()
                    .unwrap_or_else(|| panic!("{}: no file", c.id));
                assert_eq!(
                    f,
                    format!("{}_{}.yaml", c.id, c.name),
                    "{}: file name",
                    c.id
                );
            }
        }
        if c.mode == "err" {
            assert!(c.error.is_some(), "{}: an err case needs error:", c.id);
        }
        if let Some(Tie::Offsets(_)) = c.tie.first() {
            let pinned = Tie::Offsets(c.offsets.clone());
            assert!(
                c.tie.contains(&pinned),
                "{}: the pinned offsets are not a tie alternative",
                c.id
            );
        }
    }
}

#[test]
fn every_program_on_disk_is_a_listed_case() {
    let listed: Vec<String> = expectations().into_iter().filter_map(|c| c.file).collect();
    let dir = suite_dir();
    let mut on_disk = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with('T') && name.ends_with(".yaml") {
            on_disk += 1;
            assert!(listed.contains(&name), "{name} is not in expected.yaml");
        }
    }
    assert_eq!(on_disk, listed.len());
}

#[test]
fn expressible_programs_load_against_the_conformance_config() {
    let config = conformance_config();
    let mut loaded = 0;
    for c in expectations() {
        let Some(file) = &c.file else { continue };
        let path = suite_dir().join(file);
        let result = sim::load_program(&read(&path), file, &config, &[]);
        if c.load_error {
            let err = match result {
                Ok(_) => panic!("{}: expected a load error, the program loaded", c.id),
                Err(e) => e,
            };
            let want = c.error.as_deref().expect("load_error needs error:");
            assert!(
                err.diagnostics.iter().any(|d| d.message.contains(want)),
                "{}: no diagnostic contains {want:?}: {:?}",
                c.id,
                err.diagnostics
            );
        } else {
            let p = result.unwrap_or_else(|e| panic!("{}: {file} does not load: {e:?}", c.id));
            assert_eq!(config.core(p.core).name, "mix", "{}", c.id);
            assert_eq!(p.kernel, c.name, "{}", c.id);
            // every buffer the expectations name exists in the program
            let names: Vec<&str> = p.buffers.iter().map(|b| b.name.as_str()).collect();
            let mut named: Vec<&str> = c.offsets.iter().map(|(b, _)| b.as_str()).collect();
            for t in &c.tie {
                if let Tie::Offsets(m) = t {
                    named.extend(m.iter().map(|(b, _)| b.as_str()));
                }
            }
            for b in named {
                assert!(
                    names.contains(&b),
                    "{}: expected.yaml names unknown buffer {b}",
                    c.id
                );
            }
        }
        loaded += 1;
    }
    assert_eq!(loaded, 48, "programs in the suite (README.md counts)");
}

/// One relation of `expected.yaml` (README.md, "Relations") checked against a plan.
fn relation_holds(case: &str, rel: &str, offsets: &dyn Fn(&str) -> Vec<u64>) -> Result<(), String> {
    let rel = rel.trim();
    if let Some(rest) = rel.strip_prefix("set(") {
        let (names, values) = rest
            .split_once(") ==")
            .unwrap_or_else(|| panic!("{case}: bad relation {rel}"));
        let mut got: Vec<u64> = names.split(',').map(|n| offsets(n.trim())[0]).collect();
        let mut want: Vec<u64> = values
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .split(',')
            .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{case}: {rel}")))
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        return if got == want {
            Ok(())
        } else {
            Err(format!("{rel}: slot-0 offsets are {got:?}"))
        };
    }
    let (a, b, equal) = if let Some((a, b)) = rel.split_once("==") {
        (a, b, true)
    } else if let Some((a, b)) = rel.split_once("!=") {
        (a, b, false)
    } else {
        panic!("{case}: bad relation {rel}");
    };
    let (oa, ob) = (offsets(a.trim()), offsets(b.trim()));
    if (oa == ob) == equal {
        Ok(())
    } else {
        Err(format!("{rel}: {} {oa:?}, {} {ob:?}", a.trim(), b.trim()))
    }
}

/// Every assertion `expected.yaml` makes about one case, against npusim's planner with HIVM's
/// scoped liveness on the conformance config (910B1 capacities). `Ok(())` when the case
/// reproduces exactly; otherwise every mismatch.
fn check_case(c: &Case, config: &sim::Config) -> Result<(), Vec<String>> {
    let file = c.file.as_deref().expect("expressible");
    let program = sim::load_program(&read(&suite_dir().join(file)), file, config, &[])
        .unwrap_or_else(|e| panic!("{}: {e}", c.id));
    let opts = planner::PlanOptions {
        liveness: c.liveness,
        ..Default::default()
    };
    let mut bad = Vec::new();
    let planned = match planner::plan_program(&program, config, &opts) {
        Err(e) => {
            let text = e.to_string();
            match &c.error {
                Some(want) if text.starts_with(want.as_str()) => return Ok(()),
                Some(want) => return Err(vec![format!("error {text:?}, expected {want:?}")]),
                None => return Err(vec![format!("planning failed: {text}")]),
            }
        }
        Ok(p) => p,
    };
    if let Some(want) = &c.error {
        bad.push(format!("planned, expected the error {want:?}"));
    }
    if let Err(v) = planned.validate(&program, config) {
        bad.push(format!("the validator rejects the plan: {v:?}"));
    }
    let offsets = |name: &str| -> Vec<u64> {
        let i = program
            .buffers
            .iter()
            .position(|b| b.name == name)
            .unwrap_or_else(|| panic!("{}: no buffer {name}", c.id));
        planned.plan.buffers[i].offsets.clone()
    };
    let map_matches = |m: &[(String, Vec<u64>)]| m.iter().all(|(b, o)| offsets(b) == *o);
    if c.tie.is_empty() {
        for (b, want) in &c.offsets {
            let got = offsets(b);
            if got != *want {
                bad.push(format!("{b}: offsets {got:?}, expected {want:?}"));
            }
        }
    } else {
        let any = c.tie.iter().any(|t| match t {
            Tie::Offsets(m) => map_matches(m),
            Tie::Relations(rs) => rs
                .iter()
                .all(|r| relation_holds(&c.id, r, &offsets).is_ok()),
        });
        if !any {
            let got: Vec<String> = program
                .buffers
                .iter()
                .map(|b| format!("{} {:?}", b.name, offsets(&b.name)))
                .collect();
            bad.push(format!("no TIE alternative holds; got {}", got.join(", ")));
        }
    }
    for r in &c.relations {
        if let Err(e) = relation_holds(&c.id, r, &offsets) {
            bad.push(e);
        }
    }
    match &c.warning {
        Some(w) if !planned.plan.warnings.contains(w) => bad.push(format!(
            "warning {w:?} missing; warnings {:?}",
            planned.plan.warnings
        )),
        _ => {}
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad)
    }
}

#[test]
fn every_expressible_case_reproduces_hivm() {
    let config = conformance_config();
    let mut reproduced = Vec::new();
    let mut failed = Vec::new();
    for c in expectations() {
        if c.file.is_none() || c.load_error {
            continue;
        }
        match check_case(&c, &config) {
            Ok(()) => reproduced.push(c.id.clone()),
            Err(why) => failed.push(format!("{}: {}", c.id, why.join("; "))),
        }
    }
    assert!(
        failed.is_empty(),
        "{} reproduce, {} do not:\n{}",
        reproduced.len(),
        failed.len(),
        failed.join("\n")
    );
    // 48 programs, less T46 (a load error, checked above)
    assert_eq!(reproduced.len(), 47);
}

/// HIVM gens a storage entry where its lifetime starts (`GenerateStorageEntry`): with scoped
/// liveness a buffer declared outside a loop and first written inside it is live from the
/// loop's begin, so it is gen'd there, before the tile the loop writes first, and the
/// sequential (no-reuse) running sum places it first. With precise liveness its lifetime starts
/// at its first write, after the tile's.
#[test]
fn scoped_live_in_is_gend_at_the_loop_begin() {
    let p = crate::load(
        "kernel: k\ncore: aiv\nsync: manual\n\
         gm:\n  x: { shape: [4, 1024], dtype: f16 }\n  y: { shape: [4, 1024], dtype: f16 }\n\
         buffers:\n  acc: { scope: ub, shape: [1024], dtype: f16 }\n\
         body:\n\
         \x20 - for: { var: i, to: 4 }\n    buffers:\n      t: { scope: ub, shape: [1024], dtype: f16 }\n\
         \x20   body:\n\
         \x20     - load: { src: \"x[i]\", dst: t }\n\
         \x20     - vadd: { ins: [t, t], out: acc }\n\
         \x20 - store: { src: acc, dst: \"y[0]\" }\n",
    );
    let offsets = |mode| {
        let opts = planner::PlanOptions {
            liveness: mode,
            ..Default::default()
        };
        let plan = planner::plan_program(&p, &crate::config(), &opts)
            .unwrap()
            .plan;
        let at = |name| plan.buffers[crate::buf(&p, name).index()].offsets.clone();
        (at("t"), at("acc"))
    };
    // 1024 f16 = 2048 bytes each, sequential (4096 bytes fit): a running sum in gen order
    assert_eq!(
        offsets(planner::LivenessMode::Precise),
        (vec![0], vec![2048])
    );
    assert_eq!(
        offsets(planner::LivenessMode::Scoped),
        (vec![2048], vec![0])
    );
}
