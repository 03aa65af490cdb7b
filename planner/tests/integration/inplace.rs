//! Op-level inplace decisions on the HIVM conformance programs (`planner/tests/conformance/`):
//! for every expressible case, the (gen, kill) pairs that the expected offsets imply
//! (`expected.yaml`), and the refused multi-buffer pairs that may still touch
//! at level 0 (T06, T35-T37). TIE cases accept any listed alternative.

use super::conformance::{expectations, suite_dir};
use planner::{inplace_pairs, liveness, InplaceResult, LivenessMode};
use sim::Program;

/// What a case must produce: one of `pairs` (alternatives, each the full accepted list in
/// program order, as (gen, kill)), and exactly `touch`.
struct Want {
    id: &'static str,
    pairs: &'static [&'static [(&'static str, &'static str)]],
    touch: &'static [(&'static str, &'static str)],
}

const NONE: &[&[(&str, &str)]] = &[&[]];

const WANT: &[Want] = &[
    // a chain of four vadds: one entry, all at 0
    Want {
        id: "T01",
        pairs: &[&[("dst1", "copy_in"), ("dst2", "dst1"), ("copy_out", "dst2")]],
        touch: &[],
    },
    // a3 = a1, a7 = a5
    Want {
        id: "T04",
        pairs: &[&[("a3", "a1"), ("a7", "a5")]],
        touch: &[],
    },
    // both multi-buffers on a load -> vadd -> store chain: refused, may touch at level 0
    Want {
        id: "T06",
        pairs: NONE,
        touch: &[("a1", "a0")],
    },
    // TIE: res = lhs (reference) or rhs
    Want {
        id: "T08",
        pairs: &[&[("res", "lhs")], &[("res", "rhs")]],
        touch: &[],
    },
    // vcast: widening never; equal width yes; narrowing only rank 1
    Want {
        id: "T09",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T10",
        pairs: &[&[("dst", "src")]],
        touch: &[],
    },
    Want {
        id: "T11",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T12",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T13",
        pairs: &[&[("dst", "src")]],
        touch: &[],
    },
    Want {
        id: "T14",
        pairs: &[&[("dst", "src")]],
        touch: &[],
    },
    // if-yield buffers (share) are ignoreInplace
    Want {
        id: "T18",
        pairs: NONE,
        touch: &[],
    },
    // b2 = b1; b3 is loop-carried (share b4)
    Want {
        id: "T19",
        pairs: &[&[("b2", "b1")]],
        touch: &[],
    },
    // TIE: a5 = a3 (reference) or a1
    Want {
        id: "T20",
        pairs: &[&[("a5", "a3")], &[("a5", "a1")]],
        touch: &[],
    },
    Want {
        id: "T22",
        pairs: &[&[("a5", "a3")], &[("a5", "a1")]],
        touch: &[],
    },
    Want {
        id: "T23",
        pairs: &[&[("a5", "a3")], &[("a5", "a1")]],
        touch: &[],
    },
    // everything through selects: nothing
    Want {
        id: "T25",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T26",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T27",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T28",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T31",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T32",
        pairs: NONE,
        touch: &[],
    },
    // "after dst2 is inplaced into src2"; the mb4 pair is refused (stall)
    Want {
        id: "T35",
        pairs: &[&[("dst2", "src2")]],
        touch: &[("dst1", "src1")],
    },
    Want {
        id: "T36",
        pairs: NONE,
        touch: &[("dst1", "src1"), ("dst2", "src2")],
    },
    Want {
        id: "T37",
        pairs: NONE,
        touch: &[("dst1", "src1"), ("dst2", "src2")],
    },
    Want {
        id: "T39",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T40",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T42",
        pairs: NONE,
        touch: &[],
    },
    // rank-1 narrowing vcast: one entry (the overflow reports 320000 B)
    Want {
        id: "T43",
        pairs: &[&[("res", "arg0_ub")]],
        touch: &[],
    },
    Want {
        id: "T44",
        pairs: NONE,
        touch: &[],
    },
    // a2 = a0; a5 (never read) takes a4; the widening vcasts do not pair
    Want {
        id: "T45",
        pairs: &[&[("a2", "a0"), ("a5", "a4")]],
        touch: &[],
    },
    // inline broadcast with the OTF-broadcast temp: the same-shaped input
    Want {
        id: "T48",
        pairs: &[&[("alloc_1", "alloc_0")]],
        touch: &[],
    },
    Want {
        id: "T49",
        pairs: &[&[("alloc_1", "alloc")]],
        touch: &[],
    },
    Want {
        id: "T51",
        pairs: &[&[("alloc_1", "alloc")]],
        touch: &[],
    },
    Want {
        id: "T52",
        pairs: &[&[("alloc_1", "alloc")]],
        touch: &[],
    },
    Want {
        id: "T53",
        pairs: &[&[("alloc_1", "alloc")]],
        touch: &[],
    },
    // the scalar temp
    Want {
        id: "T54",
        pairs: &[&[("alloc_1", "alloc")]],
        touch: &[],
    },
    // output bigger than either input
    Want {
        id: "T56",
        pairs: NONE,
        touch: &[],
    },
    // TIE: alloc_1 = alloc (reference) or alloc_0
    Want {
        id: "T57",
        pairs: &[&[("alloc_1", "alloc")], &[("alloc_1", "alloc_0")]],
        touch: &[],
    },
    // TIE: alloc_1 = alloc_0 (reference) or alloc
    Want {
        id: "T58",
        pairs: &[&[("alloc_1", "alloc_0")], &[("alloc_1", "alloc")]],
        touch: &[],
    },
    // copies only (a3/a4 = a0/a1 come from share)
    Want {
        id: "T62",
        pairs: NONE,
        touch: &[],
    },
    // a2 = a1 (a0 lives on); a3 = alloc by share
    Want {
        id: "T64",
        pairs: &[&[("a2", "a1")]],
        touch: &[],
    },
    Want {
        id: "T65",
        pairs: &[&[("a2", "a1")]],
        touch: &[],
    },
    // TIE: a1 = alloc or a0, a3 = a2 or alloc; a4 reads through a select: no pair
    Want {
        id: "T68",
        pairs: &[
            &[("a1", "alloc"), ("a3", "a2")],
            &[("a1", "a0"), ("a3", "a2")],
            &[("a1", "alloc"), ("a3", "alloc")],
            &[("a1", "a0"), ("a3", "alloc")],
        ],
        touch: &[],
    },
    // a1 = a0, a3 = a2, a4 = alloc
    Want {
        id: "T69",
        pairs: &[&[("a1", "a0"), ("a3", "a2"), ("a4", "alloc")]],
        touch: &[],
    },
    // TIE: alloc_3 = alloc_1 (reference) or alloc; never the i1 condition
    Want {
        id: "T70",
        pairs: &[&[("alloc_3", "alloc_1")], &[("alloc_3", "alloc")]],
        touch: &[],
    },
    Want {
        id: "T78",
        pairs: NONE,
        touch: &[],
    },
    Want {
        id: "T79",
        pairs: NONE,
        touch: &[],
    },
];

fn load_case(file: &str) -> Program {
    let dir = suite_dir();
    let config = sim::load_config(
        &std::fs::read_to_string(dir.join("config.yaml")).unwrap(),
        "conformance/config.yaml",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    sim::load_program(&text, file, &config, &[]).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn named(p: &Program, pairs: &[planner::InplacePair]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|x| (p.buffer(x.gen).name.clone(), p.buffer(x.kill).name.clone()))
        .collect()
}

fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(g, k)| (g.to_string(), k.to_string()))
        .collect()
}

fn check(id: &str, p: &Program, r: &InplaceResult, want: &Want, mode: LivenessMode) {
    let got = named(p, &r.pairs);
    assert!(
        want.pairs.iter().any(|alt| owned(alt) == got),
        "{id} ({}): pairs {got:?}, want one of {:?}",
        mode.name(),
        want.pairs
    );
    assert_eq!(
        named(p, &r.touch),
        owned(want.touch),
        "{id} ({}): touch pairs",
        mode.name()
    );
}

#[test]
fn conformance_inplace_pairs() {
    let cases = expectations();
    let mut checked = 0;
    for case in &cases {
        let Some(file) = &case.file else { continue };
        if case.load_error {
            continue;
        }
        let want = WANT
            .iter()
            .find(|w| w.id == case.id)
            .unwrap_or_else(|| panic!("{}: no inplace expectation listed", case.id));
        let p = load_case(file);
        let l = liveness(&p, LivenessMode::Precise).unwrap();
        let r = inplace_pairs(&p, &l);
        check(&case.id, &p, &r, want, LivenessMode::Precise);
        // scoped (HIVM) liveness gives the same decisions (T64 and T65 declare their
        // loop-only buffers in the loop body, as HIVM's a2 == a1 requires), except in the
        // cases HIVM plans with block liveness (unstructured branches, T68, T69): there an
        // `if` stands for cf branches, whose blocks are not regions
        if case.liveness == LivenessMode::Scoped {
            let l = liveness(&p, LivenessMode::Scoped).unwrap();
            let r = inplace_pairs(&p, &l);
            check(&case.id, &p, &r, want, LivenessMode::Scoped);
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        WANT.len(),
        "every listed case is an expressible one"
    );
}

#[test]
fn chains_merge_into_one_group_and_keep_the_largest_slot_count() {
    let p = load_case("T01_test_mem_allocate_basic.yaml");
    let l = liveness(&p, LivenessMode::Precise).unwrap();
    let r = inplace_pairs(&p, &l);
    let g = r.group(&l, super::buf(&p, "copy_in"));
    for b in ["dst1", "dst2", "copy_out"] {
        assert_eq!(r.group(&l, super::buf(&p, b)), g, "{b}");
    }
    assert!(r.pairs.iter().all(|x| x.multi == 1));

    // T06: the refused pair keeps two slots each; it may touch
    let p = load_case("T06_test_multi_buffer_loadstore_level0_inplace.yaml");
    let l = liveness(&p, LivenessMode::Precise).unwrap();
    let r = inplace_pairs(&p, &l);
    let (a0, a1) = (super::buf(&p, "a0"), super::buf(&p, "a1"));
    assert!(r.may_touch(a0, a1) && r.may_touch(a1, a0));
    assert_ne!(r.group(&l, a0), r.group(&l, a1));
    assert_eq!(r.touch[0].multi, 2);
}

/// Invariants of any result: pairs sit at vector ops, the gen is first written there, the kill is
/// read there, and two entries of one group share positions only at the ops of accepted pairs.
fn check_invariants(name: &str, p: &Program, l: &planner::Liveness, r: &InplaceResult) {
    use planner::liveness::OpPos;
    use sim::program::OpKind;
    let mut pair_positions = Vec::new();
    for x in &r.pairs {
        let op = p.op(x.op);
        let OpKind::Vector(v) = &op.kind else {
            panic!("{name}: pair at a non-vector op {}", op.path);
        };
        let OpPos::At(pos) = l.op_pos[x.op.index()] else {
            panic!("{name}: pair at a control op");
        };
        pair_positions.push(pos);
        assert!(
            v.ins
                .iter()
                .any(|i| p.root_buffers(i.base).contains(&x.kill)),
            "{name}: kill not read at {}",
            op.path
        );
        let first = p
            .ops
            .iter()
            .position(|o| {
                o.kind
                    .writes()
                    .iter()
                    .any(|w| p.root_buffers(w.base).contains(&x.gen))
            })
            .unwrap();
        assert_eq!(first, x.op.index(), "{name}: gen first written elsewhere");
        assert_eq!(r.group(l, x.gen), r.group(l, x.kill), "{name}");
        assert!(x.multi >= p.buffer(x.gen).multi.max(p.buffer(x.kill).multi));
    }
    for a in 0..l.entries.len() {
        for b in a + 1..l.entries.len() {
            if r.group_of[a] != r.group_of[b] {
                continue;
            }
            for x in &l.entries[a].lifetime {
                for y in &l.entries[b].lifetime {
                    let (f, t) = (x.first.max(y.first), x.last.min(y.last));
                    if f <= t {
                        assert!(
                            f == t && pair_positions.contains(&f),
                            "{name}: entries {a} and {b} of one group overlap at {f}..={t}"
                        );
                    }
                }
            }
        }
    }
    for (e, &g) in r.group_of.iter().enumerate() {
        assert_eq!(r.group_of[g], g, "{name}: group of {e} is not a root");
        assert_eq!(r.multi[e], r.multi[g]);
    }
}

#[test]
fn invariants_hold_on_shipped_and_conformance_programs() {
    let mut programs: Vec<(String, Program)> = super::shipped_parts();
    for case in expectations() {
        if let (Some(file), false) = (&case.file, case.load_error) {
            programs.push((file.clone(), load_case(file)));
        }
    }
    for (name, p) in &programs {
        for mode in [LivenessMode::Precise, LivenessMode::Scoped] {
            let l = liveness(p, mode).unwrap();
            let r = inplace_pairs(p, &l);
            check_invariants(name, p, &l, &r);
        }
    }
}
