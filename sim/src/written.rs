//! The read-before-write rule, in one place: in program order (ops in pre-order, a `then`
//! block before its `else`), an op may read a buffer only after some op has written it. A read
//! through a `select` needs every selected buffer written; a window reads and writes its root
//! buffer. An `mmad` or `mmad_l1` whose `init` is not a constant may be the op that
//! initialises `c`, so its read of `c` is not checked.
//!
//! The loader applies the rule op by op while it builds a program (reporting every offending
//! read, each buffer once); the planner's liveness asks it of a finished program before it
//! trusts its own dataflow ([`first_read_before_write`]).

use crate::footprint::Bases;
use crate::ids::{BufferId, OpId};
use crate::program::{Block, OpKind, Operand, Program};

/// Which buffers some earlier op has written, in program order.
#[derive(Clone, Debug)]
pub struct Written {
    written: Vec<bool>,
}

impl Written {
    pub fn new(buffers: usize) -> Written {
        Written {
            written: vec![false; buffers],
        }
    }

    /// Counts buffer `b` as written (a new declaration, or an op the loader rejected that may
    /// have meant to write it).
    pub fn mark(&mut self, b: BufferId) {
        if b.index() >= self.written.len() {
            self.written.resize(b.index() + 1, false);
        }
        self.written[b.index()] = true;
    }

    fn is_written(&self, b: BufferId) -> bool {
        self.written.get(b.index()).copied().unwrap_or(false)
    }

    /// Applies the op `kind`: returns each of its reads of a buffer nothing has written yet
    /// (the operand and the buffer, in field order), then counts what it reads and writes as
    /// written, so each unwritten buffer is reported once.
    pub fn visit<'k>(&mut self, kind: &'k OpKind, bases: &Bases) -> Vec<(&'k Operand, BufferId)> {
        let skip: Option<*const Operand> = match kind {
            OpKind::Mmad(m) | OpKind::MmadL1(m) if m.init.as_const().is_none() => Some(&m.c),
            _ => None,
        };
        let mut unwritten = Vec::new();
        for o in kind.reads() {
            if skip == Some(o as *const Operand) {
                continue;
            }
            for b in bases.roots(o.base) {
                if !self.is_written(b) {
                    self.mark(b);
                    unwritten.push((o, b));
                }
            }
        }
        for o in kind.writes() {
            for b in bases.roots(o.base) {
                self.mark(b);
            }
        }
        unwritten
    }
}

/// The first read of a buffer before any write of it in `program`, as (buffer, reading op).
pub fn first_read_before_write(program: &Program) -> Option<(BufferId, OpId)> {
    fn walk(
        p: &Program,
        bases: &Bases,
        block: &Block,
        w: &mut Written,
    ) -> Option<(BufferId, OpId)> {
        for &id in &block.ops {
            if let Some(&(_, b)) = w.visit(&p.op(id).kind, bases).first() {
                return Some((b, id));
            }
            for blk in p.blocks(id) {
                if let Some(found) = walk(p, bases, blk, w) {
                    return Some(found);
                }
            }
        }
        None
    }
    let mut w = Written::new(program.buffers.len());
    walk(program, &Bases::of(program), &program.body, &mut w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;

    fn program(body: &str) -> Program {
        let config = crate::load_config(
            crate::builtin::builtin(crate::builtin::DEFAULT).unwrap(),
            "config",
        )
        .unwrap();
        let text = format!(
            "kernel: k\ncore: aiv\nsync: manual\ngm:\n  x: {{ shape: [64], dtype: f16 }}\n\
             buffers:\n  a: {{ scope: ub, shape: [64], dtype: f16 }}\n  \
             b: {{ scope: ub, shape: [64], dtype: f16 }}\nbody:\n{body}"
        );
        crate::load_program(&text, "k.yaml", &config, &[]).unwrap()
    }

    #[test]
    fn a_loaded_program_reads_only_what_was_written() {
        let p = program(
            "  - load: { src: x, dst: a }\n  - vadd: { ins: [a, a], out: b }\n  - store: { src: b, dst: x }\n",
        );
        assert_eq!(first_read_before_write(&p), None);
    }

    #[test]
    fn a_read_before_the_write_is_found_at_its_op() {
        let mut p = program("  - load: { src: x, dst: a }\n  - store: { src: a, dst: x }\n");
        // the loader refuses such a program; make one by removing the write after loading
        p.ops[0].kind = OpKind::Scalar {
            cycles: Expr::Const(1),
        };
        assert_eq!(
            first_read_before_write(&p),
            Some((BufferId::new(0), OpId::new(1)))
        );
    }

    #[test]
    fn each_unwritten_buffer_is_reported_once() {
        let p = program("  - load: { src: x, dst: a }\n  - vadd: { ins: [a, a], out: b }\n");
        let bases = Bases::of(&p);
        let mut w = Written::new(p.buffers.len());
        // the vadd alone: a is read twice, reported once
        let found = w.visit(&p.ops[1].kind, &bases);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, BufferId::new(0));
        assert!(w.visit(&p.ops[1].kind, &bases).is_empty());
    }
}
