//! The race checker is exact on strided selections: over random programs of loads and stores
//! between a 2-D or 3-D gm tensor and a UB buffer of the same shape, each selecting a box of
//! rows × column blocks (× planes), some moving with a loop of any start and step or with
//! `block` in a launch of two blocks, and no synchronisation (so every two accesses are
//! unordered), a hazard is reported for a pair of ops exactly when the byte sets of two of
//! their accesses intersect, as an oracle that lists every byte of every access finds; each
//! hazard's bytes are the lowest ones the two accesses it names share, and none is
//! conservative.

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;
use sim::race::{self, Hazard};
use sim::{Addresses, Config};

fn config() -> Config {
    let name = sim::builtin::DEFAULT;
    sim::load_config(sim::builtin::builtin(name).unwrap(), name).expect("built-in config loads")
}

/// How an access's gm selection moves: not, with a loop variable (one dimension's start is
/// `v * k + start`, `v` running `from, from + step, ...` for `trips` values), or with `block`
/// (`block * k + start`).
#[derive(Clone, Debug)]
enum Move {
    Fixed,
    Loop {
        dim: usize,
        k: u64,
        from: u64,
        step: u64,
        trips: u64,
    },
    Block {
        dim: usize,
        k: u64,
    },
}

/// One op: a load (gm read, UB write) or a store (UB read, gm write) of a box of `len`
/// elements per dimension, from `gm` in the tensor (before the move) and `ub` in the buffer.
#[derive(Clone, Debug)]
struct Access {
    store: bool,
    len: Vec<u64>,
    gm: Vec<u64>,
    ub: Vec<u64>,
    mv: Move,
}

/// The raw numbers an access is made from, fitted to the shape by [`fit`] (so that proptest
/// can shrink them freely).
type Raw = (bool, Vec<(u8, u8, u8)>, u8, u8, u8, u8, u8, u8);

#[derive(Clone, Debug)]
struct Case {
    shape: Vec<u64>,
    bits: u64,
    blocks: u64,
    /// UB offset of the buffer.
    at: u64,
    accesses: Vec<Access>,
}

fn fit(shape: &[u64], blocks: u64, raw: &Raw) -> Access {
    let &(store, ref dims, mv, dim, k, from, step, trips) = raw;
    let rank = shape.len();
    let len: Vec<u64> = (0..rank).map(|d| 1 + dims[d].0 as u64 % shape[d]).collect();
    let room = |d: usize| shape[d] - len[d];
    let mut gm: Vec<u64> = (0..rank)
        .map(|d| dims[d].1 as u64 % (room(d) + 1))
        .collect();
    let ub: Vec<u64> = (0..rank)
        .map(|d| dims[d].2 as u64 % (room(d) + 1))
        .collect();
    let dim = dim as usize % rank;
    let mv = match mv % 3 {
        1 => {
            let (from, step, trips) = (from as u64 % 3, 1 + step as u64 % 3, 1 + trips as u64 % 3);
            let last = from + (trips - 1) * step;
            let k = room(dim)
                .checked_div(last)
                .map_or(0, |most| k as u64 % (most + 1));
            gm[dim] = dims[dim].1 as u64 % (room(dim) - k * last + 1);
            Move::Loop {
                dim,
                k,
                from,
                step,
                trips,
            }
        }
        2 if blocks > 1 => {
            let k = k as u64 % (room(dim) + 1);
            gm[dim] = dims[dim].1 as u64 % (room(dim) - k + 1);
            Move::Block { dim, k }
        }
        _ => Move::Fixed,
    };
    Access {
        store,
        len,
        gm,
        ub,
        mv,
    }
}

fn case() -> impl Strategy<Value = Case> {
    let shape = prop_oneof![
        (2..7u64, 2..13u64).prop_map(|(r, c)| vec![r, c]),
        (2..4u64, 2..5u64, 2..9u64).prop_map(|(p, r, c)| vec![p, r, c]),
    ];
    let raw = (
        any::<bool>(),
        prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 3),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    );
    (
        shape,
        prop::sample::select(vec![8u64, 16, 32]),
        1..3u64,
        0..4u64,
        prop::collection::vec(raw, 2..5),
    )
        .prop_map(|(shape, bits, blocks, at, raws)| {
            let mut accesses: Vec<Access> = raws.iter().map(|r| fit(&shape, blocks, r)).collect();
            // the buffer is written before anything reads it (the loader's rule)
            accesses[0].store = false;
            Case {
                shape,
                bits,
                blocks,
                at: at * 32,
                accesses,
            }
        })
}

/// `a:b` per dimension, the moving one written with its variable.
fn selection(a: &Access, gm: bool, var: &str) -> String {
    let starts = if gm { &a.gm } else { &a.ub };
    let dims: Vec<String> = (0..a.len.len())
        .map(|d| {
            let (s, l) = (starts[d], a.len[d]);
            let moving = match a.mv {
                Move::Loop { dim, k, .. } | Move::Block { dim, k } if gm && dim == d => Some(k),
                _ => None,
            };
            match moving {
                Some(k) => format!("{var} * {k} + {s} : {var} * {k} + {}", s + l),
                None => format!("{s}:{}", s + l),
            }
        })
        .collect();
    dims.join(", ")
}

fn program_text(c: &Case) -> String {
    let dtype = match c.bits {
        8 => "i8",
        16 => "f16",
        _ => "f32",
    };
    let shape = format!("{:?}", c.shape);
    let mut text = format!(
        "kernel: strided\ncore: aiv\nsync: manual\nlaunch: {{ blocks: {} }}\ngm:\n  y: {{ shape: {shape}, dtype: {dtype} }}\nbuffers:\n  u: {{ scope: ub, shape: {shape}, dtype: {dtype} }}\nbody:\n",
        c.blocks
    );
    for (k, a) in c.accesses.iter().enumerate() {
        let var = match a.mv {
            Move::Block { .. } => "block".to_string(),
            _ => format!("i{k}"),
        };
        let (g, u) = (selection(a, true, &var), selection(a, false, &var));
        let op = if a.store {
            format!("store: {{ src: \"u[{u}]\", dst: \"y[{g}]\" }}")
        } else {
            format!("load: {{ src: \"y[{g}]\", dst: \"u[{u}]\" }}")
        };
        match a.mv {
            Move::Loop {
                from, step, trips, ..
            } => text.push_str(&format!(
                "  - for: {{ var: {var}, from: {from}, to: {}, step: {step} }}\n    body:\n      - {op}\n",
                from + trips * step
            )),
            _ => text.push_str(&format!("  - {op}\n")),
        }
    }
    text
}

/// One dynamic access of the oracle.
struct Dyn {
    core: u64,
    /// Program order on its core.
    order: usize,
    access: usize,
    /// The loop variable's value, if the op is in a loop.
    var: Option<i64>,
    gm: BTreeSet<u64>,
    ub: BTreeSet<u64>,
}

/// Every byte of a box `starts .. starts + len` of a row-major `shape` of `bytes`-byte
/// elements, from byte `at`.
fn box_bytes(shape: &[u64], starts: &[u64], len: &[u64], bytes: u64, at: u64) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let mut idx = vec![0u64; shape.len()];
    loop {
        let mut e = 0;
        for d in 0..shape.len() {
            e = e * shape[d] + starts[d] + idx[d];
        }
        out.extend(at + e * bytes..at + (e + 1) * bytes);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < len[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn dynamic(c: &Case) -> Vec<Dyn> {
    let bytes = c.bits / 8;
    let mut out = Vec::new();
    for core in 0..c.blocks {
        let mut order = 0;
        for (k, a) in c.accesses.iter().enumerate() {
            let values: Vec<Option<u64>> = match a.mv {
                Move::Loop {
                    from, step, trips, ..
                } => (0..trips).map(|t| Some(from + t * step)).collect(),
                Move::Block { .. } => vec![Some(core)],
                Move::Fixed => vec![None],
            };
            for v in values {
                let mut gm = a.gm.clone();
                if let (Move::Loop { dim, k, .. } | Move::Block { dim, k }, Some(v)) = (&a.mv, v) {
                    gm[*dim] += k * v;
                }
                out.push(Dyn {
                    core,
                    order,
                    access: k,
                    var: match a.mv {
                        Move::Loop { .. } => v.map(|v| v as i64),
                        _ => None,
                    },
                    gm: box_bytes(&c.shape, &gm, &a.len, bytes, 0),
                    ub: box_bytes(&c.shape, &a.ub, &a.len, bytes, c.at),
                });
                order += 1;
            }
        }
    }
    out
}

/// (first op, second op, across cores) of every pair that must be a hazard, by the byte sets.
fn expected(c: &Case, accs: &[Dyn], ops: &[usize]) -> HashSet<(usize, usize, bool)> {
    let mut out = HashSet::new();
    for (i, x) in accs.iter().enumerate() {
        for y in &accs[i + 1..] {
            let (ax, ay) = (&c.accesses[x.access], &c.accesses[y.access]);
            let cross = x.core != y.core;
            // a load writes UB and reads gm; a store the other way round
            let gm = (ax.store || ay.store) && !x.gm.is_disjoint(&y.gm);
            let ub = !cross && (!ax.store || !ay.store) && !x.ub.is_disjoint(&y.ub);
            if !(gm || ub) {
                continue;
            }
            // within a core the first in program order, across cores the lower core
            let (f, s) = if cross || x.order < y.order {
                (x, y)
            } else {
                (y, x)
            };
            out.insert((ops[f.access], ops[s.access], cross));
        }
    }
    out
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let text = program_text(c);
    let config = config();
    let program = sim::load_program(&text, "strided.yaml", &config, &[])
        .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let size = c.shape.iter().product::<u64>() * c.bits / 8;
    let addresses = Addresses {
        offsets: vec![vec![c.at]],
        slot_bytes: vec![size.div_ceil(32) * 32],
    };
    let run = race::check(&program, &config, &addresses).expect("the program runs");
    prop_assert!(run.result.deadlock.is_none());
    // the op id of each access: a loop and its op, or the op
    let mut ops = Vec::new();
    let mut id = 0;
    for a in &c.accesses {
        id += matches!(a.mv, Move::Loop { .. }) as usize;
        ops.push(id);
        id += 1;
    }
    let accs = dynamic(c);
    let want = expected(c, &accs, &ops);
    let got: HashSet<(usize, usize, bool)> = run
        .hazards
        .iter()
        .map(|h| {
            (
                h.first.op.index(),
                h.second.op.index(),
                h.first.core != h.second.core,
            )
        })
        .collect();
    prop_assert_eq!(
        &got,
        &want,
        "\n{}\nhazards: {:#?}",
        text,
        run.hazards
            .iter()
            .map(Hazard::to_string)
            .collect::<Vec<_>>()
    );
    prop_assert_eq!(got.len(), run.hazards.len(), "each pair once");
    for h in &run.hazards {
        prop_assert_eq!(h.conservative, None, "{}", h);
        // the dynamic accesses the hazard names, and the bytes both touch
        let find = |side: &race::HazardAccess| {
            accs.iter()
                .find(|d| {
                    ops[d.access] == side.op.index()
                        && d.core == side.core as u64
                        && d.var == side.vars.first().map(|v| v.1)
                })
                .expect("a dynamic access the hazard names")
        };
        let (f, s) = (find(&h.first), find(&h.second));
        let (fb, sb) = if h.memory_label == "UB" {
            (&f.ub, &s.ub)
        } else {
            (&f.gm, &s.gm)
        };
        let both: BTreeSet<u64> = fb.intersection(sb).copied().collect();
        prop_assert_eq!(both.first().copied(), Some(h.lo), "{}\n{}", h, text);
        prop_assert!(
            h.lo < h.hi && (h.lo..h.hi).all(|b| both.contains(&b)),
            "{}",
            h
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_hazard_is_reported_exactly_when_the_bytes_intersect(c in case()) {
        check(&c)?;
    }
}

#[test]
fn column_blocks_of_two_blocks_are_exact_both_ways() {
    // the case: y[:, block * 4 : block * 4 + 4] of 8 columns is race-free, and
    // y[:, block * 2 : block * 2 + 4] overlaps in columns 2..4 of every row
    for (k, race) in [(4, false), (2, true)] {
        let c = Case {
            shape: vec![4, 8],
            bits: 32,
            blocks: 2,
            at: 0,
            accesses: vec![
                Access {
                    store: false,
                    len: vec![4, 4],
                    gm: vec![0, 0],
                    ub: vec![0, 0],
                    mv: Move::Fixed,
                },
                Access {
                    store: true,
                    len: vec![4, 4],
                    gm: vec![0, 0],
                    ub: vec![0, 0],
                    mv: Move::Block { dim: 1, k },
                },
            ],
        };
        check(&c).unwrap();
        let accs = dynamic(&c);
        let want = expected(&c, &accs, &[0, 1]);
        assert_eq!(want.contains(&(1, 1, true)), race, "k = {k}");
    }
}
