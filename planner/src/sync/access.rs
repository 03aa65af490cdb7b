//! What each op touches, statically: its *parts* (one per pipe instruction it becomes: two for
//! an `mmad_l1`) and, per part, the byte ranges of each memory it reads or writes under the
//! plan's addresses. Conservative where the program is dynamic: an index or window offset that
//! depends on loop variables covers every value the variables can take, and an `@k` slot that
//! is not a constant covers every slot.

use sim::expr::{BinOp, Expr};
use sim::footprint::{Bases, Footprint, Memory, Over};
use sim::program::{OpKind, Operand, Program, Ref};
use sim::{OpId, Pipe};

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

/// The parts of every op, in op order (`parts_of[op]` lists indices into the returned parts).
pub(super) fn parts(tree: &Tree, plan: &Plan) -> (Vec<Part>, Vec<Vec<u32>>) {
    let program = tree.program;
    let ranges = sim::footprint::var_ranges(program);
    let ctx = Ctx {
        program,
        plan,
        ranges: &ranges,
        counts: &tree.counts,
    };
    let mut parts = Vec::new();
    let mut parts_of = vec![Vec::new(); program.ops.len()];
    for (i, op) in program.ops.iter().enumerate() {
        let id = OpId::new(i);
        let kind = &op.kind;
        if kind.is_control()
            || matches!(
                kind,
                OpKind::Use { .. }
                    | OpKind::SetFlag { .. }
                    | OpKind::WaitFlag { .. }
                    | OpKind::Barrier(_)
            )
        {
            continue;
        }
        let Some(pipe) = op.pipe else { continue };
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
    }
    (parts, parts_of)
}

struct Ctx<'a> {
    program: &'a Program,
    plan: &'a Plan,
    ranges: &'a [Option<(i64, i64)>],
    /// Per loop op: its whole-run iteration count as an expression, when it can be written.
    counts: &'a [Option<Expr>],
}

/// The loop among `loop_parent` and its enclosing loops whose count `e` takes modulo `n`.
fn slot_loop(ctx: &Ctx, loop_parent: Option<OpId>, e: &Expr, n: u32) -> Option<OpId> {
    let Expr::Binary(BinOp::Rem, count, m) = e else {
        return None;
    };
    if m.as_const() != Some(n as i64) {
        return None;
    }
    let mut at = loop_parent;
    while let Some(lp) = at {
        if ctx.counts[lp.index()].as_ref() == Some(count) {
            return Some(lp);
        }
        at = ctx.program.op(lp).loop_parent;
    }
    None
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
                let mut push = |k: u32, slot: Option<SlotCond>| {
                    let off = bp.offsets[k as usize];
                    out.push(Piece {
                        mem,
                        lo: off + lo,
                        hi: off + hi,
                        write,
                        slot,
                    });
                };
                match (&o.slot, n, loop_parent) {
                    (Some(e), _, _) => match (e.as_const(), slot_loop(ctx, loop_parent, e, n)) {
                        (Some(k), _) => push((k.max(0) as u32) % n, None),
                        (None, Some(lp)) => {
                            (0..n).for_each(|k| push(k, Some(SlotCond { lp, n, k })))
                        }
                        (None, None) => (0..n).for_each(|k| push(k, None)),
                    },
                    (None, 1, _) | (None, _, None) => push(0, None),
                    (None, _, Some(lp)) => {
                        (0..n).for_each(|k| push(k, Some(SlotCond { lp, n, k })))
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
