//! What each op touches, statically: its *parts* (one per pipe instruction it becomes: two for
//! an `mmad_l1`) and, per part, the byte ranges of each memory it reads or writes under the
//! plan's addresses. Conservative where the program is dynamic: an index or window offset that
//! depends on loop variables covers every value the variables can take, and an `@k` slot that
//! is not a constant covers every slot.

use sim::expr::{BinOp, Expr};
use sim::footprint::{Bases, Footprint, Memory, Over};
use sim::program::{OpKind, Operand, Program, Ref};
use sim::{BufferId, OpId, Pipe};

use super::tree::Tree;
use crate::Plan;

/// Active only in the iterations of loop `lp` whose whole-run count is `k` modulo `n`: a slot
/// of a multi-buffer chosen by the iteration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct SlotCond {
    pub lp: OpId,
    pub n: u32,
    pub k: u32,
}

/// Bytes `[lo, hi)` of `mem`, read or written.
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    pub mem: Memory,
    pub lo: u64,
    pub hi: u64,
    pub write: bool,
    pub slot: Option<SlotCond>,
    /// The on-chip buffer and its slot (gm: `None`), for the notes on serialised buffers.
    pub buf: Option<(BufferId, u32)>,
    /// The buffer's slot count.
    pub n: u32,
    /// A dynamic slot of a multi-buffer that could not be tied to a loop's count.
    pub untied: bool,
}

/// One pipe instruction of an op.
#[derive(Clone, Debug)]
pub(super) struct Part {
    pub op: OpId,
    pub pipe: Pipe,
    pub pieces: Vec<Piece>,
}

/// How the iterations of two accesses relate.
#[derive(Clone, Copy, Debug)]
pub(super) enum Rel {
    /// The same iteration of every loop enclosing both.
    Same,
    /// The second is `d` iterations of `lp` after the first (the pass uses the closed form,
    /// [`distance`]; its test tries every `d` with this).
    #[cfg_attr(not(test), allow(dead_code))]
    Later { lp: OpId, d: u32 },
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Whether two slot conditions can hold for accesses related by `rel` (a first, b second).
fn slots_meet(a: Option<SlotCond>, b: Option<SlotCond>, rel: Rel) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return true;
    };
    if a.lp != b.lp {
        return true; // different counters: nothing relates them
    }
    let delta = match rel {
        Rel::Same => 0,
        Rel::Later { lp, d } if lp == a.lp => d,
        Rel::Later { .. } => return true, // different iterations of an outer loop
    };
    let g = gcd(a.n, b.n) as u64;
    (a.k as u64 + delta as u64 + g * b.n as u64 - b.k as u64).is_multiple_of(g)
}

/// Whether part `a` (first) and part `b` (second) touch a common byte, one of them writing.
pub(super) fn conflict(a: &Part, b: &Part, rel: Rel) -> bool {
    a.pieces.iter().any(|x| {
        b.pieces.iter().any(|y| {
            x.mem == y.mem
                && (x.write || y.write)
                && x.lo < y.hi
                && y.lo < x.hi
                && slots_meet(x.slot, y.slot, rel)
        })
    })
}

/// The smallest distance `d >= 1` (iterations of `lp`) at which `b` conflicts with `a`
/// executed `d` iterations earlier. Slots of one counter meet when `d ≡ k_b - k_a` modulo the
/// gcd of their slot counts; anything else relates nothing and conflicts at every distance.
pub(super) fn distance(a: &Part, b: &Part, lp: OpId) -> Option<u32> {
    let mut best: Option<u32> = None;
    for x in &a.pieces {
        for y in &b.pieces {
            if x.mem != y.mem || !(x.write || y.write) || x.hi <= y.lo || y.hi <= x.lo {
                continue;
            }
            let d = match (x.slot, y.slot) {
                (Some(sx), Some(sy)) if sx.lp == lp && sy.lp == lp => {
                    let g = gcd(sx.n, sy.n);
                    match (sy.k + g - sx.k % g) % g {
                        0 => g,
                        r => r,
                    }
                }
                _ => 1,
            };
            best = Some(best.map_or(d, |b| b.min(d)));
            if d == 1 {
                return best;
            }
        }
    }
    best
}

/// Why a multi-buffer cannot alternate in a backward pair that recurs `d` iterations apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Why {
    /// A dynamic slot of `.0`, accessed by op `.1`, follows no loop's count.
    Untied(BufferId, OpId),
    /// Slot `a.1` of `a.0` and slot `b.1` of `b.0` share bytes under the plan.
    Shared((BufferId, u32), (BufferId, u32)),
    /// The two accesses pick the buffer's slot by different loops' counts.
    Counters(BufferId),
}

/// Why the pair (`a` first, `b` `d` iterations of `lp` later) conflicts at a distance below
/// the slot count of a multi-buffer it touches, if it does: the note on a serialised buffer.
pub(super) fn serialised(a: &Part, b: &Part, lp: OpId, d: u32) -> Option<Why> {
    for x in &a.pieces {
        for y in &b.pieces {
            let meets = x.mem == y.mem && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi;
            if !meets || x.n.max(y.n) <= d || !slots_meet(x.slot, y.slot, Rel::Later { lp, d }) {
                continue;
            }
            let (Some(bx), Some(by)) = (x.buf, y.buf) else {
                continue;
            };
            return Some(if x.untied {
                Why::Untied(bx.0, a.op)
            } else if y.untied {
                Why::Untied(by.0, b.op)
            } else if bx.0 != by.0 {
                Why::Shared(bx, by)
            } else if x.slot.map(|c| c.lp) != y.slot.map(|c| c.lp) {
                Why::Counters(bx.0)
            } else {
                continue;
            });
        }
    }
    None
}

/// The parts of every op, in op order (`parts_of[op]` lists indices into the returned parts).
/// Each op's footprints are over the ranges of the loop variables where it is: inside an `if`
/// branch, narrowed by the guard, as the loader checks and the engine runs it.
pub(super) fn parts(tree: &Tree, plan: &Plan) -> (Vec<Part>, Vec<Vec<u32>>) {
    let program = tree.program;
    let mut parts = Vec::new();
    let mut parts_of = vec![Vec::new(); program.ops.len()];
    let mut next = 0;
    sim::footprint::walk_ranges(program, &mut |id, ranges| {
        // parts are numbered in op order
        debug_assert_eq!(id.index(), next, "ops are visited in op order");
        next += 1;
        let ctx = Ctx {
            program,
            plan,
            ranges,
            counts: &tree.counts,
        };
        let i = id.index();
        let op = program.op(id);
        let kind = &op.kind;
        if kind.is_control()
            || matches!(
                kind,
                OpKind::Use { .. }
                    | OpKind::SetFlag { .. }
                    | OpKind::WaitFlag { .. }
                    | OpKind::Barrier(_)
                    // cross-core flags: pipe instructions without operands, kept in place;
                    // their ids are not the pass's event ids
                    | OpKind::CrossSet { .. }
                    | OpKind::CrossWait { .. }
            )
        {
            return;
        }
        let Some(pipe) = op.pipe else { return };
        let reads = kind.reads();
        let writes = kind.writes();
        let mut main = Vec::new();
        let mut stage = Vec::new();
        for (write, list) in [(false, &reads), (true, &writes)] {
            for o in list {
                let staged = match kind {
                    OpKind::MmadL1(m) => std::ptr::eq(*o, &m.a) || std::ptr::eq(*o, &m.b),
                    _ => false,
                };
                let out = if staged { &mut stage } else { &mut main };
                pieces(&ctx, op.loop_parent, o, write, out);
            }
        }
        if matches!(kind, OpKind::MmadL1(_)) {
            parts_of[i].push(parts.len() as u32);
            parts.push(Part {
                op: id,
                pipe: Pipe::Mte1,
                pieces: stage,
            });
        }
        parts_of[i].push(parts.len() as u32);
        parts.push(Part {
            op: id,
            pipe,
            pieces: main,
        });
    });
    (parts, parts_of)
}

struct Ctx<'a> {
    program: &'a Program,
    plan: &'a Plan,
    ranges: &'a [Option<(i64, i64)>],
    /// Per loop op: its whole-run iteration count as an expression, when it can be written.
    counts: &'a [Option<Expr>],
}

/// The loop among `loop_parent` and its enclosing loops whose whole-run count picks the slot
/// `e` of an `n`-slot buffer, and the shift `c` with `e ≡ count + c (mod n)` in every
/// iteration: `@(kk % 2)` inside a block loop whose `kk` trips are even, `@(n % 2)` on a tile
/// loop, `@((n * 4 + kk) % 2)`, or the count itself. The test is on linear forms, coefficient by
/// coefficient modulo `n`, so it holds for every value the loop variables take.
fn slot_loop(ctx: &Ctx, loop_parent: Option<OpId>, e: &Expr, n: u32) -> Option<(OpId, u32)> {
    let m = n as i128;
    let (inner, wrapped) = match e {
        Expr::Binary(BinOp::Rem, inner, k) if k.as_const() == Some(n as i64) => (&**inner, true),
        _ => (e, false),
    };
    // `%` is the remainder of a non-negative value only; without `% n` the value is the slot
    let (lo, hi) = inner.range(ctx.ranges)?;
    if lo < 0 || (!wrapped && hi >= n as i64) {
        return None;
    }
    let lin = Linear::of(inner)?;
    let program = ctx.program;
    // every variable of the form becomes `from + step * u`, u counting its loop's iterations
    let mut steps = Vec::with_capacity(lin.terms.len());
    let mut shift = lin.c;
    for &(v, a) in &lin.terms {
        // a launch variable (`block`) has no loop to count: no slot loop
        let OpKind::For(l) = &program.op(program.vars[v.index()].loop_op?).kind else {
            return None;
        };
        let (f, st) = (l.from.as_const()?, l.step.as_const()?);
        shift = shift.checked_add(a.checked_mul(f as i128)?)?;
        steps.push((v, a.checked_mul(st as i128)?.rem_euclid(m)));
    }
    let mut at = loop_parent;
    while let Some(lp) = at {
        at = program.op(lp).loop_parent;
        // count = Σ weight(L) · u(L) over lp and the loops around it
        let Some(terms) = super::tree::count_terms(program, ctx.counts, lp, n) else {
            continue;
        };
        let want: Vec<(sim::VarId, i128)> = terms.iter().map(|(f, w)| (f.var, *w)).collect();
        let coef = |v| steps.iter().find(|s| s.0 == v).map_or(0, |s| s.1);
        let chain_ok = want.iter().all(|&(v, w)| coef(v) == w);
        let others_ok = steps
            .iter()
            .all(|&(v, a)| a == 0 || want.iter().any(|w| w.0 == v));
        if chain_ok && others_ok {
            return Some((lp, shift.rem_euclid(m) as u32));
        }
    }
    None
}

/// `Σ coefficient · variable + c`, for expressions built of constants, variables, `+`, `-`
/// and products with a constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Linear {
    /// By variable, no zero coefficients.
    pub terms: Vec<(sim::VarId, i128)>,
    pub c: i128,
}

impl Linear {
    pub fn of(e: &Expr) -> Option<Linear> {
        let mut l = Linear {
            terms: Vec::new(),
            c: 0,
        };
        l.add(e, 1)?;
        l.terms.retain(|t| t.1 != 0);
        l.terms.sort_unstable();
        Some(l)
    }

    fn add(&mut self, e: &Expr, k: i128) -> Option<()> {
        match e {
            Expr::Const(v) => self.c = self.c.checked_add(k.checked_mul(*v as i128)?)?,
            Expr::Var(v) => match self.terms.iter_mut().find(|t| t.0 == *v) {
                Some(t) => t.1 = t.1.checked_add(k)?,
                None => self.terms.push((*v, k)),
            },
            Expr::Unary(sim::expr::UnOp::Neg, a) => self.add(a, k.checked_neg()?)?,
            Expr::Binary(BinOp::Add, a, b) => {
                self.add(a, k)?;
                self.add(b, k)?;
            }
            Expr::Binary(BinOp::Sub, a, b) => {
                self.add(a, k)?;
                self.add(b, k.checked_neg()?)?;
            }
            Expr::Binary(BinOp::Mul, a, b) => match (a.as_const(), b.as_const()) {
                (Some(x), _) => self.add(b, k.checked_mul(x as i128)?)?,
                (_, Some(y)) => self.add(a, k.checked_mul(y as i128)?)?,
                _ => return None,
            },
            _ => return None,
        }
        // keep coefficients far from overflow: nothing real comes near
        (self.c.abs() < 1 << 100).then_some(())
    }
}

fn pieces(ctx: &Ctx, loop_parent: Option<OpId>, o: &Operand, write: bool, out: &mut Vec<Piece>) {
    let (program, plan, ranges) = (ctx.program, ctx.plan, ctx.ranges);
    let fp = Footprint::new(&Bases::of(program), o);
    let elems = match fp.elems_over(ranges) {
        Over::Range(lo, hi) => Some((lo, hi)),
        Over::Empty => return,
        Over::Unknown => None,
    };
    let to_bytes = |e| fp.bytes(e);
    match o.base {
        Ref::Tensor(t) => {
            let (lo, hi) = elems.map_or((0, program.tensor(t).bytes), to_bytes);
            out.push(Piece {
                mem: Memory::Tensor(t),
                lo,
                hi,
                write,
                slot: None,
                buf: None,
                n: 1,
                untied: false,
            });
        }
        _ => {
            for b in program.root_buffers(o.base) {
                let buf = program.buffer(b);
                let bp = &plan.buffers[b.index()];
                let n = bp.offsets.len() as u32;
                if n == 0 {
                    continue; // no address: nothing to order
                }
                let (lo, hi) = match elems {
                    Some(e) => {
                        let (lo, hi) = to_bytes(e);
                        (lo.min(buf.bytes), hi.min(buf.bytes.max(1)))
                    }
                    None => (0, buf.bytes.max(1)),
                };
                let mem = Memory::Scope(buf.scope);
                let mut push = |k: u32, slot: Option<SlotCond>, untied: bool| {
                    let off = bp.offsets[k as usize];
                    out.push(Piece {
                        mem,
                        lo: off + lo,
                        hi: off + hi,
                        write,
                        slot,
                        buf: Some((b, k)),
                        n,
                        untied,
                    });
                };
                match (&o.slot, n, loop_parent) {
                    (Some(e), _, _) => match (e.as_const(), slot_loop(ctx, loop_parent, e, n)) {
                        (Some(k), _) => push((k.max(0) as u32) % n, None, false),
                        // slot k is in use when count + c ≡ k
                        (None, Some((lp, c))) => (0..n).for_each(|k| {
                            push(
                                k,
                                Some(SlotCond {
                                    lp,
                                    n,
                                    k: (k + n - c) % n,
                                }),
                                false,
                            )
                        }),
                        (None, None) => (0..n).for_each(|k| push(k, None, true)),
                    },
                    (None, 1, _) | (None, _, None) => push(0, None, false),
                    // the engine picks the slot by the loop's iterations: tied when the
                    // count can be written
                    (None, _, Some(lp)) => {
                        let tied = ctx.counts[lp.index()].is_some();
                        (0..n).for_each(|k| push(k, Some(SlotCond { lp, n, k }), !tied))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::Space;

    fn cond(lp: usize, n: u32, k: u32) -> Option<SlotCond> {
        Some(SlotCond {
            lp: OpId::new(lp),
            n,
            k,
        })
    }

    /// The slot conditions of the pieces of the L1 tile read by the first `copy` of a blocked
    /// matmul whose `kk` loop has `ktrips` trips and whose L1 slot is `slot`.
    fn copy_slots(ktrips: u32, slot: &str) -> Vec<Option<SlotCond>> {
        copy_slots_of(ktrips, slot, slot)
    }

    fn copy_slots_of(ktrips: u32, slot: &str, copy_slot: &str) -> Vec<Option<SlotCond>> {
        let text = format!(
            "kernel: k\ncore: aic\nsync: auto\n\
             gm:\n  a: {{ shape: [64, {k}], dtype: f16 }}\n\
             buffers:\n  l1a: {{ scope: l1, shape: [64, 64], dtype: f16, multi: 2 }}\n\
             \x20 l0a: {{ scope: l0a, shape: [64, 64], dtype: f16 }}\n\
             body:\n\
             \x20 - for: {{ var: nb, to: 3 }}\n    body:\n\
             \x20     - for: {{ var: kk, to: {ktrips} }}\n        body:\n\
             \x20         - load: {{ src: \"a[:, kk * 64 : (kk + 1) * 64]\", dst: \"l1a@({slot})\" }}\n\
             \x20         - for: {{ var: j, to: 2 }}\n            body:\n\
             \x20             - copy: {{ src: \"l1a@({copy_slot})\", dst: l0a }}\n\
             \x20             - use: [l0a]\n",
            k = 64 * ktrips
        );
        let config = crate::test_support::config();
        let program =
            sim::load_program(&text, "p.yaml", &config, &[]).unwrap_or_else(|e| panic!("{e}"));
        let planned = crate::plan_program(&program, &config, &Default::default()).unwrap();
        let tree = Tree::new(&program);
        let (parts, _) = parts(&tree, &planned.plan);
        let copy = parts
            .iter()
            .find(|p| program.op(p.op).kind.name() == "copy")
            .unwrap();
        copy.pieces
            .iter()
            .filter(|x| x.mem == Memory::Scope(Space::L1))
            .map(|x| x.slot)
            .collect()
    }

    #[test]
    fn a_slot_that_follows_a_loops_count_is_tied_to_it() {
        // ops in pre-order: nb is op 0, kk op 1
        let tied = |shift: u32| vec![cond(1, 2, shift), cond(1, 2, (1 + shift) % 2)];
        // 4 kk trips: kk's count is 4 nb + kk, and kk % 2 follows it
        assert_eq!(copy_slots(4, "kk % 2"), tied(0));
        assert_eq!(copy_slots(4, "(nb * 4 + kk) % 2"), tied(0));
        // slot 0 is in use when count + 1 is even
        assert_eq!(copy_slots(4, "(kk + 1) % 2"), tied(1));
        // 3 kk trips: kk restarts at an odd count, so kk % 2 does not alternate (0 1 0 0 1 0)
        assert_eq!(copy_slots(3, "kk % 2"), vec![None, None]);
        // ... but the whole-run count does
        assert_eq!(copy_slots(3, "(nb * 3 + kk) % 2"), tied(0));
        assert_eq!(copy_slots(3, "(3 * nb + kk) % 2"), tied(0));
        // a slot that changes inside the kk loop (j) follows no count the copy sits in
        assert_eq!(copy_slots_of(4, "kk % 2", "(kk + j) % 2"), vec![None, None]);
    }

    #[test]
    fn slots_of_one_counter_meet_only_at_matching_iterations() {
        let l = OpId::new(0);
        // slot 0 of a double buffer, then slot 1: never in one iteration, one iteration apart
        assert!(!slots_meet(cond(0, 2, 0), cond(0, 2, 1), Rel::Same));
        assert!(slots_meet(
            cond(0, 2, 0),
            cond(0, 2, 1),
            Rel::Later { lp: l, d: 1 }
        ));
        assert!(!slots_meet(
            cond(0, 2, 0),
            cond(0, 2, 0),
            Rel::Later { lp: l, d: 1 }
        ));
        assert!(slots_meet(
            cond(0, 2, 0),
            cond(0, 2, 0),
            Rel::Later { lp: l, d: 2 }
        ));
        // different slot counts: 2 and 3 slots share a residue every gcd = 1 step
        assert!(slots_meet(cond(0, 2, 1), cond(0, 3, 0), Rel::Same));
        // another loop's counter relates nothing
        assert!(slots_meet(cond(0, 2, 0), cond(1, 2, 1), Rel::Same));
        assert!(slots_meet(
            cond(0, 2, 0),
            cond(0, 2, 1),
            Rel::Later {
                lp: OpId::new(5),
                d: 2
            }
        ));
    }

    #[test]
    fn distance_agrees_with_trying_every_distance() {
        // xorshift: random slot patterns of one loop, another loop, or none
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut r = |n: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % n
        };
        let lp = OpId::new(0);
        for _ in 0..2000 {
            let part = |r: &mut dyn FnMut(u64) -> u64| Part {
                op: OpId::new(1),
                pipe: Pipe::V,
                pieces: (0..1 + r(3))
                    .map(|_| {
                        let n = 1 + r(4) as u32;
                        let slot = match r(3) {
                            0 => None,
                            1 => cond(0, n, r(n as u64) as u32),
                            _ => cond(9, n, r(n as u64) as u32),
                        };
                        let lo = 64 * r(4);
                        Piece {
                            mem: Memory::Scope(Space::Ub),
                            lo,
                            hi: lo + 64 * (1 + r(2)),
                            write: r(2) == 0,
                            slot,
                            buf: None,
                            n,
                            untied: false,
                        }
                    })
                    .collect(),
            };
            let (a, b) = (part(&mut r), part(&mut r));
            let brute = (1..=64).find(|&d| conflict(&a, &b, Rel::Later { lp, d }));
            assert_eq!(distance(&a, &b, lp), brute, "{a:?}\n{b:?}");
        }
    }

    #[test]
    fn distance_is_the_slot_count_for_a_rotating_buffer() {
        let piece = |k, write| Piece {
            mem: Memory::Scope(Space::Ub),
            lo: 64 * k as u64,
            hi: 64 * k as u64 + 64,
            write,
            slot: cond(0, 3, k),
            buf: None,
            n: 3,
            untied: false,
        };
        let part = |write| Part {
            op: OpId::new(1),
            pipe: Pipe::V,
            pieces: (0..3).map(|k| piece(k, write)).collect(),
        };
        assert_eq!(distance(&part(false), &part(true), OpId::new(0)), Some(3));
        assert!(conflict(&part(false), &part(true), Rel::Same));
        assert!(!conflict(&part(false), &part(false), Rel::Same));
    }
}
