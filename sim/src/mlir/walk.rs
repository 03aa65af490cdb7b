//! Helpers over the tree of [`super::ast`]: an op's regions, and a pre-order walk.

use super::ast::*;

impl OpKind {
    /// The op's regions in source order (empty for ops without any).
    pub fn regions(&self) -> Vec<&Region> {
        match self {
            OpKind::Module { body, .. }
            | OpKind::Func { body, .. }
            | OpKind::For { body, .. }
            | OpKind::Scope { body } => {
                vec![body]
            }
            OpKind::If { then, els, .. } => std::iter::once(then).chain(els.as_ref()).collect(),
            OpKind::While { before, after, .. } => vec![before, after],
            _ => Vec::new(),
        }
    }
}

impl Chunk {
    /// Every op of the chunk, parents before their children, in source order.
    pub fn walk(&self, f: &mut dyn FnMut(&Op)) {
        for op in &self.ops {
            op.walk(f);
        }
    }
}

impl Op {
    /// This op, then every op nested in its regions, in source order.
    pub fn walk(&self, f: &mut dyn FnMut(&Op)) {
        // An explicit stack: nesting is capped by the reader, but a walk should not depend on it.
        let mut stack: Vec<&Op> = vec![self];
        while let Some(op) = stack.pop() {
            f(op);
            let regions = op.kind.regions();
            for r in regions.into_iter().rev() {
                for b in r.blocks.iter().rev() {
                    stack.extend(b.ops.iter().rev());
                }
            }
        }
    }
}
