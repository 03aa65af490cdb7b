//! An independent check of a finished [`Plan`]. It reads only the program (`sim`'s model), the
//! config and the plan, and derives what is live itself: it shares no code or tables with the
//! planner's liveness, inplace rules or placement, so a bug there cannot validate itself.
//!
//! Static checks:
//! - every buffer of a scope of the core has a plan, with at least one offset per declared slot
//!   (exactly one per `at:` offset; more when it became a multi-buffer) and slots at least as
//!   large as the buffer;
//! - every offset is a multiple of the scope alignment (from the config);
//! - every slot `[offset, offset + bytes)` lies inside the scope capacity (the plan's, which may
//!   be overridden);
//! - the slots of a multi-buffer do not overlap each other;
//! - a `unique: true` buffer shares no byte with another storage entry, whatever the lifetimes;
//! - `share:` members have their target's offsets (they are one storage entry with it).
//!
//! Dynamic check, the ground truth for reuse: the program's control flow is executed in program
//! order (loops unrolled with their evaluated bounds, `if` conditions evaluated, `while` trips),
//! and every value stored in a buffer slot is followed from its write to its last read.
//! - Slots: an operand `@k` uses slot `k mod n`, n the number of offsets the plan gives its
//!   buffer; without `@`, a buffer with n > 1 offsets uses slot (iterations completed so far,
//!   over the whole run, by the op's innermost enclosing `for`/`while`) mod n, slot 0 outside
//!   loops. A `select` reads and writes every buffer it may name; a window touches its root
//!   buffer. An access touches the bytes the plan gives the slot (offset + the buffer's bytes).
//! - Values, per (buffer, slot): a write of the whole buffer starts a new value; any other
//!   write (part of it, or through a `select`) extends the current value, so it is a read and
//!   a write. `mmad`/`mmad_l1` read `c` only when `init` evaluates to 0 at that iteration. An
//!   op's reads happen before its writes. `share:` members are one storage entry with their
//!   target: each member's value is followed in its own bytes (a member may be smaller than
//!   the entry, and writing all of it leaves the rest alone), and members never clobber each
//!   other, since sharing is what the program asked for.
//! - A value written at step w and last read at step r is live over `w <= s < r`. A write by
//!   another storage entry at step s, to bytes of the value, is a violation
//!   ([`Violation::Clobbered`]). `s == r` is allowed: the op reads the old value and writes the
//!   new one, which is how inplace works. Two outputs of one op on shared bytes clobber each
//!   other when the overwritten one is read later.
//!
//! Limits: the run is bounded by [`STEP_LIMIT`] dynamic steps (ops executed plus loop
//! iterations); a longer program is checked on that prefix of its execution. A run error (an
//! expression that cannot be evaluated, a zero `for` step, a negative trip count) ends the
//! checked prefix where the engine would stop. Programs run sequentially here: what the
//! pipes may overlap is the sync pass's concern, not the plan's. Likewise, whether an op may
//! write its output over an input it reads in the same step (same offset, elementwise) is the
//! inplace rules' concern: here that step is the input's last read, so it is allowed.

use crate::plan::Plan;
use sim::expr::Expr;
use sim::program::{Block, ForLoop, OpKind, Operand, Program};
use sim::{BufferId, Config, OpId, Space, VarId};
use std::collections::HashSet;
use std::fmt;

/// Dynamic steps (ops executed plus loop iterations) the check follows before it stops.
pub const STEP_LIMIT: u64 = 2_000_000;

/// One problem found in a plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("buffer {buffer}: scope {scope:?} has no plan")]
    MissingScope { buffer: String, scope: Space },
    #[error("buffer {buffer}: {got} offsets for {want} declared slots")]
    SlotCount {
        buffer: String,
        got: usize,
        want: usize,
    },
    #[error("buffer {buffer}: slot of {got} bytes holds {want} bytes")]
    SlotTooSmall { buffer: String, got: u64, want: u64 },
    #[error("buffer {buffer} slot {slot}: offset {offset} is not a multiple of {align}")]
    Misaligned {
        buffer: String,
        slot: usize,
        offset: u64,
        align: u64,
    },
    #[error("buffer {buffer} slot {slot}: bytes [{start}, {end}) exceed the capacity {capacity}")]
    OutOfCapacity {
        buffer: String,
        slot: usize,
        start: u64,
        end: u64,
        capacity: u64,
    },
    #[error("buffer {buffer}: slots {a} and {b} overlap at bytes [{start}, {end})")]
    SlotsOverlap {
        buffer: String,
        a: usize,
        b: usize,
        start: u64,
        end: u64,
    },
    /// A live value overwritten by another storage entry (module docs, dynamic check).
    #[error("buffer {value} slot {value_slot}, written by {written}, is overwritten at bytes [{start}, {end}) by {by} slot {by_slot} in {overwritten} before {read} reads it")]
    Clobbered {
        /// The buffer whose value is lost (the one its write named).
        value: String,
        value_slot: usize,
        /// The buffer written over it.
        by: String,
        by_slot: usize,
        /// The bytes both hold.
        start: u64,
        end: u64,
        /// The op that wrote the value.
        written: Occurrence,
        /// The op that wrote `by` while the value was live.
        overwritten: Occurrence,
        /// The op that read the value afterwards.
        read: Occurrence,
    },
    #[error(
        "unique buffer {a} slot {slot_a} shares bytes [{start}, {end}) with {b} slot {slot_b}"
    )]
    UniqueShared {
        a: String,
        slot_a: usize,
        b: String,
        slot_b: usize,
        start: u64,
        end: u64,
    },
    #[error("buffer {buffer} shares {target} but has offsets {got:?}, not {want:?}")]
    ShareMismatch {
        buffer: String,
        target: String,
        got: Vec<u64>,
        want: Vec<u64>,
    },
}

/// One execution of an op: its YAML path and the values of its enclosing loops' variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occurrence {
    pub path: String,
    /// `t=1, j=0`, outermost loop first; empty outside loops.
    pub iteration: String,
}

impl fmt::Display for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.iteration.is_empty() {
            write!(f, "{}", self.path)
        } else {
            write!(f, "{} ({})", self.path, self.iteration)
        }
    }
}

/// Checks `plan` (module docs).
pub fn validate(program: &Program, config: &Config, plan: &Plan) -> Result<(), Vec<Violation>> {
    validate_steps(program, config, plan, STEP_LIMIT)
}

/// [`validate`] with the dynamic check bounded by `limit` steps.
fn validate_steps(
    program: &Program,
    config: &Config,
    plan: &Plan,
    limit: u64,
) -> Result<(), Vec<Violation>> {
    let root = share_roots(program);
    let mut out = static_checks(program, config, plan, &root);
    out.extend(dynamic_check(program, plan, &root, limit));
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// The share root of each buffer, computed here rather than taken from the planner.
fn share_roots(program: &Program) -> Vec<usize> {
    let n = program.buffers.len();
    (0..n)
        .map(|i| {
            let mut b = i;
            // the loader rejects share cycles; the bound keeps a bad input from looping
            for _ in 0..n {
                match program.buffers[b].share {
                    Some(next) => b = next.index(),
                    None => break,
                }
            }
            b
        })
        .collect()
}

fn static_checks(
    program: &Program,
    config: &Config,
    plan: &Plan,
    root: &[usize],
) -> Vec<Violation> {
    let mut out = Vec::new();
    let name = |b: usize| program.buffers[b].name.clone();
    let core = config.cores.get(program.core.index());
    let align_of = |s: Space| {
        core.and_then(|c| c.scopes.iter().find(|x| x.space == s))
            .map(|x| x.plan_align)
    };
    let n = program.buffers.len();
    // `slots[b]`: the byte ranges checked for `unique` afterwards
    let mut slots: Vec<Vec<(u64, u64)>> = vec![Vec::new(); n];
    for (i, buf) in program.buffers.iter().enumerate() {
        let Some(bp) = plan.buffers.get(i) else {
            out.push(Violation::SlotCount {
                buffer: name(i),
                got: 0,
                want: buf.multi as usize,
            });
            continue;
        };
        let Some(sp) = plan.scope(buf.scope) else {
            out.push(Violation::MissingScope {
                buffer: name(i),
                scope: buf.scope,
            });
            continue;
        };
        // more slots than declared: the buffer became a multi-buffer (inplaced into one, or
        // upgraded at level 1); its extra slots are checked like any other
        let want = buf.at.as_ref().map_or(buf.multi as usize, |a| a.len());
        let count_ok = match buf.at {
            Some(_) => bp.offsets.len() == want,
            None => bp.offsets.len() >= want.max(1),
        };
        if !count_ok {
            out.push(Violation::SlotCount {
                buffer: name(i),
                got: bp.offsets.len(),
                want,
            });
        }
        if bp.bytes < buf.bytes {
            out.push(Violation::SlotTooSmall {
                buffer: name(i),
                got: bp.bytes,
                want: buf.bytes,
            });
        }
        let align = align_of(buf.scope).unwrap_or(sp.align).max(1);
        for (s, &o) in bp.offsets.iter().enumerate() {
            if o % align != 0 {
                out.push(Violation::Misaligned {
                    buffer: name(i),
                    slot: s,
                    offset: o,
                    align,
                });
            }
            if o + bp.bytes > sp.capacity {
                out.push(Violation::OutOfCapacity {
                    buffer: name(i),
                    slot: s,
                    start: o,
                    end: o + bp.bytes,
                    capacity: sp.capacity,
                });
            }
            slots[i].push((o, o + bp.bytes));
        }
        for a in 0..slots[i].len() {
            for b in a + 1..slots[i].len() {
                if let Some((start, end)) = overlap(slots[i][a], slots[i][b]) {
                    out.push(Violation::SlotsOverlap {
                        buffer: name(i),
                        a,
                        b,
                        start,
                        end,
                    });
                }
            }
        }
        let r = root[i];
        if r != i && buf.at.is_none() && program.buffers[r].at.is_none() {
            let want: Vec<u64> = plan
                .buffers
                .get(r)
                .map_or(Vec::new(), |p| p.offsets.clone());
            if !want.starts_with(&bp.offsets) || bp.offsets.is_empty() {
                out.push(Violation::ShareMismatch {
                    buffer: name(i),
                    target: name(r),
                    got: bp.offsets.clone(),
                    want,
                });
            }
        }
    }

    // `unique`: pairs (a, b), a < b, of different entries in one scope where either is unique
    let uniques: Vec<usize> = (0..n).filter(|&b| program.buffers[b].unique).collect();
    for a in 0..n {
        let others: Box<dyn Iterator<Item = usize>> = if program.buffers[a].unique {
            Box::new(a + 1..n)
        } else {
            let from = uniques.partition_point(|&u| u <= a);
            Box::new(uniques[from..].iter().copied())
        };
        for b in others {
            let (ba, bb) = (&program.buffers[a], &program.buffers[b]);
            if ba.scope != bb.scope || root[a] == root[b] || (ba.at.is_some() && bb.at.is_some()) {
                continue;
            }
            for (sa, &ra) in slots[a].iter().enumerate() {
                for (sb, &rb) in slots[b].iter().enumerate() {
                    let Some((start, end)) = overlap(ra, rb) else {
                        continue;
                    };
                    let (u, o, su, so) = if ba.unique {
                        (a, b, sa, sb)
                    } else {
                        (b, a, sb, sa)
                    };
                    out.push(Violation::UniqueShared {
                        a: name(u),
                        slot_a: su,
                        b: name(o),
                        slot_b: so,
                        start,
                        end,
                    });
                }
            }
        }
    }
    out
}

/// The shared byte range of two half-open ranges.
fn overlap(a: (u64, u64), b: (u64, u64)) -> Option<(u64, u64)> {
    let start = a.0.max(b.0);
    let end = a.1.min(b.1);
    (start < end).then_some((start, end))
}

// ----- the dynamic check ---------------------------------------------------------------------

/// The storage the dynamic check follows: one cell per (buffer, slot). A `share:` member is a
/// cell of its own, since it names its own bytes of the storage entry; cells of one entry never
/// clobber each other (that is the program's own aliasing).
struct Cells {
    /// Per buffer: its slot 0 cell.
    base: Vec<usize>,
    /// Per buffer: the number of offsets the plan gives it (0: not planned, not followed).
    slots: Vec<usize>,
    /// Per cell: its slot and its bytes (the plan's offset + the buffer's bytes).
    slot: Vec<usize>,
    bytes: Vec<(u64, u64)>,
    /// Per cell: the cells of other storage entries in its scope holding one of its bytes.
    overlaps: Vec<Vec<u32>>,
}

impl Cells {
    fn new(program: &Program, plan: &Plan, root: &[usize]) -> Cells {
        let n = program.buffers.len();
        let slots: Vec<usize> = (0..n)
            .map(|b| plan.buffers.get(b).map_or(0, |p| p.offsets.len()))
            .collect();
        let mut base = vec![0usize; n];
        let (mut slot, mut bytes, mut space, mut entry) = (vec![], vec![], vec![], vec![]);
        for b in 0..n {
            base[b] = slot.len();
            let buf = &program.buffers[b];
            for k in 0..slots[b] {
                let o = plan.buffers[b].offsets[k];
                slot.push(k);
                bytes.push((o, o + buf.bytes));
                space.push(buf.scope);
                entry.push(root[b]);
            }
        }
        // sweep each scope by start: every cell starting inside another's bytes overlaps it
        let mut order: Vec<usize> = (0..slot.len())
            .filter(|&c| bytes[c].0 < bytes[c].1)
            .collect();
        order.sort_by_key(|&c| (space[c], bytes[c].0));
        let mut overlaps = vec![Vec::new(); slot.len()];
        for (i, &a) in order.iter().enumerate() {
            for &b in &order[i + 1..] {
                if space[b] != space[a] || bytes[b].0 >= bytes[a].1 {
                    break;
                }
                if entry[a] != entry[b] {
                    overlaps[a].push(b as u32);
                    overlaps[b].push(a as u32);
                }
            }
        }
        Cells {
            base,
            slots,
            slot,
            bytes,
            overlaps,
        }
    }
}

/// What one operand of an op does to buffer storage.
struct Access<'p> {
    write: bool,
    /// The buffers it touches (every buffer of a `select`).
    roots: Vec<BufferId>,
    /// It names all the elements of its only root buffer.
    all: bool,
    /// `@k`.
    slot: Option<&'p Expr>,
    /// An accumulating `mmad`'s `c`: read only when this evaluates to 0.
    when_zero: Option<&'p Expr>,
}

fn accesses(program: &Program) -> Vec<Vec<Access<'_>>> {
    fn access<'p>(program: &Program, o: &'p Operand, write: bool) -> Option<Access<'p>> {
        let roots = program.root_buffers(o.base);
        if roots.is_empty() {
            return None; // gm
        }
        let all = roots.len() == 1 && o.elements == Some(program.buffer(roots[0]).elements);
        Some(Access {
            write,
            roots,
            all,
            slot: o.slot.as_ref(),
            when_zero: None,
        })
    }
    let access = |o, write| access(program, o, write);
    program
        .ops
        .iter()
        .map(|op| {
            let mut v = Vec::new();
            let kind = &op.kind;
            match kind {
                OpKind::Mmad(m) | OpKind::MmadL1(m) => {
                    v.extend(access(&m.a, false));
                    v.extend(access(&m.b, false));
                    v.extend(access(&m.c, false).map(|mut a| {
                        a.when_zero = Some(&m.init);
                        a
                    }));
                    v.extend(m.bias.iter().filter_map(|b| access(b, false)));
                }
                _ => v.extend(kind.reads().into_iter().filter_map(|o| access(o, false))),
            }
            v.extend(kind.writes().into_iter().filter_map(|o| access(o, true)));
            v
        })
        .collect()
}

/// A value in a cell: who wrote it and the first write of another entry over it.
#[derive(Clone, Copy)]
struct Value {
    step: u64,
    op: OpId,
    buffer: BufferId,
    clobber: Option<Clobber>,
}

#[derive(Clone, Copy)]
struct Clobber {
    step: u64,
    op: OpId,
    buffer: BufferId,
    cell: usize,
}

/// A read of a clobbered value, in steps (iterations are looked up afterwards).
struct Found {
    cell: usize,
    value: Value,
    clobber: Clobber,
    read: u64,
    read_op: OpId,
}

/// The program's execution, in program order (module docs).
struct Run<'a> {
    program: &'a Program,
    cells: &'a Cells,
    accesses: &'a [Vec<Access<'a>>],
    vars: Vec<i64>,
    /// Per loop op: iterations completed, over the whole run.
    completed: Vec<u64>,
    /// The variables of the loops around the current op, outermost first.
    loops: Vec<VarId>,
    step: u64,
    limit: u64,
    stopped: bool,
    values: Vec<Option<Value>>,
    /// Scratch: the cells the current op wrote, with the buffer written.
    written: Vec<(usize, BufferId)>,
    found: Vec<Found>,
    /// (cell, writer op, clobbering op, clobbering buffer, reader op) already reported.
    seen: HashSet<(usize, OpId, OpId, BufferId, OpId)>,
    /// Steps whose iteration is wanted (sorted), and what was captured for them.
    wanted: Vec<u64>,
    captured: Vec<(u64, String)>,
}

impl<'a> Run<'a> {
    fn new(
        program: &'a Program,
        cells: &'a Cells,
        accesses: &'a [Vec<Access<'a>>],
        limit: u64,
        wanted: Vec<u64>,
    ) -> Self {
        Run {
            program,
            cells,
            accesses,
            vars: vec![0; program.vars.len()],
            completed: vec![0; program.ops.len()],
            loops: Vec::new(),
            step: 0,
            limit,
            stopped: false,
            values: vec![None; cells.slot.len()],
            written: Vec::new(),
            found: Vec::new(),
            seen: HashSet::new(),
            wanted,
            captured: Vec::new(),
        }
    }

    /// Counts one step; false once the limit is passed.
    fn tick(&mut self) -> bool {
        self.step += 1;
        if self.step > self.limit {
            self.stopped = true;
        }
        !self.stopped
    }

    /// `None` (and the run stops) when the engine could not evaluate it either.
    fn eval(&mut self, e: &Expr) -> Option<i64> {
        let v = e.eval(&self.vars).ok();
        self.stopped |= v.is_none();
        v
    }

    fn block(&mut self, b: &Block) {
        for &id in &b.ops {
            if self.stopped {
                return;
            }
            self.op(id);
        }
    }

    fn op(&mut self, id: OpId) {
        let program = self.program;
        match &program.op(id).kind {
            OpKind::For(l) => {
                let (Some(f), Some(t), Some(s)) =
                    (self.eval(&l.from), self.eval(&l.to), self.eval(&l.step))
                else {
                    return;
                };
                // the engine's trip count (a step of 0 stops the run there)
                let Some(trips) = ForLoop::trips(f, t, s) else {
                    self.stopped = true;
                    return;
                };
                self.iterate(id, l.var, f as i128, s as i128, trips, &l.body);
            }
            OpKind::While { var, trips, body } => {
                let Some(n) = self.eval(trips) else {
                    return;
                };
                self.iterate(id, *var, 0, 1, n as i128, body);
            }
            OpKind::If { cond, then, els } => {
                let Some(c) = self.eval(cond) else {
                    return;
                };
                if c != 0 {
                    self.block(then);
                } else if let Some(e) = els {
                    self.block(e);
                }
            }
            _ => self.leaf(id),
        }
    }

    fn iterate(&mut self, id: OpId, var: VarId, from: i128, step: i128, trips: i128, body: &Block) {
        if trips < 0 {
            self.stopped = true;
            return;
        }
        self.loops.push(var);
        let mut i = 0;
        while i < trips && self.tick() {
            // an overflowing variable is a run error, as in the engine's evaluation
            let Ok(v) = i64::try_from(from + i * step) else {
                self.stopped = true;
                break;
            };
            self.vars[var.index()] = v;
            self.block(body);
            if self.stopped {
                break;
            }
            self.completed[id.index()] += 1;
            i += 1;
        }
        self.loops.pop();
    }

    /// The cell an access of `op` reaches in buffer `b`; `None` when `b` is not planned or the
    /// slot cannot be evaluated (then the run stops).
    fn cell(&mut self, op: OpId, b: BufferId, slot: Option<&Expr>) -> Option<usize> {
        let n = self.cells.slots[b.index()];
        if n == 0 {
            return None;
        }
        let k = match slot {
            Some(e) => self.eval(e)?.rem_euclid(n as i64) as usize,
            None if n > 1 => match self.program.op(op).loop_parent {
                Some(l) => (self.completed[l.index()] % n as u64) as usize,
                None => 0,
            },
            None => 0,
        };
        Some(self.cells.base[b.index()] + k)
    }

    /// A read of `cell` at the current step: a violation when another entry wrote over its
    /// value at an earlier step.
    fn read(&mut self, cell: usize, op: OpId) {
        let Some(v) = self.values[cell] else {
            return; // nothing written yet (a select member never written at run time)
        };
        let Some(c) = v.clobber.filter(|c| c.step < self.step) else {
            return;
        };
        if self.seen.insert((cell, v.op, c.op, c.buffer, op)) {
            self.found.push(Found {
                cell,
                value: v,
                clobber: c,
                read: self.step,
                read_op: op,
            });
        }
    }

    fn leaf(&mut self, id: OpId) {
        if !self.tick() {
            return;
        }
        if self.wanted.binary_search(&self.step).is_ok() {
            let it = self.iteration();
            self.captured.push((self.step, it));
        }
        let accesses = self.accesses;
        let accs = &accesses[id.index()];
        for a in accs.iter().filter(|a| !a.write) {
            if let Some(e) = a.when_zero {
                match self.eval(e) {
                    Some(0) => {}
                    Some(_) => continue,
                    None => return,
                }
            }
            for &b in &a.roots {
                match self.cell(id, b, a.slot) {
                    Some(c) => self.read(c, id),
                    None if self.stopped => return,
                    None => {}
                }
            }
        }
        self.written.clear();
        for a in accs.iter().filter(|a| a.write) {
            for &b in &a.roots {
                let Some(c) = self.cell(id, b, a.slot) else {
                    if self.stopped {
                        return;
                    }
                    continue;
                };
                let fresh = Value {
                    step: self.step,
                    op: id,
                    buffer: b,
                    clobber: None,
                };
                if a.all {
                    self.values[c] = Some(fresh);
                } else {
                    // the bytes it does not write keep the old value: a read, then the same value
                    self.read(c, id);
                    self.values[c].get_or_insert(fresh);
                }
                self.written.push((c, b));
            }
        }
        // every write of the op lands before any clobber is counted, so two outputs of one op
        // on shared bytes clobber each other
        for &(c, b) in &self.written {
            for &o in &self.cells.overlaps[c] {
                if let Some(v) = &mut self.values[o as usize] {
                    if v.clobber.is_none() {
                        v.clobber = Some(Clobber {
                            step: self.step,
                            op: id,
                            buffer: b,
                            cell: c,
                        });
                    }
                }
            }
        }
    }

    /// `t=1, j=0` for the loops around the current op.
    fn iteration(&self) -> String {
        let parts: Vec<String> = self
            .loops
            .iter()
            .map(|&v| format!("{}={}", self.program.var_name(v), self.vars[v.index()]))
            .collect();
        parts.join(", ")
    }
}

fn dynamic_check(program: &Program, plan: &Plan, root: &[usize], limit: u64) -> Vec<Violation> {
    let cells = Cells::new(program, plan, root);
    let accesses = accesses(program);
    let mut run = Run::new(program, &cells, &accesses, limit, Vec::new());
    run.block(&program.body);
    // bytes the program pinned itself (`at:`) onto each other are its own layout, not a
    // placement the planner chose: not this validator's to report
    let pinned = |b: sim::BufferId| program.buffer(b).at.is_some();
    run.found
        .retain(|f| !(pinned(f.value.buffer) && pinned(f.clobber.buffer)));
    if run.found.is_empty() {
        return Vec::new();
    }
    // a second, identical run names the iterations of the steps involved
    let found = std::mem::take(&mut run.found);
    let mut wanted: Vec<u64> = found
        .iter()
        .flat_map(|f| [f.value.step, f.clobber.step, f.read])
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut again = Run::new(program, &cells, &accesses, limit, wanted);
    again.block(&program.body);
    let captured = again.captured;
    let at = |step: u64, op: OpId| Occurrence {
        path: program.op(op).path.clone(),
        iteration: captured
            .binary_search_by_key(&step, |c| c.0)
            .map_or(String::new(), |i| captured[i].1.clone()),
    };
    found
        .iter()
        .map(|f| {
            let (start, end) =
                overlap(cells.bytes[f.cell], cells.bytes[f.clobber.cell]).unwrap_or((0, 0));
            Violation::Clobbered {
                value: program.buffer(f.value.buffer).name.clone(),
                value_slot: cells.slot[f.cell],
                by: program.buffer(f.clobber.buffer).name.clone(),
                by_slot: cells.slot[f.clobber.cell],
                start,
                end,
                written: at(f.value.step, f.value.op),
                overwritten: at(f.clobber.step, f.clobber.op),
                read: at(f.read, f.read_op),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_program;

    use crate::test_support::{config, vector_program};

    /// A vector-core program: `x`, `y` are [4, 256] f16 in gm, `rest` the buffers and body.
    fn vector(rest: &str) -> Program {
        vector_program(&format!(
            "gm:\n  x: {{ shape: [4, 256], dtype: f16 }}\n  y: {{ shape: [4, 256], dtype: f16 }}\n{rest}"
        ))
    }

    /// The planner's plan (sequential: nothing shares bytes), to be broken by hand.
    fn planned(p: &Program) -> Plan {
        plan_program(p, &config(), &Default::default())
            .unwrap()
            .plan
    }

    fn id(p: &Program, name: &str) -> usize {
        p.buffers.iter().position(|b| b.name == name).unwrap()
    }

    fn offsets(plan: &Plan, p: &Program, name: &str) -> Vec<u64> {
        plan.buffers[id(p, name)].offsets.clone()
    }

    /// Gives `name` the offsets of `like`'s slots.
    fn move_onto(plan: &mut Plan, p: &Program, name: &str, like: &[u64]) {
        plan.buffers[id(p, name)].offsets = like.to_vec();
    }

    fn check(p: &Program, plan: &Plan) -> Result<(), Vec<Violation>> {
        validate(p, &config(), plan)
    }

    fn at(path: &str, iteration: &str) -> Occurrence {
        Occurrence {
            path: path.into(),
            iteration: iteration.into(),
        }
    }

    /// The clobbers found, as (value, value slot, by, written, overwritten, read).
    type Seen = (String, usize, String, Occurrence, Occurrence, Occurrence);

    fn clobbers(r: Result<(), Vec<Violation>>) -> Vec<Seen> {
        r.err()
            .unwrap_or_default()
            .into_iter()
            .map(|v| match v {
                Violation::Clobbered {
                    value,
                    value_slot,
                    by,
                    written,
                    overwritten,
                    read,
                    ..
                } => (value, value_slot, by, written, overwritten, read),
                other => panic!("not a clobber: {other}"),
            })
            .collect()
    }

    const PAIR: &str = r#"
buffers:
  a: { scope: ub, shape: [256], dtype: f16 }
  b: { scope: ub, shape: [256], dtype: f16 }
  c: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - vadd: { ins: [a, b], out: c }
  - store: { src: c, dst: "y[0]" }
"#;

    #[test]
    fn two_values_live_at_once_on_the_same_bytes_are_a_violation() {
        let p = vector(PAIR);
        let mut plan = planned(&p);
        assert_eq!(check(&p, &plan), Ok(()));
        let a = offsets(&plan, &p, "a");
        move_onto(&mut plan, &p, "b", &a);
        assert_eq!(
            check(&p, &plan),
            Err(vec![Violation::Clobbered {
                value: "a".into(),
                value_slot: 0,
                by: "b".into(),
                by_slot: 0,
                start: a[0],
                end: a[0] + 512,
                written: at("body[0]", ""),
                overwritten: at("body[1]", ""),
                read: at("body[2]", ""),
            }])
        );
    }

    #[test]
    fn an_inplace_pair_passes() {
        // the vadd reads a and b and writes c over either: the last read of the old value and
        // the write of the new one are the same step
        let p = vector(PAIR);
        for input in ["a", "b"] {
            let mut plan = planned(&p);
            let o = offsets(&plan, &p, input);
            move_onto(&mut plan, &p, "c", &o);
            assert_eq!(check(&p, &plan), Ok(()), "c over {input}");
        }
        // but not over a value read after the op
        let p = vector(
            r#"
buffers:
  a: { scope: ub, shape: [256], dtype: f16 }
  c: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - vexp: { ins: [a], out: c }
  - store: { src: a, dst: "y[0]" }
  - store: { src: c, dst: "y[1]" }
"#,
        );
        let mut plan = planned(&p);
        let a = offsets(&plan, &p, "a");
        move_onto(&mut plan, &p, "c", &a);
        assert_eq!(
            clobbers(check(&p, &plan)),
            [(
                "a".into(),
                0,
                "c".into(),
                at("body[0]", ""),
                at("body[1]", ""),
                at("body[2]", "")
            )]
        );
    }

    #[test]
    fn two_outputs_of_one_op_on_shared_bytes_clobber_each_other() {
        let p = vector(
            r#"
buffers:
  a: { scope: ub, shape: [256], dtype: f16 }
  b: { scope: ub, shape: [256], dtype: f16 }
  t: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - vexp: { ins: [a], out: b, tmp: t }
  - store: { src: b, dst: "y[0]" }
"#,
        );
        // the temporary over the output, which is read afterwards
        let mut plan = planned(&p);
        let b = offsets(&plan, &p, "b");
        move_onto(&mut plan, &p, "t", &b);
        assert_eq!(
            clobbers(check(&p, &plan)),
            [(
                "b".into(),
                0,
                "t".into(),
                at("body[1]", ""),
                at("body[1]", ""),
                at("body[2]", "")
            )]
        );
        // the temporary over the input, whose last read is this op
        let mut plan = planned(&p);
        let a = offsets(&plan, &p, "a");
        move_onto(&mut plan, &p, "t", &a);
        assert_eq!(check(&p, &plan), Ok(()));
    }

    #[test]
    fn a_write_of_part_of_a_buffer_keeps_its_value() {
        // the second load writes half of a: the other half still holds the first value, read
        // by the store, so b over a while a waits is a violation even though a is rewritten
        let p = vector(
            r#"
buffers:
  a: { scope: ub, shape: [256], dtype: f16 }
  b: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[0]", dst: a }
  - load: { src: "x[1]", dst: b }
  - store: { src: b, dst: "y[1]" }
  - load: { src: "x[2, 0:128]", dst: "a[0:128]" }
  - store: { src: a, dst: "y[0]" }
"#,
        );
        let mut plan = planned(&p);
        let a = offsets(&plan, &p, "a");
        move_onto(&mut plan, &p, "b", &a);
        let found = clobbers(check(&p, &plan));
        let reads: Vec<&Occurrence> = found.iter().map(|f| &f.5).collect();
        assert_eq!(reads, [&at("body[3]", ""), &at("body[4]", "")], "{found:?}");
        assert!(found.iter().all(|f| f.4 == at("body[1]", "")));
    }

    #[test]
    fn implicit_slots_follow_the_innermost_loop_and_explicit_slots_their_index() {
        // xb's implicit slot is t % 2; yb is written between xb's load and its read
        let p = vector(
            r#"
buffers:
  xb: { scope: ub, shape: [256], dtype: f16, multi: 2 }
  yb: { scope: ub, shape: [256], dtype: f16 }
  ob: { scope: ub, shape: [256], dtype: f16 }
body:
  - for: { var: t, to: 4 }
    body:
      - load: { src: "x[t]", dst: xb }
      - load: { src: "x[t]", dst: yb }
      - vadd: { ins: [xb, yb], out: ob }
      - store: { src: ob, dst: "y[t]" }
"#,
        );
        let mut plan = planned(&p);
        let xb = offsets(&plan, &p, "xb");
        move_onto(&mut plan, &p, "yb", &xb[1..]);
        let found = clobbers(check(&p, &plan));
        // slot 1 is used at t = 1 and t = 3: one report per distinct ops, the first one
        assert_eq!(
            found,
            [(
                "xb".into(),
                1,
                "yb".into(),
                at("body[0].for.body[0]", "t=1"),
                at("body[0].for.body[1]", "t=1"),
                at("body[0].for.body[2]", "t=1")
            )]
        );

        // prefetch through explicit slots: the load of slot (t + 1) % 2 runs an iteration
        // ahead of the read of slot t % 2, so zb over slot 1 clobbers the prefetched value
        let p = vector(
            r#"
buffers:
  pb: { scope: ub, shape: [256], dtype: f16, multi: 2 }
  zb: { scope: ub, shape: [256], dtype: f16 }
  ob: { scope: ub, shape: [256], dtype: f16 }
body:
  - load: { src: "x[0]", dst: "pb@0" }
  - for: { var: t, to: 3 }
    body:
      - load: { src: "x[t + 1]", dst: "pb@((t + 1) % 2)" }
      - vexp: { ins: ["pb@(t % 2)"], out: ob }
      - load: { src: "x[t]", dst: zb }
      - store: { src: zb, dst: "y[t]" }
      - store: { src: ob, dst: "y[t]" }
"#,
        );
        let mut plan = planned(&p);
        let pb = offsets(&plan, &p, "pb");
        move_onto(&mut plan, &p, "zb", &pb[1..]);
        let found = clobbers(check(&p, &plan));
        assert_eq!(
            found,
            [(
                "pb".into(),
                1,
                "zb".into(),
                at("body[1].for.body[0]", "t=0"),
                at("body[1].for.body[2]", "t=0"),
                at("body[1].for.body[1]", "t=1")
            )]
        );
        // over slot 0 it clobbers only values already read (t % 2 == 0 is read first)
        let mut plan = planned(&p);
        move_onto(&mut plan, &p, "zb", &pb[..1]);
        let found = clobbers(check(&p, &plan));
        assert!(
            found.iter().all(|f| f.1 == 0 && f.3.iteration == "t=1"),
            "{found:?}"
        );
    }

    #[test]
    fn mmad_reads_c_only_when_init_evaluates_to_zero() {
        let program = |init: &str| {
            let text = format!(
                r#"
kernel: k
core: aic
sync: manual
gm:
  a: {{ shape: [64, 64], dtype: f16 }}
  b: {{ shape: [64, 64], dtype: f16 }}
  c: {{ shape: [64, 64], dtype: f16 }}
buffers:
  l1a: {{ scope: l1, shape: [64, 64], dtype: f16 }}
  l1b: {{ scope: l1, shape: [64, 64], dtype: f16 }}
  l0a: {{ scope: l0a, shape: [64, 64], dtype: f16 }}
  l0b: {{ scope: l0b, shape: [64, 64], dtype: f16 }}
  acc: {{ scope: l0c, shape: [64, 64], dtype: f32 }}
  tmp: {{ scope: l0c, shape: [64, 64], dtype: f32 }}
body:
  - load: {{ src: a, dst: l1a, layout: nz }}
  - load: {{ src: b, dst: l1b, layout: nz }}
  - copy: {{ src: l1a, dst: l0a }}
  - copy: {{ src: l1b, dst: l0b }}
  - for: {{ var: k, to: 2 }}
    body:
      - mmad: {{ a: l0a, b: l0b, c: acc, m: 64, n: 64, k: 64, init: "{init}" }}
      - fixpipe: {{ src: acc, dst: c, quant: true }}
      - mmad: {{ a: l0a, b: l0b, c: tmp, m: 64, n: 64, k: 64, init: 1 }}
      - fixpipe: {{ src: tmp, dst: c, quant: true }}
"#
            );
            sim::load_program(&text, "p.yaml", &config(), &[]).unwrap_or_else(|e| panic!("{e}"))
        };
        // acc is rewritten from scratch in every iteration: tmp may take its bytes in between
        let p = program("1");
        let mut plan = planned(&p);
        let acc = offsets(&plan, &p, "acc");
        move_onto(&mut plan, &p, "tmp", &acc);
        assert_eq!(check(&p, &plan), Ok(()));
        // acc accumulates from k = 1 on: its value must survive the iteration
        let p = program("k == 0");
        let mut plan = planned(&p);
        move_onto(&mut plan, &p, "tmp", &acc);
        assert_eq!(
            clobbers(check(&p, &plan)),
            [(
                "acc".into(),
                0,
                "tmp".into(),
                at("body[4].for.body[0]", "k=0"),
                at("body[4].for.body[2]", "k=0"),
                at("body[4].for.body[0]", "k=1")
            )]
        );
    }

    #[test]
    fn branches_not_taken_and_while_trips_are_followed() {
        let p = |cond: &str| {
            vector(&format!(
                r#"
buffers:
  acc: {{ scope: ub, shape: [256], dtype: f16 }}
  w: {{ scope: ub, shape: [256], dtype: f16 }}
body:
  - vdup: {{ scalar: 0, out: acc }}
  - while: {{ trips: 3 }}
    body:
      - if: "{cond}"
        then:
          - load: {{ src: "x[0]", dst: w }}
          - store: {{ src: w, dst: "y[0]" }}
      - vadds: {{ ins: [acc], out: acc, scalar: 1 }}
  - store: {{ src: acc, dst: "y[1]" }}
"#
            ))
        };
        // w over acc, which is carried through the loop: only a taken branch clobbers it
        let quiet = p("1 == 0");
        let mut plan = planned(&quiet);
        let acc = offsets(&plan, &quiet, "acc");
        move_onto(&mut plan, &quiet, "w", &acc);
        assert_eq!(check(&quiet, &plan), Ok(()));
        let loud = p("1 == 1");
        let mut plan = planned(&loud);
        move_onto(&mut plan, &loud, "w", &acc);
        let found = clobbers(check(&loud, &plan));
        assert_eq!(found.len(), 2, "{found:?}"); // first from the vdup, then from the vadds
        assert_eq!(found[0].3, at("body[0]", ""));
        assert_eq!(found[0].5.path, "body[1].while.body[1]");
        assert!(found[0].5.iteration.ends_with("=0"), "{found:?}");
        assert!(found[1].5.iteration.ends_with("=1"), "{found:?}");
    }

    #[test]
    fn a_select_touches_every_buffer_it_may_name() {
        let p = vector(
            r#"
buffers:
  c: { scope: ub, shape: [256], dtype: f16 }
  d: { scope: ub, shape: [256], dtype: f16 }
  e: { scope: ub, shape: [256], dtype: f16 }
  o: { scope: ub, shape: [256], dtype: f16 }
views:
  pick: { select: [c, d] }
body:
  - load: { src: "x[0]", dst: c }
  - load: { src: "x[1]", dst: d }
  - load: { src: "x[2]", dst: e }
  - store: { src: e, dst: "y[2]" }
  - vexp: { ins: [pick], out: o }
  - store: { src: o, dst: "y[0]" }
"#,
        );
        let mut plan = planned(&p);
        let d = offsets(&plan, &p, "d");
        move_onto(&mut plan, &p, "e", &d);
        let found = clobbers(check(&p, &plan));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0.as_str(), found[0].2.as_str()), ("d", "e"));
        assert_eq!(found[0].5, at("body[4]", ""));
    }

    #[test]
    fn the_dynamic_check_stops_at_its_step_limit() {
        // the clobber happens at t = 900 only: after about 2,700 steps
        let p = vector(
            r#"
buffers:
  acc: { scope: ub, shape: [256], dtype: f16 }
  w: { scope: ub, shape: [256], dtype: f16 }
body:
  - vdup: { scalar: 0, out: acc }
  - for: { var: t, to: 1000 }
    body:
      - if: "t == 900"
        then:
          - load: { src: "x[0]", dst: w }
      - vadds: { ins: [acc], out: acc, scalar: 1 }
  - store: { src: acc, dst: "y[1]" }
"#,
        );
        let mut plan = planned(&p);
        let acc = offsets(&plan, &p, "acc");
        move_onto(&mut plan, &p, "w", &acc);
        assert_eq!(validate_steps(&p, &config(), &plan, 1_000), Ok(()));
        let found = clobbers(validate_steps(&p, &config(), &plan, 10_000));
        assert_eq!(found[0].4, at("body[1].for.body[0].if.then[0]", "t=900"));
        assert_eq!(found[0].5, at("body[1].for.body[1]", "t=900"));
    }
}
