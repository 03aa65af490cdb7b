//! Liveness of the shipped programs, derived by hand from their YAML.

use crate::{buf, config, load, shipped_parts, shipped_programs};
use planner::{liveness, Interval, LivenessMode};

fn life(l: &planner::Liveness, p: &sim::Program, name: &str) -> Vec<(usize, usize)> {
    l.lifetime(buf(p, name))
        .iter()
        .map(|i| (i.first, i.last))
        .collect()
}

#[test]
fn every_shipped_program_has_a_lifetime_per_written_buffer() {
    for (name, p) in shipped_parts() {
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let l = liveness(&p, mode).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (i, e) in l.entries.iter().enumerate() {
                assert!(!e.lifetime.is_empty(), "{name}: entry {i} never live");
                // sorted, merged, inside the program
                for w in e.lifetime.windows(2) {
                    assert!(w[0].last + 1 < w[1].first, "{name}: {:?}", e.lifetime);
                }
                assert!(e.lifetime.last().unwrap().last < l.positions);
            }
            if mode == LivenessMode::Scoped {
                assert!(l.entries.iter().all(|e| e.lifetime.len() == 1), "{name}");
            }
        }
    }
}

#[test]
fn matmul_pingpong_accumulator_spans_the_k_loop() {
    let (_, text) = shipped_programs()
        .into_iter()
        .find(|(n, _)| n == "matmul_pingpong_manual.yaml")
        .unwrap();
    let p = load(&text);
    let l = liveness(&p, LivenessMode::Precise).unwrap();
    // positions: 0..=7 the eight set_flags; 8 for-kk begin; 9 wait; 10 load l1a; 11 wait;
    // 12 load l1b; 13 set; 14 wait; 15 for-j begin; 16 wait; 17 copy l0a; 18 wait; 19 copy l0b;
    // 20 if-begin; 21, 22 set_flags; 23 else marker; 24 if-end; 25 set; 26 wait; 27 mmad;
    // 28, 29 set_flags; 30 for-j end; 31 for-kk end; 32 set; 33 wait; 34 fixpipe; 35.. waits
    let kk = l.loops[0].1;
    assert_eq!(kk, Interval::new(8, 31));
    assert_eq!(l.loops[1].1, Interval::new(15, 30));
    // l0c: the mmad's init is not constant, so it may accumulate: a read of c at 27 that can
    // see an earlier iteration's value. Whole j loop, whole kk loop, then the fixpipe at 34.
    // It is first written at 27 in linear order, but live from the kk loop begin (8).
    assert_eq!(life(&l, &p, "l0c"), [(8, 34)]);
    // l1a / l1b: slot kk%2 fully loaded at 10 / 12 and read in the j loop through the same
    // `@(kk % 2)`; the j loop reads them at every iteration (live at its body start): they
    // live [10, 30] / [12, 30], nothing crosses the kk back edge
    assert_eq!(life(&l, &p, "l1a"), [(10, 30)]);
    assert_eq!(life(&l, &p, "l1b"), [(12, 30)]);
    // l0a / l0b: implicit slot of the j loop, written at 17 / 19, read at 27
    assert_eq!(life(&l, &p, "l0a"), [(17, 27)]);
    assert_eq!(life(&l, &p, "l0b"), [(19, 27)]);
    // HIVM's pipeline classes: l1a is an MTE2 destination, l0c a FIX source, l0a only MTE1 and M
    assert!(l.entry(buf(&p, "l1a")).dma);
    assert!(l.entry(buf(&p, "l0c")).dma);
    assert!(!l.entry(buf(&p, "l0a")).dma);
    assert_eq!(
        l.entry(buf(&p, "l0a")).pipes,
        [sim::Pipe::M, sim::Pipe::Mte1]
    );

    // scoped: every buffer is declared at the top, so each lives from the begin of the
    // outermost loop that uses it (8) to that loop's end (31), l0c on to 34
    let s = liveness(&p, LivenessMode::Scoped).unwrap();
    for b in ["l1a", "l1b", "l0a", "l0b"] {
        assert_eq!(life(&s, &p, b), [(8, 31)], "{b}");
    }
    assert_eq!(life(&s, &p, "l0c"), [(8, 34)]);
}

#[test]
fn carried_value_of_a_buffer_declared_inside_the_loop_is_live_in_both_modes() {
    // 0 for-begin | 1 if-begin | 2 vdup acc | 3 else | 4 if-end | 5 load xt | 6 vadd acc,xt->acc
    // | 7 store acc | 8 for-end
    // acc is declared in the loop, but only the first iteration initialises it: from the
    // second on, the read at 6 sees the previous iteration's value. HIVM's scoped rule alone
    // would keep it inside the iteration; both modes must keep it for the whole loop.
    let p = load(
        r#"
kernel: k
core: aiv
sync: manual
params: { n: 256 }
gm:
  x: { shape: [4, n], dtype: f16 }
  y: { shape: [4, n], dtype: f16 }
body:
  - for: { var: t, to: 4 }
    buffers:
      acc: { scope: ub, shape: [n], dtype: f16 }
      xt: { scope: ub, shape: [n], dtype: f16 }
    body:
      - if: "t == 0"
        then:
          - vdup: { scalar: 0, out: acc }
      - load: { src: "x[t]", dst: xt }
      - vadd: { ins: [acc, xt], out: acc }
      - store: { src: acc, dst: "y[t]" }
"#,
    );
    for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
        let l = liveness(&p, mode).unwrap();
        assert_eq!(life(&l, &p, "acc"), [(0, 8)], "{mode:?}");
        assert_eq!(life(&l, &p, "xt"), [(5, 6)], "{mode:?}");
    }
}

// ----- the dynamic soundness oracle (oracle.rs) over more programs ---------------------------

use crate::conformance::{expectations, suite_dir};
use crate::oracle;
use sim::Program;

fn oracle_programs() -> Vec<(String, Program)> {
    let mut out: Vec<(String, Program)> = shipped_parts();
    let head = "kernel: k\ncore: aiv\nsync: manual\nparams: { n: 256 }\n\
        gm:\n  x: { shape: [4, n], dtype: f16 }\n  y: { shape: [4, n], dtype: f16 }\n";
    let bodies = [
        // software-pipelined prefetch through explicit slots
        r#"
buffers:
  pb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
  qb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
  ob: { scope: ub, shape: [n], dtype: f16 }
body:
  - load: { src: "x[0]", dst: "pb@0" }
  - for: { var: t, to: 3 }
    body:
      - load: { src: "x[t + 1]", dst: "pb@((t + 1) % 2)" }
      - vexp: { ins: ["pb@(t % 2)"], out: ob }
      - load: { src: "x[t]", dst: "qb@(t % 2)" }
      - vadd: { ins: [ob, "qb@(t % 2)"], out: ob }
      - store: { src: ob, dst: "y[t]" }
"#,
        // a value initialised in the first iteration only, in a branch
        r#"
body:
  - for: { var: t, to: 4 }
    buffers:
      acc: { scope: ub, shape: [n], dtype: f16 }
      xt: { scope: ub, shape: [n], dtype: f16 }
    body:
      - if: "t == 0"
        then:
          - vdup: { scalar: 0, out: acc }
        else:
          - vadds: { ins: [acc], out: acc, scalar: 1 }
      - load: { src: "x[t]", dst: xt }
      - vadd: { ins: [acc, xt], out: acc }
      - store: { src: acc, dst: "y[t]" }
"#,
        // implicit slots of an inner loop, partial writes, a select
        r#"
buffers:
  c: { scope: ub, shape: [n], dtype: f16 }
  d: { scope: ub, shape: [n], dtype: f16 }
views:
  pick: { select: [c, d] }
body:
  - load: { src: "x[0]", dst: c }
  - load: { src: "x[1]", dst: d }
  - for: { var: t, to: 3 }
    buffers:
      wb: { scope: ub, shape: [n], dtype: f16, multi: 2 }
      vb: { scope: ub, shape: [n], dtype: f16 }
    body:
      - load: { src: "x[t]", dst: wb }
      - load: { src: "x[t]", dst: vb }
      - for: { var: j, to: 3 }
        body:
          - load: { src: "x[j, 0:128]", dst: "vb[0:128]" }
          - vadd: { ins: [wb, vb], out: pick }
          - store: { src: wb, dst: "y[j]" }
  - store: { src: d, dst: "y[0]" }
"#,
    ];
    for (i, b) in bodies.iter().enumerate() {
        out.push((format!("oracle program {i}"), load(&format!("{head}{b}"))));
    }
    out
}

#[test]
fn every_value_read_stays_live_from_its_write_dynamic_oracle() {
    for (name, p) in oracle_programs() {
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let l = liveness(&p, mode).unwrap();
            let failures = oracle::check(&p, &l);
            assert!(
                failures.is_empty(),
                "{name} {mode:?}:\n{}",
                failures.join("\n")
            );
        }
    }
}

/// Random structured programs (loops, branches, multi-buffers with implicit, constant and
/// computed slots, partial writes) through the oracle, both modes. A fixed xorshift sequence
/// keeps the test deterministic.
#[test]
fn random_programs_pass_the_oracle() {
    struct Gen {
        s: u64,
        vars: Vec<String>,
        next_var: usize,
        out: String,
    }
    impl Gen {
        fn r(&mut self, n: u64) -> u64 {
            self.s ^= self.s << 13;
            self.s ^= self.s >> 7;
            self.s ^= self.s << 17;
            self.s % n
        }
        /// An operand naming buffer `b` (multi `m`), whole (256 elements) or half.
        fn operand(&mut self, b: usize, m: u64, half: bool) -> String {
            let mut o = format!("b{b}");
            if m > 1 {
                match self.r(3) {
                    0 => {}
                    1 => o += &format!("@{}", self.r(m)),
                    _ if self.vars.is_empty() => o += "@1",
                    _ => {
                        // any loop variable in scope, shifted or not
                        let i = self.r(self.vars.len() as u64) as usize;
                        let v = self.vars[i].clone();
                        let shift = self.r(2);
                        o += &format!("@(({v} + {shift}) % 2)");
                    }
                }
            }
            if half {
                o += if self.r(2) == 0 {
                    "[0:128]"
                } else {
                    "[128:256]"
                };
            }
            format!("\"{o}\"")
        }
        fn block(&mut self, indent: usize, depth: usize, multi: &[u64]) {
            let pad = " ".repeat(indent);
            for _ in 0..1 + self.r(4) {
                let b = self.r(multi.len() as u64) as usize;
                let c = self.r(multi.len() as u64) as usize;
                let half = self.r(3) == 0;
                let row = self
                    .vars
                    .last()
                    .map_or("0".to_string(), |v| format!("{v} % 4"));
                match self.r(if depth < 2 { 6 } else { 4 }) {
                    0 => {
                        let src = if half {
                            format!("x[{row}, 0:128]")
                        } else {
                            format!("x[{row}]")
                        };
                        let dst = self.operand(b, multi[b], half);
                        self.out += &format!("{pad}- load: {{ src: \"{src}\", dst: {dst} }}\n");
                    }
                    1 => {
                        let src = self.operand(b, multi[b], false);
                        self.out += &format!("{pad}- store: {{ src: {src}, dst: \"y[{row}]\" }}\n");
                    }
                    2 | 3 => {
                        let i = self.operand(b, multi[b], half);
                        let o = self.operand(c, multi[c], half);
                        self.out += &format!("{pad}- vexp: {{ ins: [{i}], out: {o} }}\n");
                    }
                    4 => {
                        let v = format!("v{}", self.next_var);
                        self.next_var += 1;
                        let trips = 1 + self.r(3);
                        self.out +=
                            &format!("{pad}- for: {{ var: {v}, to: {trips} }}\n{pad}  body:\n");
                        self.vars.push(v);
                        self.block(indent + 4, depth + 1, multi);
                        self.vars.pop();
                    }
                    _ => {
                        let k = self.r(2);
                        let cond = match self.vars.last() {
                            Some(v) => format!("{v} % 2 == {k}"),
                            None => "1 == 1".into(),
                        };
                        self.out += &format!("{pad}- if: \"{cond}\"\n{pad}  then:\n");
                        self.block(indent + 4, depth + 1, multi);
                        if self.r(2) == 0 {
                            self.out += &format!("{pad}  else:\n");
                            self.block(indent + 4, depth + 1, multi);
                        }
                    }
                }
            }
        }
    }

    for seed in 1..=300u64 {
        let mut g = Gen {
            s: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            vars: Vec::new(),
            next_var: 0,
            out: String::new(),
        };
        let multi: Vec<u64> = (0..3).map(|_| 1 + g.r(2)).collect();
        g.out += "kernel: k\ncore: aiv\nsync: manual\n\
            gm:\n  x: { shape: [4, 256], dtype: f16 }\n  y: { shape: [4, 256], dtype: f16 }\nbuffers:\n";
        for (i, m) in multi.iter().enumerate() {
            g.out += &format!("  b{i}: {{ scope: ub, shape: [256], dtype: f16, multi: {m} }}\n");
        }
        g.out += "body:\n";
        // every slot written first, so nothing is read before it is written
        for (i, &m) in multi.iter().enumerate() {
            for s in 0..m {
                g.out += &format!("  - load: {{ src: \"x[0]\", dst: \"b{i}@{s}\" }}\n");
            }
        }
        g.block(2, 0, &multi);
        let text = g.out;
        let p = sim::load_program(&text, "random.yaml", &config(), &[])
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let l = liveness(&p, mode).unwrap();
            let failures = oracle::check(&p, &l);
            assert!(
                failures.is_empty(),
                "seed {seed} {mode:?}:\n{}\n{text}",
                failures.join("\n")
            );
        }
    }
}

/// The HIVM conformance programs: liveness succeeds in both modes and passes the oracle (their
/// expected offsets are checked by the conformance module, not here). The suite is part of the
/// repository, so a missing file fails the test, and so does a program that does not load
/// when `expected.yaml` says it should (or loads when it should not).
#[test]
fn conformance_programs_pass_the_oracle() {
    let dir = suite_dir();
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let config = sim::load_config(&read("config.yaml"), "conformance/config.yaml").unwrap();
    let mut checked = 0;
    for case in expectations() {
        let Some(file) = &case.file else {
            continue; // not expressible in the program format: no file
        };
        let loaded = sim::load_program(&read(file), file, &config, &[]);
        if case.load_error {
            assert!(loaded.is_err(), "{}: loads, expected a load error", case.id);
            continue;
        }
        let p = loaded.unwrap_or_else(|e| panic!("{}: {e}", case.id));
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let l = liveness(&p, mode).unwrap_or_else(|e| panic!("{}: {e}", case.id));
            let failures = oracle::check(&p, &l);
            assert!(
                failures.is_empty(),
                "{} {mode:?}:\n{}",
                case.id,
                failures.join("\n")
            );
        }
        checked += 1;
    }
    // every program the conformance module reproduces
    assert_eq!(checked, 47);
}
