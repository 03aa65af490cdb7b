//! The race checker (docs/race.md) on realistic programs: the shipped manual programs
//! are race-free with every buffer slot side by side; removing one of vec_add_db's waits, moving
//! a buffer onto another's bytes or collapsing the slots of a multi-buffer produces exactly the
//! hazard that the wait, the separate bytes or the slot prevented; small programs cover each
//! kind of ordering (barrier on a pipe, set/wait, S program order, `barrier: all`, the mmad_l1
//! macro) and each hazard class.

use sim::engine::{run_observed, Issue, Observer};
use sim::race::{self, Hazard, HazardKind, Memory, RaceChecker};
use sim::{Addresses, Config, Pipe, Program};

fn config() -> Config {
    let name = sim::builtin::DEFAULT;
    sim::load_config(sim::builtin::builtin(name).unwrap(), name).expect("built-in config loads")
}

fn load(name: &str, text: &str) -> Program {
    sim::load_program(text, name, &config(), &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn shipped(name: &str) -> String {
    let path = format!("{}/../programs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/race/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every slot of every buffer side by side, per scope, in declaration order (a running sum,
/// slots rounded up to 32 bytes).
fn sequential(program: &Program) -> (Vec<Vec<u64>>, Vec<u64>) {
    let mut next = [0u64; sim::Space::COUNT];
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    for b in &program.buffers {
        let size = b.bytes.div_ceil(32) * 32;
        let at = &mut next[b.scope.index()];
        offsets.push(
            (0..b.multi)
                .map(|_| {
                    let o = *at;
                    *at += size;
                    o
                })
                .collect(),
        );
        sizes.push(size);
    }
    (offsets, sizes)
}

fn buffer(program: &Program, name: &str) -> usize {
    program
        .buffers
        .iter()
        .position(|b| b.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"))
}

fn race_run(program: &Program, offsets: &[Vec<u64>], sizes: &[u64]) -> race::RaceRun {
    let addresses = Addresses {
        offsets: offsets.to_vec(),
        slot_bytes: sizes.to_vec(),
    };
    race::check(program, &config(), &addresses).expect("the program runs")
}

/// The hazards of a run that must complete.
fn check_at(program: &Program, offsets: &[Vec<u64>], sizes: &[u64]) -> Vec<Hazard> {
    let run = race_run(program, offsets, sizes);
    assert!(run.result.deadlock.is_none(), "{:?}", run.result.deadlock);
    run.hazards
}

/// The hazards of vec_add_db without one wait. The set that wait consumed stays set, so the
/// next set of that flag is a double set that is lost, and the run deadlocks a few tiles
/// later; the hazard shows up in the first tiles, before that.
fn check_cut(program: &Program) -> Vec<Hazard> {
    let (offsets, sizes) = sequential(program);
    let run = race_run(program, &offsets, &sizes);
    assert!(run
        .result
        .findings
        .iter()
        .any(|f| matches!(f, sim::engine::SyncFinding::DoubleSet { .. })));
    run.hazards
}

fn check(program: &Program) -> Vec<Hazard> {
    let (offsets, sizes) = sequential(program);
    check_at(program, &offsets, &sizes)
}

/// (class, memory, first "PIPE op r/w", second "PIPE op r/w"), one per hazard.
fn summary(hazards: &[Hazard]) -> Vec<(HazardKind, String, String, String)> {
    let side = |a: &race::HazardAccess| {
        format!(
            "{} {} {}",
            a.pipe.report_name(),
            a.name,
            if a.write { "w" } else { "r" }
        )
    };
    hazards
        .iter()
        .map(|h| {
            (
                h.kind,
                h.memory_label.clone(),
                side(&h.first),
                side(&h.second),
            )
        })
        .collect()
}

fn s(kind: HazardKind, memory: &str, a: &str, b: &str) -> (HazardKind, String, String, String) {
    (kind, memory.to_string(), a.to_string(), b.to_string())
}

/// Removes `lines` (consecutive, exact) from `text`.
fn without(text: &str, lines: &[&str]) -> String {
    let all: Vec<&str> = text.lines().collect();
    let at = all
        .windows(lines.len())
        .position(|w| w.iter().zip(lines).all(|(a, b)| a.trim_start() == *b))
        .unwrap_or_else(|| panic!("lines not found: {lines:?}"));
    let mut out: Vec<&str> = all[..at].to_vec();
    out.extend(&all[at + lines.len()..]);
    out.join("\n") + "\n"
}

use HazardKind::{Raw, War, Waw};

// ----- the shipped programs --------------------------------------------------------------

#[test]
fn shipped_manual_programs_are_race_free() {
    for name in [
        "vec_add_db_manual.yaml",
        "vec_add_sb_manual.yaml",
        "softmax_manual.yaml",
        "matmul_pingpong_manual.yaml",
    ] {
        let program = load(name, &shipped(name));
        let hazards = check(&program);
        assert!(
            hazards.is_empty(),
            "{name}:\n{}",
            hazards
                .iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn fixture_without_the_store_dequeue_reports_the_raw_it_prevented() {
    let program = load(
        "vec_add_db_no_dequeue_z.yaml",
        &fixture("vec_add_db_no_dequeue_z.yaml"),
    );
    let hazards = check_cut(&program);
    let text: Vec<String> = hazards.iter().map(|h| h.to_string()).collect();
    // zb is the third buffer: slot 0 at 2 × 2 × 32 KiB
    assert_eq!(
        text,
        vec![
            "RAW hazard in UB [0x20000, 0x28000): V write (vec_add_db_no_dequeue_z.yaml:44:9 \
             vadd { ins: [xb, yb], out: zb }, t=0) / MTE3 read \
             (vec_add_db_no_dequeue_z.yaml:47:9 store { src: zb, dst: \"z[t]\" }, t=0)"
        ]
    );
    let h = &hazards[0];
    assert_eq!((h.first.pipe, h.second.pipe), (Pipe::V, Pipe::Mte3));
    assert_eq!(program.op(h.first.op).kind.name(), "vadd");
    assert_eq!(program.op(h.second.op).kind.name(), "store");
}

#[test]
fn each_wait_of_vec_add_db_prevents_its_own_hazard() {
    let text = shipped("vec_add_db_manual.yaml");
    let cases: [(&[&str], Vec<_>); 4] = [
        (
            // AllocTensor(x, y): the loads of tile t overwrite what vadd(t - 2) reads
            &[
                r#"- if: "t >= 2"                                  # AllocTensor(x, y): slot t % 2 was read by vadd(t - 2)"#,
                "then:",
                r#"- wait_flag: { src: v, dst: mte2, id: "t % 2" }"#,
            ],
            vec![
                s(War, "UB", "V vadd r", "MTE2 load w"),
                s(War, "UB", "V vadd r", "MTE2 load w"),
            ],
        ),
        (
            // DeQue(x, y): vadd reads what the loads are still writing
            &[r#"- wait_flag: { src: mte2, dst: v, id: "t % 2" } # DeQue(x, y)"#],
            vec![
                s(Raw, "UB", "MTE2 load w", "V vadd r"),
                s(Raw, "UB", "MTE2 load w", "V vadd r"),
            ],
        ),
        (
            // AllocTensor(z): vadd overwrites what store(t - 2) reads
            &[
                r#"- if: "t >= 2"                                  # AllocTensor(z): store(t - 2) has read slot t % 2"#,
                "then:",
                r#"- wait_flag: { src: mte3, dst: v, id: "t % 2" }"#,
            ],
            vec![s(War, "UB", "MTE3 store r", "V vadd w")],
        ),
        (
            // DeQue(z): store reads what vadd is still writing
            &[r#"- wait_flag: { src: v, dst: mte3, id: "t % 2" } # DeQue(z)"#],
            vec![s(Raw, "UB", "V vadd w", "MTE3 store r")],
        ),
    ];
    for (lines, expected) in cases {
        let program = load("vec_add_db_cut.yaml", &without(&text, lines));
        let hazards = check_cut(&program);
        let mut got = summary(&hazards);
        got.sort();
        assert_eq!(got, expected, "without {lines:?}");
        // the two loads are two different op pairs, each reported once
        let mut pairs: Vec<_> = hazards.iter().map(|h| (h.first.op, h.second.op)).collect();
        pairs.dedup();
        assert_eq!(pairs.len(), hazards.len());
    }
}

// ----- one kind of ordering at a time ------------------------------------------------------

const HEAD: &str = r#"
core: aiv
sync: manual
gm:
  x: { shape: [2, 1024], dtype: f16 }
  z: { shape: [2, 1024], dtype: f16 }
buffers:
  a: { scope: ub, shape: [1024], dtype: f16 }
  b: { scope: ub, shape: [1024], dtype: f16 }
"#;

fn small(body: &str) -> Program {
    let text = format!("kernel: small\n{HEAD}body:\n{body}");
    load("small.yaml", &text)
}

#[test]
fn two_loads_into_one_buffer_race_unless_a_barrier_separates_them() {
    let body = |sep: &str| {
        format!(
            r#"  - load: {{ src: "x[0]", dst: a }}
{sep}  - load: {{ src: "x[1]", dst: a }}
  - set_flag: {{ src: mte2, dst: mte3, id: 0 }}
  - wait_flag: {{ src: mte2, dst: mte3, id: 0 }}
  - store: {{ src: a, dst: "z[0]" }}
"#
        )
    };
    let hazards = check(&small(&body("")));
    assert_eq!(
        summary(&hazards),
        vec![s(Waw, "UB", "MTE2 load w", "MTE2 load w")]
    );
    assert_eq!(
        hazards[0].to_string(),
        "WAW hazard in UB [0x0000, 0x0800): MTE2 write (small.yaml:12:5 load { src: \"x[0]\", \
         dst: a }) / MTE2 write (small.yaml:13:5 load { src: \"x[1]\", dst: a })"
    );
    assert!(check(&small(&body("  - barrier: mte2\n"))).is_empty());
    // a set_flag drains its pipe too
    assert!(check(&small(&body(
        "  - set_flag: { src: mte2, dst: mte3, id: 1 }\n  - wait_flag: { src: mte2, dst: mte3, id: 1 }\n"
    )))
    .is_empty());
}

const LOAD_A: &str = r#"  - load: { src: "x[0]", dst: a }
  - set_flag: { src: mte2, dst: v, id: 0 }
  - wait_flag: { src: mte2, dst: v, id: 0 }
"#;

#[test]
fn a_store_of_what_a_vector_op_writes_needs_a_flag() {
    let body = |sync: &str| {
        format!(
            r#"{LOAD_A}  - vadds: {{ ins: [a], out: b, scalar: 1 }}
{sync}  - store: {{ src: b, dst: "z[0]" }}
"#
        )
    };
    let hazards = check(&small(&body("")));
    assert_eq!(
        summary(&hazards),
        vec![s(Raw, "UB", "V vadds w", "MTE3 store r")]
    );
    assert_eq!(
        hazards[0].to_string(),
        "RAW hazard in UB [0x0800, 0x1000): V write (small.yaml:15:5 vadds { ins: [a], out: b, \
         scalar: 1 }) / MTE3 read (small.yaml:16:5 store { src: b, dst: \"z[0]\" })"
    );
    let flag =
        "  - set_flag: { src: v, dst: mte3, id: 0 }\n  - wait_flag: { src: v, dst: mte3, id: 0 }\n";
    assert!(check(&small(&body(flag))).is_empty());
}

#[test]
fn a_load_over_what_a_vector_op_still_reads_is_a_war() {
    let body = |sync: &str| {
        format!(
            r#"{LOAD_A}  - vadds: {{ ins: [a], out: b, scalar: 1 }}
{sync}  - load: {{ src: "x[1]", dst: a }}
  - set_flag: {{ src: v, dst: mte3, id: 0 }}
  - wait_flag: {{ src: v, dst: mte3, id: 0 }}
  - set_flag: {{ src: mte2, dst: mte3, id: 0 }}
  - wait_flag: {{ src: mte2, dst: mte3, id: 0 }}
  - store: {{ src: b, dst: "z[0]" }}
  - store: {{ src: a, dst: "z[1]" }}
"#
        )
    };
    let hazards = check(&small(&body("")));
    assert_eq!(
        summary(&hazards),
        vec![s(War, "UB", "V vadds r", "MTE2 load w")]
    );
    assert_eq!((hazards[0].lo, hazards[0].hi), (0, 0x800));
    let flag =
        "  - set_flag: { src: v, dst: mte2, id: 0 }\n  - wait_flag: { src: v, dst: mte2, id: 0 }\n";
    assert!(check(&small(&body(flag))).is_empty());
}

#[test]
fn barrier_all_orders_everything_before_it() {
    let body = |sep: &str| {
        format!(
            r#"  - load: {{ src: "x[0]", dst: a }}
{sep}  - vadds: {{ ins: [a], out: b, scalar: 1 }}
{sep}  - store: {{ src: b, dst: "z[0]" }}
{sep}  - load: {{ src: "x[1]", dst: b }}
"#
        )
    };
    let mut got = summary(&check(&small(&body(""))));
    got.sort();
    assert_eq!(
        got,
        vec![
            s(Raw, "UB", "MTE2 load w", "V vadds r"),
            s(Raw, "UB", "V vadds w", "MTE3 store r"),
            s(War, "UB", "MTE3 store r", "MTE2 load w"),
            s(Waw, "UB", "V vadds w", "MTE2 load w"),
        ]
    );
    assert!(check(&small(&body("  - barrier: all\n"))).is_empty());
}

#[test]
fn scalar_accesses_are_ordered_by_program_order_and_flags_only() {
    // S's sstore completes before S sends the store: program order
    assert!(check(&small(
        r#"  - sstore: { dst: "a[3]" }
  - store: { src: "a[3:4]", dst: "z[0, 0:1]" }
"#
    ))
    .is_empty());
    // a pipe's write is not ordered before S's read without a flag to S
    let body = |sync: &str| {
        format!(
            r#"  - load: {{ src: "x[0]", dst: a }}
{sync}  - sload: {{ src: "a[5]" }}
"#
        )
    };
    let hazards = check(&small(&body("")));
    assert_eq!(
        summary(&hazards),
        vec![s(Raw, "UB", "MTE2 load w", "S sload r")]
    );
    assert_eq!((hazards[0].lo, hazards[0].hi), (10, 12));
    let flag =
        "  - set_flag: { src: mte2, dst: s, id: 0 }\n  - wait_flag: { src: mte2, dst: s, id: 0 }\n";
    assert!(check(&small(&body(flag))).is_empty());
    // S writing what a pipe still reads: WAR
    let hazards = check(&small(&format!(
        r#"{LOAD_A}  - vadds: {{ ins: [a], out: b, scalar: 1 }}
  - sstore: {{ dst: "a[7]" }}
  - set_flag: {{ src: v, dst: mte3, id: 0 }}
  - wait_flag: {{ src: v, dst: mte3, id: 0 }}
  - store: {{ src: b, dst: "z[0]" }}
"#
    )));
    assert_eq!(
        summary(&hazards),
        vec![
            s(Waw, "UB", "MTE2 load w", "S sstore w"),
            s(War, "UB", "V vadds r", "S sstore w"),
        ]
    );
    assert_eq!((hazards[0].lo, hazards[0].hi), (14, 16));
}

#[test]
fn gm_conflicts_are_per_tensor_by_overlapping_elements() {
    let body = |row: &str| {
        format!(
            r#"{LOAD_A}  - vadds: {{ ins: [a], out: b, scalar: 1 }}
  - set_flag: {{ src: v, dst: mte3, id: 0 }}
  - wait_flag: {{ src: v, dst: mte3, id: 0 }}
  - store: {{ src: b, dst: "z[0]" }}
  - set_flag: {{ src: v, dst: mte2, id: 0 }}
  - wait_flag: {{ src: v, dst: mte2, id: 0 }}
  - load: {{ src: "{row}", dst: "a[0:512]" }}
"#
        )
    };
    // x is only read; z[1] is not what the store wrote
    assert!(check(&small(&body("z[1, 0:512]"))).is_empty());
    let hazards = check(&small(&body("z[0, 512:1024]")));
    assert_eq!(
        summary(&hazards),
        vec![s(Raw, "GM z", "MTE3 store w", "MTE2 load r"),]
    );
    assert_eq!((hazards[0].lo, hazards[0].hi), (1024, 2048));
    assert!(hazards[0]
        .to_string()
        .starts_with("RAW hazard in GM z [0x0400, 0x0800): "));
}

// ----- placements ----------------------------------------------------------------------------

#[test]
fn shared_bytes_between_two_buffers_are_a_hazard() {
    let program = load("vec_add_sb_manual.yaml", &shipped("vec_add_sb_manual.yaml"));
    let (mut offsets, sizes) = sequential(&program);
    let (xb, zb) = (buffer(&program, "xb"), buffer(&program, "zb"));
    offsets[zb] = offsets[xb].clone();
    let hazards = check_at(&program, &offsets, &sizes);
    // vadd reading xb and writing zb is one instruction; the store of tile t reading zb races
    // the load of tile t + 1 writing xb, which only waits for vadd
    assert_eq!(
        summary(&hazards),
        vec![s(War, "UB", "MTE3 store r", "MTE2 load w")]
    );
    let h = &hazards[0];
    assert_eq!((h.lo, h.hi), (0, 0x8000));
    assert_eq!(h.first.vars, vec![("t".to_string(), 0)]);
    assert_eq!(h.second.vars, vec![("t".to_string(), 1)]);
    assert_eq!(program.op(h.second.op).path, "body[0].for.body[1]");
}

#[test]
fn double_buffer_slots_are_checked_per_slot() {
    let program = load("vec_add_db_manual.yaml", &shipped("vec_add_db_manual.yaml"));
    let (mut offsets, sizes) = sequential(&program);
    assert!(check_at(&program, &offsets, &sizes).is_empty());
    // both slots of xb at the same bytes: loading tile t + 1 overwrites what vadd(t) reads
    let xb = buffer(&program, "xb");
    offsets[xb][1] = offsets[xb][0];
    let hazards = check_at(&program, &offsets, &sizes);
    assert_eq!(
        summary(&hazards),
        vec![s(War, "UB", "V vadd r", "MTE2 load w")]
    );
    let h = &hazards[0];
    assert_eq!(h.first.vars, vec![("t".to_string(), 0)]);
    assert_eq!(h.second.vars, vec![("t".to_string(), 1)]);
    assert_eq!(program.op(h.second.op).path, "body[0].for.body[1]");
    // half overlapping slots: the overlap is what is reported
    offsets[xb][1] = offsets[xb][0] + 0x6000;
    let hazards = check_at(&program, &offsets, &sizes);
    assert_eq!(hazards.len(), 1);
    assert_eq!((hazards[0].lo, hazards[0].hi), (0x6000, 0x8000));
}

/// Records the slot of every operand of every issue.
#[derive(Default)]
struct Slots(Vec<(u32, Vec<u32>)>);

impl Observer for Slots {
    fn on_issue(&mut self, issue: &Issue<'_>) {
        if !issue.slots.is_empty() {
            self.0.push((issue.op.0, issue.slots.to_vec()));
        }
    }
}

#[test]
fn an_upgraded_single_buffer_takes_slots_by_iteration() {
    let program = load("vec_add_sb_manual.yaml", &shipped("vec_add_sb_manual.yaml"));
    let (mut offsets, sizes) = sequential(&program);
    let (xb, zb) = (buffer(&program, "xb"), buffer(&program, "zb"));
    assert_eq!(program.buffers[xb].multi, 1);

    // the engine: without an override every slot is 0; with one, xb alternates
    let mut plain = Slots::default();
    let a = run_observed(&program, &config(), &mut plain).unwrap();
    assert!(plain.0.iter().all(|(_, s)| s.iter().all(|&s| s == 0)));
    let mut two = Addresses::new(program.buffers.len());
    two.set(sim::BufferId::new(xb), vec![0, 4096], 4096);
    let mut upgraded = Slots::default();
    let b = sim::run_placed(&program, &config(), &two, Default::default(), &mut upgraded).unwrap();
    assert_eq!(a.total_cycles, b.total_cycles, "slots never change timing");
    let load_x = program
        .ops
        .iter()
        .position(|o| o.path == "body[0].for.body[1]")
        .unwrap() as u32;
    let xs: Vec<u32> = upgraded
        .0
        .iter()
        .filter(|(op, _)| *op == load_x)
        .map(|(_, s)| s[1])
        .take(4)
        .collect();
    assert_eq!(xs, vec![0, 1, 0, 1]);

    // two separate slots: still race-free
    offsets[xb] = vec![offsets[xb][0], offsets[zb][0] + 0x8000];
    assert!(check_at(&program, &offsets, &sizes).is_empty());
    // slot 1 on zb's bytes: only odd tiles load into zb, racing the store of the tile before
    offsets[xb][1] = offsets[zb][0];
    let hazards = check_at(&program, &offsets, &sizes);
    assert_eq!(
        summary(&hazards),
        vec![s(War, "UB", "MTE3 store r", "MTE2 load w")]
    );
    assert_eq!(hazards[0].second.vars, vec![("t".to_string(), 1)]);
    assert_eq!(hazards[0].lo, offsets[zb][0]);
}

// ----- the cube macro --------------------------------------------------------------------

fn macro_program(sync: &str) -> Program {
    let text = format!(
        r#"kernel: macro
core: aic
sync: manual
gm:
  a: {{ shape: [2, 64, 64], dtype: f16 }}
  b: {{ shape: [64, 64], dtype: f16 }}
  c: {{ shape: [2, 64, 64], dtype: f16 }}
buffers:
  l1a: {{ scope: l1, shape: [64, 64], dtype: f16 }}
  l1b: {{ scope: l1, shape: [64, 64], dtype: f16 }}
  l0c: {{ scope: l0c, shape: [64, 64], dtype: f32 }}
body:
  - for: {{ var: i, to: 2 }}
    body:
      - load: {{ src: "a[i]", dst: l1a, layout: nz }}
      - load: {{ src: b, dst: l1b, layout: nz }}
      - set_flag: {{ src: mte2, dst: mte1, id: 0 }}
      - wait_flag: {{ src: mte2, dst: mte1, id: 0 }}
      - mmad_l1: {{ a: l1a, b: l1b, c: l0c, m: 64, n: 64, k: 64, init: 1 }}
{sync}      - set_flag: {{ src: m, dst: fix, id: 0 }}
      - wait_flag: {{ src: m, dst: fix, id: 0 }}
      - fixpipe: {{ src: l0c, dst: "c[i]", quant: true }}
      - set_flag: {{ src: fix, dst: m, id: 0 }}
      - wait_flag: {{ src: fix, dst: m, id: 0 }}
"#
    );
    load("macro.yaml", &text)
}

#[test]
fn mmad_l1_reads_l1_on_mte1_and_its_m_part_tells_who_waits_for_m() {
    // nothing frees L1 for the next tile's loads: they race the macro's MTE1 part
    let hazards = check(&macro_program(""));
    let mut got = summary(&hazards);
    got.sort();
    assert_eq!(
        got,
        vec![
            s(War, "L1", "MTE1 mmad_l1 r", "MTE2 load w"),
            s(War, "L1", "MTE1 mmad_l1 r", "MTE2 load w"),
        ]
    );
    // waiting for M (the macro's M part) implies its MTE1 part has completed
    let m_to_mte2 = "      - set_flag: { src: m, dst: mte2, id: 0 }\n      - wait_flag: { src: m, dst: mte2, id: 0 }\n";
    let hazards = check(&macro_program(m_to_mte2));
    assert!(hazards.is_empty(), "{hazards:?}");
}

// ----- memory ----------------------------------------------------------------------------

#[test]
fn live_records_do_not_grow_with_the_run() {
    let text = shipped("vec_add_db_manual.yaml");
    let peak = |tiles: i64| {
        let program =
            sim::load_program(&text, "db.yaml", &config(), &[("tiles".to_string(), tiles)])
                .unwrap();
        let (offsets, sizes) = sequential(&program);
        let addresses = Addresses {
            offsets,
            slot_bytes: sizes,
        };
        let mut checker = RaceChecker::new(&program, &config(), &addresses);
        sim::run_placed(
            &program,
            &config(),
            &addresses,
            Default::default(),
            &mut checker,
        )
        .unwrap();
        assert!(checker.hazards().is_empty());
        checker.peak_records()
    };
    let (small, large) = (peak(64), peak(4096));
    assert!(small > 0);
    // a few tiles in flight, a handful of accesses each: the same bound whatever the length
    assert!(
        large <= 2 * small && large < 100,
        "peak records {small} -> {large}"
    );
}

#[test]
fn hazard_display_names_memory_range_and_both_sides() {
    // the first op is located (file:line:col and its text), the second is not (built in code)
    let h = Hazard {
        kind: Raw,
        memory: Memory::Scope(sim::Space::Ub),
        memory_label: "UB".into(),
        lo: 0,
        hi: 0x8000,
        first: race::HazardAccess {
            core: 0,
            core_name: None,
            seq: 7,
            op: sim::OpId(4),
            pipe: Pipe::V,
            write: true,
            path: "body[0].for.body[2]".into(),
            name: "vadd",
            line: 12,
            column: 9,
            at: "k.yaml:12:9 vadd { ins: [x, y], out: z }".into(),
            vars: vec![("t".into(), 3)],
        },
        second: race::HazardAccess {
            core: 0,
            core_name: None,
            seq: 9,
            op: sim::OpId(5),
            pipe: Pipe::Mte3,
            write: false,
            path: "body[0].for.body[3]".into(),
            name: "store",
            line: 0,
            column: 0,
            at: "body[0].for.body[3] store".into(),
            vars: vec![("t".into(), 3)],
        },
        conservative: None,
        fix: None,
    };
    assert_eq!(
        h.to_string(),
        "RAW hazard in UB [0x0000, 0x8000): V write (k.yaml:12:9 vadd { ins: [x, y], out: z }, \
         t=3) / MTE3 read (body[0].for.body[3] store, t=3)"
    );
    // in a launch of several cores, each side says which core
    let mut h = h;
    h.first.core_name = Some("block 0 aiv 0".into());
    h.second.core = 1;
    h.second.core_name = Some("block 1 aiv 0".into());
    assert_eq!(
        h.to_string(),
        "RAW hazard in UB [0x0000, 0x8000): block 0 aiv 0 V write (k.yaml:12:9 vadd { ins: [x, \
         y], out: z }, t=3) / block 1 aiv 0 MTE3 read (body[0].for.body[3] store, t=3)"
    );
}
