//! The synchronisation that orders a hazard's two accesses, placed where `sync: auto` places it
//! (docs/sync.md; `planner::sync`, whose rules this follows): for a pair on one core, in the
//! deepest block holding both ops, a `set_flag` after the first op's ancestor there and a
//! `wait_flag` before the second's (a `barrier` before the second when both are on one pipe);
//! when the second comes first in that block (the first access is from an earlier iteration),
//! the pair goes in the body of the innermost loop around both, with a balancing `set_flag`
//! before and `wait_flag` after the outermost loop around that. Across cores, a `cross_set`
//! after the first op and a `cross_wait` before the second, as the cross-core pass inserts
//! around a hand-off. Ids are the lowest that no flag of the program already uses.

use std::collections::HashMap;
use std::fmt;

use crate::expr::Expr;
use crate::ids::OpId;
use crate::launch::Slot;
use crate::program::{OpKind, Program};
use crate::types::Pipe;

/// What to insert to order a hazard's two accesses.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Fix {
    /// In the order to read them: the set (or barrier), the wait, then a loop's balancing set
    /// and wait.
    pub ops: Vec<FixOp>,
}

/// One op to insert.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FixOp {
    /// The op as written in a program (`set_flag: { src: mte3, dst: mte2, id: 1 }`).
    pub yaml: String,
    /// After `op`, or before it.
    pub after: bool,
    pub op: OpId,
    /// `op`'s YAML path.
    pub path: String,
    /// `op`'s YAML key.
    pub name: &'static str,
    /// Where `op` is written (0 when unknown: a program built in code).
    pub line: u32,
    pub column: u32,
    /// How messages name `op`: file, line, column and text ([`Program::locate`]).
    pub at: String,
}

impl fmt::Display for FixOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.after { "after" } else { "before" };
        write!(f, "{} {at} {}", self.yaml, self.at)
    }
}

impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.ops.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{op}")?;
        }
        Ok(())
    }
}

/// One side of the pair: the op and the pipe of its access.
#[derive(Clone, Copy, Debug)]
pub(super) struct End<'p> {
    /// The kernel part the op is of, and its program.
    pub part: usize,
    pub program: &'p Program,
    pub op: OpId,
    pub pipe: Pipe,
}

/// The synchronisation for a pair on one core, `first` issued before `second`; `None` when
/// nothing can order it (S orders everything it issued, so a first access on S is never
/// unordered).
pub(super) fn within(ids: &mut Ids, event_ids: u32, first: End, second: End) -> Option<Fix> {
    let program = first.program;
    if first.pipe == Pipe::S {
        return None;
    }
    let (block, a, b) = common(program, first.op, second.op);
    let (src, dst) = (first.pipe, second.pipe);
    let place = |yaml: &str, after: bool, op: OpId| FixOp {
        yaml: yaml.to_string(),
        after,
        op,
        path: program.op(op).path.clone(),
        name: program.op(op).kind.name(),
        line: program.op(op).loc.line,
        column: program.op(op).loc.column,
        at: program.locate(op),
    };
    let barrier = |before: OpId| Fix {
        ops: vec![place(
            &format!("barrier: {}", dst.yaml_name()),
            false,
            before,
        )],
    };
    let id = ids
        .flag(first.part, program, event_ids, src, dst)
        .map_or_else(|| "?".to_string(), |i| i.to_string());
    let flag = |key: &str| {
        format!(
            "{key}: {{ src: {}, dst: {}, id: {id} }}",
            src.yaml_name(),
            dst.yaml_name()
        )
    };
    if a < b {
        // in program order within the block
        if src == dst {
            return Some(barrier(b));
        }
        return Some(Fix {
            ops: vec![
                place(&flag("set_flag"), true, a),
                place(&flag("wait_flag"), false, b),
            ],
        });
    }
    // the first access is from an earlier iteration of a loop around both
    let lp = enclosing_loop(program, block)?;
    let (a, b) = (
        anchor(program, first.op, lp),
        anchor(program, second.op, lp),
    );
    if src == dst {
        return Some(barrier(b));
    }
    let mut hoist = lp;
    while let Some(up) = program.op(hoist).loop_parent {
        hoist = up;
    }
    let (set, wait) = (flag("set_flag"), flag("wait_flag"));
    Some(Fix {
        ops: vec![
            place(&set, true, a),
            place(&wait, false, b),
            // the first wait finds a set, and the last set is consumed
            place(&set, false, hoist),
            place(&wait, true, hoist),
        ],
    })
}

/// The cross-core flags for a pair on two cores: the first core's `cross_set` after its op, on
/// the pipe of its access, and the second core's `cross_wait` before its op, on the pipe of
/// its. Mode 0 between cores of one type, mode 2 between the cube and a vector core of one AI
/// core; `None` between a cube and a vector core of different AI cores, which no one mode
/// links.
pub(super) fn across(
    ids: &mut Ids,
    flag_ids: u32,
    programs: &[&Program],
    first: (End, &Slot),
    second: (End, &Slot),
) -> Option<Fix> {
    let ((a, sa), (b, sb)) = (first, second);
    let mode = if sa.part == sb.part {
        0
    } else if sa.ai_core == sb.ai_core {
        2
    } else {
        return None;
    };
    let id = ids
        .cross(programs, flag_ids)
        .map_or_else(|| "?".to_string(), |i| i.to_string());
    let place = |end: End, yaml: String, after: bool| FixOp {
        yaml,
        after,
        op: end.op,
        path: end.program.op(end.op).path.clone(),
        line: end.program.op(end.op).loc.line,
        column: end.program.op(end.op).loc.column,
        at: end.program.locate(end.op),
        name: end.program.op(end.op).kind.name(),
    };
    Some(Fix {
        ops: vec![
            place(
                a,
                format!(
                    "cross_set: {{ mode: {mode}, pipe: {}, id: {id} }}",
                    a.pipe.yaml_name()
                ),
                true,
            ),
            place(
                b,
                format!("cross_wait: {{ pipe: {}, id: {id} }}", b.pipe.yaml_name()),
                false,
            ),
        ],
    })
}

/// A block: its control op (`None`: the kernel's body) and which of its blocks (0, or 1 for
/// an `if`'s `else`).
type Block = (Option<OpId>, u8);

fn block_of(program: &Program, op: OpId) -> Block {
    match program.op(op).parent {
        None => (None, 0),
        Some(p) => {
            let els = match &program.op(p).kind {
                OpKind::If { els: Some(e), .. } => e.ops.contains(&op),
                _ => false,
            };
            (Some(p), els as u8)
        }
    }
}

/// The op itself and its enclosing control ops, innermost first.
fn ancestors(program: &Program, op: OpId) -> Vec<OpId> {
    let mut out = vec![op];
    while let Some(p) = program.op(*out.last().unwrap()).parent {
        out.push(p);
    }
    out
}

/// The deepest block holding both ops, and the ancestor of each in it (the op itself when it
/// is in that block).
fn common(program: &Program, a: OpId, b: OpId) -> (Block, OpId, OpId) {
    let (xa, xb) = (ancestors(program, a), ancestors(program, b));
    for &x in &xa {
        let bx = block_of(program, x);
        if let Some(&y) = xb.iter().find(|&&y| block_of(program, y) == bx) {
            return (bx, x, y);
        }
    }
    // both reach the kernel's body
    let (x, y) = (*xa.last().unwrap(), *xb.last().unwrap());
    ((None, 0), x, y)
}

/// The innermost `for` or `while` whose body holds `block` (at any depth).
fn enclosing_loop(program: &Program, block: Block) -> Option<OpId> {
    let mut at = block.0;
    while let Some(op) = at {
        if matches!(program.op(op).kind, OpKind::For(_) | OpKind::While { .. }) {
            return Some(op);
        }
        at = program.op(op).parent;
    }
    None
}

/// The ancestor of `op` directly in the body of loop `lp`.
fn anchor(program: &Program, op: OpId, lp: OpId) -> OpId {
    let mut at = op;
    while let Some(p) = program.op(at).parent {
        if p == lp {
            break;
        }
        at = p;
    }
    at
}

/// The lowest free ids, found once per part and pipe pair (a run may report many hazards).
#[derive(Default)]
pub(super) struct Ids {
    flags: HashMap<(usize, Pipe, Pipe), Option<u32>>,
    cross: Option<Option<u32>>,
}

impl Ids {
    /// The lowest event id of pipe pair `src -> dst` that no `set_flag` or `wait_flag` of the
    /// program (part `part`) can use.
    fn flag(
        &mut self,
        part: usize,
        program: &Program,
        event_ids: u32,
        src: Pipe,
        dst: Pipe,
    ) -> Option<u32> {
        *self.flags.entry((part, src, dst)).or_insert_with(|| {
            let ids = program.ops.iter().filter_map(|op| match &op.kind {
                OpKind::SetFlag { src: s, dst: d, id }
                | OpKind::WaitFlag { src: s, dst: d, id }
                    if (*s, *d) == (src, dst) =>
                {
                    Some(id)
                }
                _ => None,
            });
            let mut used = vec![false; event_ids as usize];
            mark(program, ids, &mut used);
            used.iter().position(|u| !u).map(|i| i as u32)
        })
    }

    /// The lowest cross-core counter id that no `cross_set` or `cross_wait` of the kernel's
    /// parts can use.
    fn cross(&mut self, programs: &[&Program], flag_ids: u32) -> Option<u32> {
        *self.cross.get_or_insert_with(|| {
            let mut used = vec![false; flag_ids as usize];
            for p in programs {
                let ids = p.ops.iter().filter_map(|op| match &op.kind {
                    OpKind::CrossSet { id, .. } | OpKind::CrossWait { id, .. } => Some(id),
                    _ => None,
                });
                mark(p, ids, &mut used);
            }
            used.iter().position(|u| !u).map(|i| i as u32)
        })
    }
}

/// Marks every id each expression can take (all of them when it cannot be bounded).
fn mark<'a>(program: &Program, ids: impl Iterator<Item = &'a Expr>, used: &mut [bool]) {
    let ranges = var_hulls(program);
    let n = used.len() as i64;
    for id in ids {
        let (lo, hi) = id.bounds(&ranges).unwrap_or((0, i64::MAX));
        let (lo, hi) = (
            lo.clamp(0, n) as usize,
            hi.saturating_add(1).clamp(0, n) as usize,
        );
        for u in used.iter_mut().take(hi).skip(lo) {
            *u = true;
        }
    }
}

/// The values each loop variable can take anywhere in `program` (the hull over every op's
/// ranges; `None` where unbounded), so an id expression is bounded wherever it stands.
fn var_hulls(program: &Program) -> Vec<Option<(i64, i64)>> {
    let mut hulls: Vec<Option<(i64, i64)>> = vec![None; program.vars.len()];
    crate::footprint::walk_ranges(program, &mut |_, ranges| {
        for (h, r) in hulls.iter_mut().zip(ranges) {
            if let Some((lo, hi)) = *r {
                *h = Some(h.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
    });
    hulls
}
