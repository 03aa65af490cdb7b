//! The automatic sync pass: the reference pass's examples, race freedom and deadlock freedom
//! of what it inserts, event-id exhaustion.

use super::{config, load};
use planner::{plan_program, synchronize, PlanOptions, Synced};
use sim::program::{BarrierTarget, Block, ForLoop, OpKind, Program};
use sim::race::check;
use sim::{Config, Hazard, RunResult};

/// Plans `program` at `level`, synchronises it and runs it with the race checker.
pub fn sync_run(program: &Program, config: &Config, level: u8) -> (Synced, RunResult, Vec<Hazard>) {
    let opts = PlanOptions {
        max_level: level,
        ..PlanOptions::default()
    };
    let planned = plan_program(program, config, &opts).unwrap_or_else(|e| panic!("{e:?}"));
    let synced = synchronize(program, config, &planned.plan);
    let placement = planned.plan.addresses();
    let run = check(&synced.program, config, &placement).unwrap_or_else(|e| panic!("{e:?}"));
    (synced, run.result, run.hazards)
}

/// [`sync_run`] for a whole kernel (a launch of one part or a mixed kernel): cross-core flags
/// (`sync: auto`), then each part planned at `level` and synchronised on its own, then one run of
/// every core with the race checker across them.
pub fn sync_run_kernel(
    kernel: &sim::Kernel,
    config: &Config,
    level: u8,
) -> (Vec<Synced>, RunResult, Vec<Hazard>) {
    let opts = PlanOptions {
        max_level: level,
        ..PlanOptions::default()
    };
    let crossed = planner::synchronize_kernel(kernel, config).unwrap_or_else(|e| panic!("{e}"));
    let mut synced = Vec::new();
    let mut addresses = Vec::new();
    for p in &crossed.kernel.parts {
        let planned = plan_program(p, config, &opts).unwrap_or_else(|e| panic!("{e:?}"));
        synced.push(synchronize(p, config, &planned.plan));
        addresses.push(planned.plan.addresses());
    }
    let parts: Vec<(&Program, &sim::Addresses)> =
        synced.iter().map(|s| &s.program).zip(&addresses).collect();
    let run = sim::race::check_launch(&parts, config, sim::engine::Limits::default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    (synced, run.result, run.hazards)
}

/// The program as an indented list of ops, sync ops spelled out: what a reader checks.
pub fn listing(p: &Program) -> String {
    fn block(p: &Program, b: &Block, depth: usize, out: &mut String) {
        for &op in &b.ops {
            let o = p.op(op);
            let pad = "  ".repeat(depth);
            let name = |v| p.var_name(v);
            let line = match &o.kind {
                OpKind::SetFlag { src, dst, id } => {
                    format!("set_flag {src}->{dst} #{}", id.display(&name))
                }
                OpKind::WaitFlag { src, dst, id } => {
                    format!("wait_flag {src}->{dst} #{}", id.display(&name))
                }
                OpKind::Barrier(BarrierTarget::All) => "barrier all".to_string(),
                OpKind::Barrier(BarrierTarget::Pipe(q)) => format!("barrier {q}"),
                OpKind::CrossSet { mode, pipe, id } => {
                    format!("cross_set {} {pipe} #{}", mode.number(), id.display(&name))
                }
                OpKind::CrossWait { pipe, id } => {
                    format!("cross_wait {pipe} #{}", id.display(&name))
                }
                OpKind::For(ForLoop { var, .. }) => format!("for {}:", p.var_name(*var)),
                OpKind::While { .. } => "while:".to_string(),
                OpKind::If { .. } => "if:".to_string(),
                k => {
                    let ops: Vec<String> = k
                        .reads()
                        .iter()
                        .map(|r| r.text.clone())
                        .chain(k.writes().iter().map(|w| format!("->{}", w.text)))
                        .collect();
                    format!("{} {}", k.name(), ops.join(" "))
                }
            };
            out.push_str(&format!("{pad}{line}\n"));
            for b in p.blocks(op) {
                block(p, b, depth + 1, out);
            }
        }
    }
    let mut out = String::new();
    block(p, &p.body, 0, &mut out);
    out
}

fn clean(program: &Program, level: u8) -> (Synced, RunResult) {
    let (synced, result, hazards) = sync_run(program, &config(), level);
    let text = listing(&synced.program);
    assert!(hazards.is_empty(), "hazards {hazards:#?}\n{text}");
    assert!(
        !result.has_findings() && result.deadlock.is_none(),
        "findings {:?} deadlock {:?}\n{text}",
        result.findings,
        result.deadlock
    );
    (synced, result)
}

#[test]
fn load_vadd_store_gets_two_flag_pairs_and_a_final_barrier() {
    let p = load(
        r#"
kernel: basic
core: aiv
gm: { x: { shape: [1024], dtype: f16 }, z: { shape: [1024], dtype: f16 } }
buffers: { a: { scope: ub, shape: [1024], dtype: f16 }, b: { scope: ub, shape: [1024], dtype: f16 } }
body:
  - load: { src: x, dst: a }
  - vadds: { ins: [a], out: b, scalar: 1 }
  - store: { src: b, dst: z }
"#,
    );
    let (synced, _) = clean(&p, 2);
    insta::assert_snapshot!(listing(&synced.program), @r"
    load x ->a
    set_flag MTE2->V #0
    wait_flag MTE2->V #0
    vadds a ->b
    set_flag V->MTE3 #0
    wait_flag V->MTE3 #0
    store b ->z
    barrier all
    ");
    // every inserted op points at the op it went beside, by line and column
    let p = &synced.program;
    let at = |i: usize| p.locate(sim::OpId::new(i));
    assert_eq!(at(0), "p.yaml:7:5 load { src: x, dst: a }");
    assert_eq!(
        at(1),
        "p.yaml:7:5 set_flag MTE2->V (inserted after load { src: x, dst: a })"
    );
    assert_eq!(
        at(2),
        "p.yaml:8:5 wait_flag MTE2->V (inserted before vadds { ins: [a], out: b, scalar: 1 })"
    );
    assert_eq!(
        at(7),
        "p.yaml:9:5 barrier all (inserted after store { src: b, dst: z })"
    );
    assert_eq!((p.ops[7].loc.line, p.ops[7].loc.column), (9, 5));
}

const LOAD_STORE_LOOP: &str = r#"
kernel: copy_loop
core: aiv
gm: { x: { shape: [8, 1024], dtype: f16 }, z: { shape: [8, 1024], dtype: f16 } }
body:
  - for: { var: t, to: 8 }
    buffers: { ub: { scope: ub, shape: [1024], dtype: f16, multi: MULTI } }
    body:
      - load: { src: "x[t]", dst: ub }
      - store: { src: ub, dst: "z[t]" }
"#;

#[test]
fn a_load_store_loop_gets_the_back_edge_pair_around_the_loop() {
    let p = load(&LOAD_STORE_LOOP.replace("MULTI", "1"));
    let (synced, _) = clean(&p, 2);
    // HIVM's test_injcet_sync_loop: the store frees the buffer for the next load
    insta::assert_snapshot!(listing(&synced.program), @r"
    set_flag MTE3->MTE2 #0
    for t:
      wait_flag MTE3->MTE2 #0
      load x[t] ->ub
      set_flag MTE2->MTE3 #0
      wait_flag MTE2->MTE3 #0
      store ub ->z[t]
      set_flag MTE3->MTE2 #0
    wait_flag MTE3->MTE2 #0
    barrier all
    ");
}

#[test]
fn a_double_buffered_load_store_loop_gets_two_event_ids() {
    let p = load(&LOAD_STORE_LOOP.replace("MULTI", "2"));
    let (synced, _) = clean(&p, 2);
    // HIVM's test_db_two_address: the store of iteration t frees slot t % 2 for the load of
    // iteration t + 2. The load→store pair rotates too (HIVM keeps one id): our flags are
    // binary, and with one id the load of t + 1 could set it before the store of t waited.
    insta::assert_snapshot!(listing(&synced.program), @r"
    set_flag MTE3->MTE2 #0
    set_flag MTE3->MTE2 #1
    for t:
      wait_flag MTE3->MTE2 #t % 2
      load x[t] ->ub
      set_flag MTE2->MTE3 #t % 2
      wait_flag MTE2->MTE3 #t % 2
      store ub ->z[t]
      set_flag MTE3->MTE2 #t % 2
    wait_flag MTE3->MTE2 #0
    wait_flag MTE3->MTE2 #1
    barrier all
    ");
}

/// The smallest capacity of `scope` (a multiple of its alignment) at which `level` still plans: the capacity that forces the most reuse. `None` when even one alignment step
/// below what no reuse needs overflows. (A larger capacity never fails where a smaller one
/// plans: the property test checks that, so a bisection finds the smallest.)
fn tight_capacity(
    program: &Program,
    config: &Config,
    level: u8,
    scope: &planner::ScopePlan,
) -> Option<PlanOptions> {
    let base = PlanOptions {
        max_level: level,
        ..PlanOptions::default()
    };
    let at = |steps: u64| PlanOptions {
        capacities: vec![(scope.space, steps * scope.align)],
        ..base.clone()
    };
    let fits = |steps: u64| plan_program(program, config, &at(steps)).is_ok();
    // bisect: `hi` fits, `lo` does not
    let mut hi = scope.required.div_ceil(scope.align).checked_sub(1)?;
    if hi == 0 || !fits(hi) {
        return None;
    }
    let mut lo = 0;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(at(hi))
}

#[test]
fn every_shipped_program_runs_race_free_at_every_level_and_under_pressure() {
    let config = config();
    let mut squeezed = std::collections::BTreeSet::new();
    for (name, text) in super::shipped_programs() {
        let kernel = sim::load_kernel(&text, &name, &config, &[], None).unwrap();
        if kernel.parts.len() > 1 || kernel.parts[0].launch.blocks > 1 {
            // a launch runs as one: every core, the cross-core flags, the checker across cores
            for level in [2, 1, 0] {
                let (synced, result, hazards) = sync_run_kernel(&kernel, &config, level);
                let ctx = format!("{name} level {level}\n{}", listing(&synced[0].program));
                assert!(hazards.is_empty(), "{ctx}\n{hazards:#?}");
                assert!(!result.has_findings(), "{ctx}\n{:?}", result.findings);
                assert!(result.deadlock.is_none(), "{ctx}");
            }
            continue;
        }
        let p = load(&text);
        for level in [2, 1, 0] {
            let (synced, result, hazards) = sync_run(&p, &config, level);
            let ctx = format!("{name} level {level}\n{}", listing(&synced.program));
            assert!(hazards.is_empty(), "{ctx}\n{hazards:#?}");
            assert!(!result.has_findings(), "{ctx}\n{:?}", result.findings);
            let scopes = plan_program(&p, &config, &PlanOptions::default())
                .unwrap()
                .plan
                .scopes;
            if p.sync == sim::program::SyncMode::Manual {
                // hand-written flags assume disjoint buffers: squeezing them races, and `run`
                // says so (race_cli::bytes_shared_under_manual_flags_are_a_hazard)
                continue;
            }
            for scope in scopes.iter().filter(|s| s.required > 0) {
                let Some(opts) = tight_capacity(&p, &config, level, scope) else {
                    continue; // every byte of this scope is live at once
                };
                squeezed.insert(name.clone());
                let planned = plan_program(&p, &config, &opts).unwrap();
                let synced = synchronize(&p, &config, &planned.plan);
                let placement = planned.plan.addresses();
                let run = check(&synced.program, &config, &placement).unwrap();
                let ctx = format!(
                    "{name} level {level} at {:?}\n{}",
                    opts.capacities,
                    listing(&synced.program)
                );
                assert!(run.hazards.is_empty(), "{ctx}\n{:#?}", run.hazards);
                assert!(
                    !run.result.has_findings(),
                    "{ctx}\n{:?}",
                    run.result.findings
                );
            }
        }
    }
    // the auto programs that can reuse bytes at all (matmul's buffers are all live at once)
    for name in ["reuse_levels.yaml", "softmax.yaml", "vec_add_db.yaml"] {
        assert!(squeezed.contains(name), "{name} never ran under pressure");
    }
}

/// `n` loads into their own buffers, then `n` vector ops each reading one of them: every
/// vector op needs its own MTE2->V pair, and all `n` pairs are in flight at once.
fn fan_in(n: usize) -> String {
    let mut s = String::from(
        "kernel: fan_in\ncore: aiv\ngm: { x: { shape: [16, 256], dtype: f16 }, y: { shape: [16, 256], dtype: f16 } }\nbuffers:\n",
    );
    for i in 0..n {
        s += &format!("  a{i}: {{ scope: ub, shape: [256], dtype: f16 }}\n  b{i}: {{ scope: ub, shape: [256], dtype: f16 }}\n");
    }
    s += "body:\n";
    for i in 0..n {
        s += &format!("  - load: {{ src: \"x[{i}]\", dst: a{i} }}\n");
    }
    for i in 0..n {
        s += &format!("  - vadds: {{ ins: [a{i}], out: b{i}, scalar: 1 }}\n");
    }
    for i in 0..n {
        s += &format!("  - store: {{ src: b{i}, dst: \"y[{i}]\" }}\n");
    }
    s
}

#[test]
fn eight_pairs_in_flight_use_the_eight_ids() {
    let (synced, _) = clean(&load(&fan_in(8)), 2);
    assert_eq!((synced.stats.merged, synced.stats.fallbacks), (0, 0));
    let text = listing(&synced.program);
    for id in 0..8 {
        assert!(
            text.contains(&format!("set_flag MTE2->V #{id}\n")),
            "{text}"
        );
    }
}

#[test]
fn a_ninth_pair_in_flight_merges_into_an_earlier_one() {
    // the nine vadds -> store pairs (V->MTE3) run out the same way
    let (synced, _) = clean(&load(&fan_in(9)), 2);
    assert_eq!(
        (synced.stats.merged, synced.stats.fallbacks),
        (2, 0),
        "{:?}",
        synced.stats
    );
    let text = listing(&synced.program);
    assert!(
        !text.contains("MTE2->V #8") && !text.contains("V->MTE3 #8"),
        "{text}"
    );
    // the merged pair sets after the ninth load and waits before the earlier of the two vadds
    assert!(
        text.contains("load x[8] ->a8\nset_flag MTE2->V #7\n"),
        "{text}"
    );
}

#[test]
fn a_pair_that_can_neither_get_an_id_nor_merge_falls_back_to_barrier_all() {
    // eight V->MTE2 pairs (the vector unit fills c_i, a load later overwrites it) span a loop
    // whose own V->MTE2 pair (its load reuses d after the previous iteration's vadds) sits in
    // the loop's block: nine ids at once, and nothing to merge with
    let mut s = String::from(
        "kernel: spanned\ncore: aiv\ngm: { x: { shape: [16, 256], dtype: f16 }, y: { shape: [16, 256], dtype: f16 } }\nbuffers:\n",
    );
    for i in 0..8 {
        s += &format!("  c{i}: {{ scope: ub, shape: [256], dtype: f16 }}\n");
    }
    s += "body:\n";
    for i in 0..8 {
        s += &format!("  - vdup: {{ scalar: {i}, out: c{i} }}\n");
    }
    s += "  - scalar: { cycles: 1 }\n  - for: { var: i, to: 4 }\n    buffers: { d: { scope: ub, shape: [256], dtype: f16 }, e: { scope: ub, shape: [256], dtype: f16 } }\n    body:\n      - load: { src: \"x[8 + i]\", dst: d }\n      - vadds: { ins: [d], out: e, scalar: 1 }\n";
    for i in 0..8 {
        s += &format!("  - load: {{ src: \"x[{i}]\", dst: c{i} }}\n  - store: {{ src: c{i}, dst: \"y[{i}]\" }}\n");
    }
    let (synced, _) = clean(&load(&s), 2);
    assert_eq!(
        synced.stats.fallbacks,
        1,
        "{:?}\n{}",
        synced.stats,
        listing(&synced.program)
    );
    let text = listing(&synced.program);
    assert!(
        text.contains("for i:\n  barrier all\n  load x[8 + i] ->d"),
        "{text}"
    );
    assert!(!text.contains("V->MTE2 #8"), "{text}");
}

/// Found by the property test: the v3 loop's MTE3->MTE2 flag is set only when v0 is odd (the
/// `else` branch), so it says nothing about the `then` branch's store of b4 one v0 iteration
/// earlier; the walk must not carry a flag set on one path past the `if`.
#[test]
fn a_flag_set_on_one_branch_only_orders_nothing_after_the_if() {
    let p = load(
        r#"
kernel: prop
core: aiv
sync: auto
gm:
  x: { shape: [4, 1024], dtype: f16 }
  y: { shape: [4, 1024], dtype: f16 }
buffers:
  b0: { scope: ub, shape: [256], dtype: f16, inplace: false }
  b1: { scope: ub, shape: [1024], dtype: f16, share: b0 }
  b2: { scope: ub, shape: [1024], dtype: f16, share: b0 }
  b3: { scope: ub, shape: [512], dtype: f16 }
views:
  w0: { of: b3, offset: 256, shape: [256] }
body:
  - load: { src: "x[1, 0:256]", dst: "b3[128:384]" }
  - for: { var: v0, to: 3 }
    buffers:
      b4: { scope: ub, shape: [1024], dtype: f16, inplace: false }
      b5: { scope: ub, shape: [256], dtype: f16, multi: 2 }
      b6: { scope: ub, shape: [1024], dtype: f16 }
    views:
      w1: { of: b4, offset: 0, shape: [256] }
      w2: { of: b6, offset: 0, shape: [256] }
    body:
      - load: { src: "x[v0 % 4, 0:256]", dst: "w1" }
      - for: { var: v1, to: 4 }
        buffers:
          b7: { scope: ub, shape: [1024], dtype: f16, multi: 2 }
          b8: { scope: ub, shape: [1024], dtype: f16, preload: true, multi: 2 }
        body:
          - load: { src: "x[0, 0:512]", dst: "b1[128:640]" }
          - store: { src: "w1", dst: "y[v1 % 4, 0:256]" }
          - for: { var: v2, to: 2 }
            body:
              - vmuls: { ins: ["b4[256:512]"], out: "b5", scalar: 2 }
              - vdup: { scalar: 1, out: "b8@((v0 + 0) % 2)[0:256]" }
              - load: { src: "x[v2 % 4, 0:512]", dst: "b2[512:1024]" }
              - vdup: { scalar: 1, out: "b7[512:1024]" }
      - if: "v0 % 2 == 0"
        then:
          - store: { src: "b4[768:1024]", dst: "y[2, 0:256]" }
          - load: { src: "x[1, 0:256]", dst: "b3[0:256]" }
          - load: { src: "x[3, 0:256]", dst: "w0" }
          - vmuls: { ins: ["b4[384:896]"], out: "b3", scalar: 2 }
        else:
          - load: { src: "x[3, 0:256]", dst: "b5@1" }
          - vadd: { ins: ["b1[384:640]", "b3[0:256]"], out: "b3[256:512]" }
          - for: { var: v3, to: 1 }
            body:
              - load: { src: "x[v3 % 4, 0:256]", dst: "w2" }
              - load: { src: "x[v3 % 4, 0:256]", dst: "b4[768:1024]" }
              - store: { src: "w2", dst: "y[v3 % 4, 0:256]" }
              - vmuls: { ins: ["b1[128:384]"], out: "b4[0:256]", scalar: 2 }
          - vadd: { ins: ["w2", "b5"], out: "b4[512:768]" }
          - load: { src: "x[v0 % 4, 0:256]", dst: "b6[256:512]" }
  - load: { src: "x[1, 0:512]", dst: "b3" }
"#,
    );
    for level in [2, 1, 0] {
        clean(&p, level);
    }
}

#[test]
fn cross_core_flags_stay_in_place_and_are_not_the_pass_s_own() {
    // cross_set/cross_wait are pipe instructions without operands: the pass orders the memory
    // accesses around them, keeps them where they are, and does not count their ids among
    // its event ids (the flags it inserts still start at #0)
    let p = load(
        r#"
kernel: crossed
core: aiv
gm: { x: { shape: [1024], dtype: f16 }, z: { shape: [1024], dtype: f16 } }
buffers: { a: { scope: ub, shape: [1024], dtype: f16 }, b: { scope: ub, shape: [1024], dtype: f16 } }
body:
  - cross_set: { mode: 0, pipe: mte3, id: 0 }
  - cross_wait: { id: 0 }
  - load: { src: x, dst: a }
  - vadds: { ins: [a], out: b, scalar: 1 }
  - store: { src: b, dst: z }
  - cross_set: { mode: 0, pipe: mte3, id: 3 }
  - cross_wait: { id: 3, pipe: mte2 }
"#,
    );
    let (synced, _) = clean(&p, 2);
    insta::assert_snapshot!(listing(&synced.program), @r"
    cross_set 0 MTE3 #0
    cross_wait S #0
    load x ->a
    set_flag MTE2->V #0
    wait_flag MTE2->V #0
    vadds a ->b
    set_flag V->MTE3 #0
    wait_flag V->MTE3 #0
    store b ->z
    cross_set 0 MTE3 #3
    cross_wait MTE2 #3
    barrier all
    ");
}

#[test]
fn a_mixed_kernel_plans_and_syncs_part_by_part_and_runs_as_one_launch() {
    // the cube part writes ws and signals (mode 2); each vector core waits, then reads ws
    let text = include_str!("../../../tests/fixtures/launch/mixed_min.yaml");
    let config = config();
    let kernel =
        sim::load_kernel(text, "k.yaml", &config, &[], None).unwrap_or_else(|e| panic!("{e}"));
    let mut synced = Vec::new();
    for part in &kernel.parts {
        let planned = plan_program(part, &config, &PlanOptions::default())
            .unwrap_or_else(|e| panic!("{e:?}"));
        let s = synchronize(part, &config, &planned.plan);
        synced.push((s.program, planned.plan.addresses()));
    }
    let parts: Vec<(&Program, &sim::Addresses)> = synced.iter().map(|(p, a)| (p, a)).collect();
    let run = sim::engine::run_launch(&parts, &config, Default::default(), &mut ())
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        run.findings.is_empty() && run.deadlock.is_none() && run.stopped.is_none(),
        "{:?} {:?}",
        run.findings,
        run.deadlock
    );
    // 2 blocks of one cube core and two vector cores
    assert_eq!(run.cores.len(), 6);
}
