//! A dynamic soundness oracle for liveness, shared by the liveness tests (shipped, conformance
//! and hand-made programs) and the property tests (random programs): it runs the program and
//! checks every value read against the lifetimes, so a lifetime that ends too early is caught
//! whatever produced the program.

use planner::liveness::OpPos;
use sim::program::{Block, OpKind, Operand, Program};
use sim::{BufferId, OpId};
use std::collections::HashMap;

/// The oracle's failures for `p` under liveness `l`, one line each; empty when sound.
pub fn check(p: &Program, l: &planner::Liveness) -> Vec<String> {
    Oracle::run(p, l)
}

/// Executes the control flow of a program (loops unrolled, conditions evaluated, slots resolved
/// as the engine picks them: `@k`, else the op's innermost loop's completed iterations mod the
/// slot count) and checks, for every value read, that its entry is live at every
/// position executed from the write that produced the value to the read. That is what makes a
/// lifetime safe: another entry given the same bytes could only clobber the value at a
/// position outside the lifetime. The oracle shares no code with the analysis beyond the
/// position numbering it checks against.
struct Oracle<'a> {
    p: &'a Program,
    l: &'a planner::Liveness,
    vars: Vec<i64>,
    /// Completed iterations per loop op, over the whole run.
    done: Vec<i64>,
    trace: Vec<usize>,
    /// (buffer, slot) -> trace index where the current value started (its last full write).
    origin: HashMap<(BufferId, i64), usize>,
    failures: Vec<String>,
}

impl Oracle<'_> {
    fn run(p: &Program, l: &planner::Liveness) -> Vec<String> {
        let mut o = Oracle {
            p,
            l,
            vars: vec![0; p.vars.len()],
            done: vec![0; p.ops.len()],
            trace: Vec::new(),
            origin: HashMap::new(),
            failures: Vec::new(),
        };
        o.block(&p.body);
        o.failures
    }

    fn eval(&self, e: &sim::expr::Expr) -> i64 {
        e.eval(&self.vars).unwrap()
    }

    fn block(&mut self, b: &Block) {
        for &id in &b.ops {
            self.op(id);
        }
    }

    fn op(&mut self, id: OpId) {
        let p = self.p;
        let op = p.op(id);
        match (&op.kind, self.l.op_pos[id.index()]) {
            (OpKind::For(l), OpPos::Loop { begin, end }) => {
                self.trace.push(begin);
                let (f, t, s) = (self.eval(&l.from), self.eval(&l.to), self.eval(&l.step));
                let mut i = f;
                while i < t {
                    self.vars[l.var.index()] = i;
                    self.block(&l.body);
                    self.trace.push(end); // the latch
                    self.done[id.index()] += 1;
                    i += s;
                }
                if f >= t {
                    self.trace.push(end);
                }
            }
            (OpKind::While { var, trips, body }, OpPos::Loop { begin, end }) => {
                self.trace.push(begin);
                let n = self.eval(trips);
                for i in 0..n {
                    self.vars[var.index()] = i;
                    self.block(body);
                    self.trace.push(end);
                    self.done[id.index()] += 1;
                }
                if n == 0 {
                    self.trace.push(end);
                }
            }
            (
                OpKind::If { cond, then, els },
                OpPos::If {
                    begin,
                    els: marker,
                    end,
                },
            ) => {
                self.trace.push(begin);
                if self.eval(cond) != 0 {
                    self.block(then);
                } else {
                    self.trace.push(marker);
                    if let Some(e) = els {
                        self.block(e);
                    }
                }
                self.trace.push(end);
            }
            (kind, OpPos::At(pos)) => {
                self.trace.push(pos);
                let k = self.trace.len() - 1;
                let initialises = match kind {
                    OpKind::Mmad(m) | OpKind::MmadL1(m) => self.eval(&m.init) != 0,
                    _ => false,
                };
                for r in kind.reads() {
                    if initialises
                        && matches!(kind, OpKind::Mmad(m) | OpKind::MmadL1(m) if std::ptr::eq(r, &m.c))
                    {
                        continue;
                    }
                    for b in p.root_buffers(r.base) {
                        self.check(id, r, b, k);
                    }
                }
                for w in kind.writes() {
                    let roots = p.root_buffers(w.base);
                    let single = roots.len() == 1;
                    for b in roots {
                        let slot = self.slot(id, w, b);
                        if single && w.elements == Some(p.buffer(b).elements) {
                            self.origin.insert((b, slot), k);
                        } else {
                            // a partial write keeps the older bytes: it extends their value
                            self.check(id, w, b, k);
                            self.origin.entry((b, slot)).or_insert(k);
                        }
                    }
                }
            }
            _ => unreachable!(),
        }
    }

    fn slot(&self, id: OpId, o: &Operand, b: BufferId) -> i64 {
        let multi = self.p.buffer(b).multi as i64;
        if multi <= 1 {
            return 0;
        }
        match (&o.slot, self.p.op(id).loop_parent) {
            (Some(e), _) => self.eval(e).rem_euclid(multi),
            (None, Some(l)) => self.done[l.index()].rem_euclid(multi),
            (None, None) => 0,
        }
    }

    fn check(&mut self, id: OpId, o: &Operand, b: BufferId, k: usize) {
        let slot = self.slot(id, o, b);
        let Some(&from) = self.origin.get(&(b, slot)) else {
            return; // no value yet (a select member never written at run time)
        };
        let e = self.l.entry_of[b.index()];
        for &pos in &self.trace[from..=k] {
            if !self.l.live_at(e, pos) {
                self.failures.push(format!(
                    "{}: {} slot {slot} read at step {k}, value from step {from}, not live at position {pos} (lifetime {:?})",
                    self.p.op(id).path,
                    self.p.buffer(b).name,
                    self.l.entries[e].lifetime
                ));
                return;
            }
        }
    }
}
