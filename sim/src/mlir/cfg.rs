//! A function body of several blocks joined by `cf.br` / `cf.cond_br` (plan-only lowering,
//! docs/mlir.md): which values each block argument receives, and which uses HIVM's
//! PlanMemory no longer counts.
//!
//! PlanMemory walks the blocks in their written order as one linear sequence. A branch
//! operand and the block argument it feeds are aliases (`UpdateBranchOpAlias`, a conditional
//! alias: no forced inplace pair), and a branch op itself frees nothing. An op of a block
//! frees a buffer when every alias of it is dead after the op *within that block*: not used
//! later in the block and not live out of it (`AllDeadAfter` over MLIR's per-block
//! `Liveness`). So a buffer passed to two sibling blocks (`cf.cond_br ^bb1(%a), ^bb2(%a)`)
//! whose first block uses it last there is freed in that block, and the second block's
//! uses come after its end: they are not uses for planning.

use super::ast::{Op, OpKind, Pos, Region};
use super::lower::{one_line, strip_comment};
use std::collections::{HashMap, HashSet};

/// What the lowering needs of a multi-block body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cfg {
    /// Per block, per argument: the values (names without `%`) its predecessors pass, in block
    /// order. Empty for the entry block.
    pub incoming: Vec<Vec<Vec<String>>>,
    /// Uses after the buffer was freed: (op start offset, value name).
    pub dead: HashSet<(u32, String)>,
}

/// The most blocks a function may have (reachability is a square table of them).
pub const MAX_BLOCKS: usize = 1024;

/// Whether `name` is one of the branch ops this module reads.
pub fn is_branch(name: &str) -> bool {
    matches!(name, "cf.br" | "cf.cond_br")
}

/// Reads the blocks of `body`; a problem (a branch backwards, a terminator npusim does not
/// read) is reported at its op.
pub fn analyse(src: &str, body: &Region) -> Result<Cfg, Vec<(Pos, String)>> {
    let blocks = &body.blocks;
    if blocks.len() > MAX_BLOCKS {
        let p = blocks[MAX_BLOCKS]
            .ops
            .first()
            .map(|o| o.name_pos)
            .unwrap_or_default();
        return Err(vec![(
            p,
            format!(
                "a function of {} blocks: npusim reads at most {MAX_BLOCKS}",
                blocks.len()
            ),
        )]);
    }
    let index: HashMap<&str, usize> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.label.as_deref().map(|l| (l, i)))
        .collect();
    let mut problems = Vec::new();
    let mut cfg = Cfg {
        incoming: blocks
            .iter()
            .map(|b| vec![Vec::new(); b.args.len()])
            .collect(),
        dead: HashSet::new(),
    };
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    let mut classes = Classes::default();
    for (k, b) in blocks.iter().enumerate() {
        for op in &b.ops {
            if let OpKind::View { source, .. } = &op.kind {
                // a view aliases its source (`getOperationAliasInfo`)
                for r in &op.results {
                    classes.union(&r.name, &source.name);
                }
            }
            if op.name.starts_with("cf.") && !is_branch(&op.name) {
                problems.push((
                    op.name_pos,
                    format!(
                        "`{}` is not read by npusim (cf.br and cf.cond_br are)",
                        op.name
                    ),
                ));
                continue;
            }
            if !is_branch(&op.name) {
                continue;
            }
            for (label, values) in successors(&text(src, op)) {
                let Some(&s) = index.get(label.as_str()) else {
                    problems.push((
                        op.name_pos,
                        format!("^{label} is not a block of this region"),
                    ));
                    continue;
                };
                if s <= k {
                    problems.push((
                        op.name_pos,
                        format!("`{}` branches back to ^{label}: a loop written with cf is not read by npusim", op.name),
                    ));
                    continue;
                }
                if values.len() != blocks[s].args.len() {
                    problems.push((
                        op.name_pos,
                        format!(
                            "`{}` passes {} values to ^{label}, which has {} arguments",
                            op.name,
                            values.len(),
                            blocks[s].args.len()
                        ),
                    ));
                    continue;
                }
                for (i, v) in values.iter().enumerate() {
                    classes.union(&blocks[s].args[i].0.name, v);
                    cfg.incoming[s][i].push(v.clone());
                }
                succ[k].push(s);
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // every block reachable from each (forward edges only, so no block reaches itself)
    let n = blocks.len();
    let mut reach: Vec<Vec<bool>> = vec![vec![false; n]; n];
    for k in (0..n).rev() {
        let mut r = vec![false; n];
        for &s in &succ[k] {
            r[s] = true;
            for (t, &x) in reach[s].iter().enumerate() {
                r[t] |= x;
            }
        }
        reach[k] = r;
    }
    // per alias class: the last op using it in each block, the blocks using a name the block
    // does not define (where it is live in), and every use (block, op start, name)
    let mut last: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    let mut live_in: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut all_uses: Vec<(usize, u32, String, usize)> = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let mut defined: HashSet<&str> = b.args.iter().map(|(v, _)| v.name.as_str()).collect();
        for (j, op) in b.ops.iter().enumerate() {
            let own: HashSet<&str> = op.results.iter().map(|r| r.name.as_str()).collect();
            for name in value_names(&text(src, op)) {
                if own.contains(name.as_str()) {
                    continue;
                }
                let c = classes.find(&name);
                let l = last.entry(c).or_default();
                match l.last_mut() {
                    Some((bk, lj)) if *bk == k => *lj = j,
                    _ => l.push((k, j)),
                }
                if !defined.contains(name.as_str()) {
                    let li = live_in.entry(c).or_default();
                    if li.last() != Some(&k) {
                        li.push(k);
                    }
                }
                all_uses.push((k, op.span.start.offset, name, c));
            }
            defined.extend(op.results.iter().map(|r| r.name.as_str()));
        }
    }
    // per class: the first block, in order, whose last use of it is an op that frees (not a
    // branch, which passes it on) and after which nothing of it is live
    let mut freed: HashMap<usize, usize> = HashMap::new();
    for (&c, per_block) in &last {
        let ins = live_in.get(&c).map(Vec::as_slice).unwrap_or(&[]);
        for &(k, j) in per_block {
            let name = &blocks[k].ops[j].name;
            if is_branch(name) || name == "func.return" {
                continue;
            }
            if !ins.iter().any(|&s| reach[k][s]) {
                freed.insert(c, k);
                break;
            }
        }
    }
    for (k, start, name, c) in all_uses {
        if freed.get(&c).is_some_and(|&f| f < k) {
            cfg.dead.insert((start, name));
        }
    }
    Ok(cfg)
}

fn text(src: &str, op: &Op) -> String {
    let t = src
        .get(op.span.start.offset as usize..op.span.end as usize)
        .unwrap_or("");
    let mut out = String::with_capacity(t.len());
    for l in t.lines() {
        out.push_str(strip_comment(l));
        out.push('\n');
    }
    one_line(&out, usize::MAX)
}

/// The `%name`s in `text` (without `%` and any `#N`), in order, each once.
fn value_names(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let end = super::print::ssa_name_end(b, i + 1);
            let n = &text[i + 1..end];
            if !n.is_empty() && !out.iter().any(|x| x == n) {
                out.push(n.to_string());
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The successors of a branch op's text: each `^label` and the values passed to it.
fn successors(text: &str) -> Vec<(String, Vec<String>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'^' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len()
            && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'.' | b'$' | b'-'))
        {
            j += 1;
        }
        let label = text[start..j].to_string();
        let mut k = j;
        while k < b.len() && b[k] == b' ' {
            k += 1;
        }
        let mut values = Vec::new();
        if b.get(k) == Some(&b'(') {
            let mut depth = 0i32;
            let mut end = k;
            for (n, &c) in b.iter().enumerate().skip(k) {
                match c {
                    b'(' | b'<' | b'[' | b'{' => depth += 1,
                    b')' | b'>' | b']' | b'}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = n;
                    break;
                }
            }
            let inner = &text[k + 1..end.max(k + 1)];
            // the values come before the ` : ` that starts their types
            let vals = inner.split(" : ").next().unwrap_or("");
            values = value_names(vals);
            j = end + 1;
        }
        out.push((label, values));
        i = j.max(i + 1);
    }
    out
}

/// Alias classes of value names (union-find over ids, with path halving).
#[derive(Default)]
struct Classes {
    id: HashMap<String, usize>,
    parent: Vec<usize>,
}

impl Classes {
    fn id(&mut self, n: &str) -> usize {
        if let Some(&i) = self.id.get(n) {
            return i;
        }
        let i = self.parent.len();
        self.parent.push(i);
        self.id.insert(n.to_string(), i);
        i
    }

    fn find(&mut self, n: &str) -> usize {
        let mut x = self.id(n);
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: &str, b: &str) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra] = rb;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlir::lower::{functions, lower, Options};
    use crate::mlir::SyncOps;

    const T: &str = "memref<16xf16, #hivm.address_space<ub>>";
    const G: &str = "memref<16xf16, #hivm.address_space<gm>>";

    /// A function of the given blocks (after its entry block's own ops).
    fn func(entry: &str, blocks: &str) -> String {
        format!("func.func @f(%g: {G}, %p: i1) {{\n{entry}\n{blocks}}}\n")
    }

    fn analysed(text: &str) -> Result<Cfg, Vec<(Pos, String)>> {
        let chunks = crate::mlir::parse_file(text, "t.mlir").expect("parses");
        let (c, f) = functions(&chunks)[0];
        let _ = c;
        let OpKind::Func { body, .. } = &f.kind else {
            panic!("a function")
        };
        analyse(text, body)
    }

    fn lowered(text: &str, lenient: bool) -> Result<(), Vec<String>> {
        let chunks = crate::mlir::parse_file(text, "t.mlir").expect("parses");
        let (c, f) = functions(&chunks)[0];
        let opts = Options {
            params: Vec::new(),
            sync: SyncOps::Drop,
            lenient,
        };
        lower(text, &chunks[c], f, "t.mlir", &opts)
            .map(|_| ())
            .map_err(|ds| ds.into_iter().map(|d| d.message).collect())
    }

    #[test]
    fn a_buffer_freed_in_one_branch_is_dead_in_the_other() {
        // %a goes to ^bb1 as %x and to ^bb2 as %y; ^bb1's vadd is its last use there and
        // nothing of it is live out of ^bb1 (^bb3 does not use it): freed in ^bb1, so ^bb2's
        // read of %y is dead. %b goes on to ^bb3 by a branch: never dead.
        let text = func(
            &format!("%a = memref.alloc() : {T}\nhivm.hir.load ins(%g : {G}) outs(%a : {T})\ncf.cond_br %p, ^bb1(%a : {T}), ^bb2(%a : {T})"),
            &format!("^bb1(%x : {T}):\n%b = memref.alloc() : {T}\nhivm.hir.vadd ins(%x, %x : {T}, {T}) outs(%b : {T})\ncf.br ^bb3(%b : {T})\n^bb2(%y : {T}):\n%c = memref.alloc() : {T}\nhivm.hir.vsub ins(%y, %y : {T}, {T}) outs(%c : {T})\ncf.br ^bb3(%c : {T})\n^bb3(%z : {T}):\nhivm.hir.store ins(%z : {T}) outs(%g : {G})\nreturn\n"),
        );
        let cfg = analysed(&text).expect("read");
        assert_eq!(cfg.incoming[1], vec![vec!["a".to_string()]]);
        assert_eq!(
            cfg.incoming[3],
            vec![vec!["b".to_string(), "c".to_string()]]
        );
        let dead: Vec<&str> = cfg.dead.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(dead, ["y"], "{:?}", cfg.dead);
    }

    #[test]
    fn a_branch_back_is_refused_with_its_place() {
        let text = func(
            "cf.br ^bb1",
            &format!("^bb1:\n%a = memref.alloc() : {T}\nhivm.hir.load ins(%g : {G}) outs(%a : {T})\ncf.cond_br %p, ^bb1, ^bb2\n^bb2:\nreturn\n"),
        );
        let e = analysed(&text).expect_err("a loop");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0.line, 6);
        assert!(e[0].1.contains("branches back to ^bb1"), "{}", e[0].1);
        let e = lowered(&text, true).expect_err("refused");
        assert!(e.iter().any(|m| m.contains("branches back")), "{e:?}");
    }

    #[test]
    fn only_plan_only_lowering_reads_blocks() {
        let text = func(
            "cf.br ^bb1",
            &format!("^bb1:\n%a = memref.alloc() : {T}\nhivm.hir.load ins(%g : {G}) outs(%a : {T})\nreturn\n"),
        );
        assert_eq!(lowered(&text, true), Ok(()));
        let e = lowered(&text, false).expect_err("refused");
        assert!(e.iter().any(|m| m.contains("more than one block")), "{e:?}");
    }

    #[test]
    fn successors_read_labels_and_values() {
        let s = successors("cf.cond_br %c, ^bb1(%a, %b : memref<4xf16>, memref<4xf16>), ^bb2");
        assert_eq!(
            s,
            vec![
                ("bb1".to_string(), vec!["a".to_string(), "b".to_string()]),
                ("bb2".to_string(), vec![]),
            ]
        );
    }
}
