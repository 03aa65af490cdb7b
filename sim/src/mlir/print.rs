//! HIVM MLIR out, source-preserving (docs/mlir.md, "npusim opt"): every op of the input is
//! printed on one line from its own text, comments dropped (FileCheck reads the output, and an
//! echoed `// CHECK` would match itself); only what a pass changes is generated: the planned
//! `pointer_cast`s with their offset constants (as HIVM's AllocToPointerCast prints them), and
//! the inserted sync ops.

use super::ast::{Chunk, Op, OpKind, Region};
use super::lower::{one_line, strip_comment};
use std::collections::HashMap;

/// What a pass changes in a chunk.
#[derive(Clone, Debug, Default)]
pub struct Edits {
    /// The planned byte offsets of each alloc, one per slot, by the alloc op's start offset
    /// in the file. An alloc listed here prints as a `pointer_cast`.
    pub offsets: HashMap<u32, Vec<u64>>,
    /// Lines to print before / after an op, by the op name's (line, column).
    pub before: HashMap<(u32, u32), Vec<String>>,
    pub after: HashMap<(u32, u32), Vec<String>>,
    /// Lines to print at the start of a function's body, by the function op's start offset
    /// (after the offset constants).
    pub prologue: HashMap<u32, Vec<String>>,
    /// Treat constants as MLIR's folder leaves them after a pass that rewrote the function
    /// (`-hivm-plan-memory`): unused ones erased, duplicates merged, and those not in the
    /// entry block's leading run of constants moved to its front.
    pub fold_constants: bool,
    /// Ops not printed, by start offset: allocs nothing uses, which PlanMemory erases.
    pub erased: std::collections::HashSet<u32>,
    /// Ops printed as other text, by the op name's (line, column): a yield HIVM rewrites.
    pub replace: HashMap<(u32, u32), String>,
    /// Attribute alias definitions (`#map = affine_map<...>`) printed before the chunk's ops,
    /// as MLIR prints the aliases its passes create.
    pub aliases: Vec<String>,
    /// Text appended to an op's line, by the op name's (line, column): operands a pass adds
    /// at the end (`sync_related_args(...)`).
    pub suffix: HashMap<(u32, u32), String>,
}

/// An op's one-line text spaced as MLIR's printer spaces it, where the difference shows in
/// lit tests' CHECK lines: one space after a comma, ` : ` between an operand and its type
/// (`outs(%x: T)` prints `outs(%x : T)`), and an enum keyword without its dialect prefix
/// (`round_mode = #hivm.round_mode<trunc>` prints `round_mode = <trunc>`).
pub fn canonical(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut braces = 0i32;
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&text[i..i + 2]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' => braces += 1,
            b'}' => braces -= 1,
            _ => {}
        }
        if c == b',' {
            out.push(',');
            if b.get(i + 1).is_some_and(|n| *n != b' ') {
                out.push(' ');
            }
            i += 1;
            continue;
        }
        // `%name:` then a space: an operand's type follows
        if c == b':'
            && b.get(i + 1) == Some(&b' ')
            && i > 0
            && out.ends_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_')
        {
            let word_start = out
                .rfind(|ch: char| {
                    !(ch.is_ascii_alphanumeric() || matches!(ch, '_' | '$' | '.' | '-' | '#'))
                })
                .map_or(0, |k| k + 1);
            if out[..word_start].ends_with('%') {
                out.push_str(" :");
                i += 1;
                continue;
            }
        }
        if braces == 0 && text[i..].starts_with("= #hivm.") {
            let rest = &text[i + "= #hivm.".len()..];
            let n = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            if rest[n..].starts_with('<') {
                out.push_str("= ");
                i += "= #hivm.".len() + n;
                continue;
            }
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Where the SSA name starting at `start` (after its `%`) ends: names are letters, digits,
/// `_`, `$`, `.` and `-`.
pub fn ssa_name_end(b: &[u8], start: usize) -> usize {
    let mut j = start;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'$' | b'.' | b'-'))
    {
        j += 1;
    }
    j
}

/// `text` with every use of a value in `rename` replaced.
fn renamed(text: &str, rename: &HashMap<String, String>) -> String {
    if rename.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let start = i + 1;
            let j = ssa_name_end(b, start);
            let name = &text[start..j];
            match rename.get(name) {
                Some(n) => {
                    out.push('%');
                    out.push_str(n);
                }
                None => out.push_str(&text[i..j]),
            }
            i = j;
            continue;
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Prints `chunk` of `src` with `edits` applied.
pub fn print_chunk(src: &str, chunk: &Chunk, edits: &Edits) -> String {
    let mut p = Printer {
        src,
        edits,
        out: String::new(),
        taken: HashMap::new(),
        first_const: None,
        rename: HashMap::new(),
        skip: Default::default(),
        marked: Default::default(),
        enclosing: Vec::new(),
        casts_marked: Vec::new(),
        merged: Vec::new(),
    };
    for a in &edits.aliases {
        p.line(0, a);
    }
    for op in &chunk.ops {
        // the reader wraps bare functions in a module of its own, which has no text
        let at = op.name_pos.offset as usize;
        let written = src
            .get(at..)
            .is_some_and(|s| s.starts_with("module") || s.starts_with("\"builtin.module\""));
        match &op.kind {
            OpKind::Module { body, .. } if !written => {
                p.line(0, "module {");
                for b in &body.blocks {
                    for o in &b.ops {
                        p.op(o, 1);
                    }
                }
                p.line(0, "}");
            }
            _ => p.op(op, 0),
        }
    }
    p.out
}

struct Printer<'a> {
    src: &'a str,
    edits: &'a Edits,
    out: String,
    /// SSA names in use in the current function, for fresh constant names.
    taken: HashMap<String, ()>,
    /// The first offset constant, printed before this alloc (by offset) instead of first.
    first_const: Option<(u32, String)>,
    /// SSA values whose uses print as another value (without `%`): the function's own i64
    /// constants that an offset constant replaces, and pointer_casts HIVM merges into a
    /// multi-buffer's ([`Printer::merge_into_marked`]).
    rename: HashMap<String, String>,
    /// Ops not printed (by start offset): constants an offset constant replaces, and
    /// multi-buffer pointer_casts already printed at the front of their loop body.
    skip: std::collections::HashSet<u32>,
    /// The allocs of the current function an `annotation.mark` with `hivm.multi_buffer`
    /// names (any count: HIVM's fixMultibufferEnabledPointerCastOps reads the key only).
    marked: std::collections::HashSet<String>,
    /// The ops around the op being printed, outermost first: (start offset, is an scf.for).
    enclosing: Vec<(u32, bool)>,
    /// The marked pointer_casts printed so far in the current function: the op whose
    /// region holds each after HIVM's move (its scf.for, else its parent), its type text,
    /// offsets and name.
    casts_marked: Vec<MarkedCast>,
    /// The names [`Printer::merge_into_marked`] renamed in the current function.
    merged: Vec<String>,
}

/// A multi-buffer's pointer_cast, as fixMultibufferEnabledPointerCastOps remembers it.
struct MarkedCast {
    scope: Option<u32>,
    ty: String,
    offsets: Vec<u64>,
    name: String,
}

fn regions(op: &Op) -> Vec<&Region> {
    match &op.kind {
        OpKind::Module { body, .. }
        | OpKind::Func { body, .. }
        | OpKind::For { body, .. }
        | OpKind::Scope { body } => vec![body],
        OpKind::If { then, els, .. } => {
            let mut v = vec![then];
            if let Some(e) = els {
                v.push(e);
            }
            v
        }
        OpKind::While { before, after, .. } => vec![before, after],
        _ => Vec::new(),
    }
}

/// Collects the SSA result names of every op under `ops`.
fn names(ops: &[Op], out: &mut HashMap<String, ()>) {
    for op in ops {
        for r in &op.results {
            out.insert(r.name.clone(), ());
        }
        for r in regions(op) {
            for b in &r.blocks {
                for (v, _) in &b.args {
                    out.insert(v.name.clone(), ());
                }
                names(&b.ops, out);
            }
        }
        if let OpKind::Func { args, .. } = &op.kind {
            for a in args {
                out.insert(a.value.name.clone(), ());
            }
        }
    }
}

impl Printer<'_> {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn text(&self, a: usize, b: usize) -> &str {
        self.src.get(a..b.min(self.src.len())).unwrap_or("")
    }

    /// The offset of the `{` opening `r` (which lies in `op`), and of the `}` closing it.
    fn braces(&self, op: &Op, r: &Region, from: usize) -> Option<(usize, usize)> {
        let bytes = self.src.as_bytes();
        let end = (op.span.end as usize).min(bytes.len());
        // the region opens at the first `{` from `from` that is not inside (), [], <> or a
        // string, and not an attribute dictionary (`attributes {`, or one that holds `=`
        // before its first op)
        let first_op = r
            .blocks
            .first()
            .and_then(|b| b.ops.first())
            .map(|o| o.span.start.offset as usize);
        let open = match first_op {
            Some(f) => {
                // the last `{` before the region's first op, outside comments
                let mut i = f;
                let mut found = None;
                while i > from {
                    i -= 1;
                    if bytes[i] == b'{' {
                        let line_start = self.src[..i].rfind('\n').map_or(0, |n| n + 1);
                        let before = &self.src[line_start..i];
                        if !strip_comment(before).len().eq(&before.len()) {
                            continue;
                        }
                        found = Some(i);
                        break;
                    }
                }
                found?
            }
            None => {
                let t = self.text(from, end);
                from + t.find('{')?
            }
        };
        // the matching `}`
        let mut depth = 0i32;
        let mut in_str = false;
        let mut i = open;
        while i < end {
            let c = bytes[i];
            if in_str {
                if c == b'\\' {
                    i += 1;
                } else if c == b'"' {
                    in_str = false;
                }
            } else if c == b'"' {
                in_str = true;
            } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
                while i < end && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            } else if c == b'{' {
                depth += 1;
            } else if c == b'}' {
                depth -= 1;
                if depth == 0 {
                    return Some((open, i));
                }
            }
            i += 1;
        }
        None
    }

    fn op(&mut self, op: &Op, depth: usize) {
        if self.skip.contains(&op.span.start.offset)
            || self.edits.erased.contains(&op.span.start.offset)
        {
            return;
        }
        let key = (op.name_pos.line, op.name_pos.column);
        if let Some(lines) = self.edits.before.get(&key) {
            for l in lines.clone() {
                self.line(depth, &l);
            }
        }
        let start = op.span.start.offset as usize;
        let end = op.span.end as usize;
        if let Some((a, line)) = self.first_const.clone() {
            if a == op.span.start.offset {
                self.line(depth, &line);
                self.first_const = None;
            }
        }
        if let (OpKind::Alloc { ty, .. }, Some(offs)) =
            (&op.kind, self.edits.offsets.get(&op.span.start.offset))
        {
            let res = op
                .results
                .first()
                .map(|r| r.name.clone())
                .unwrap_or_default();
            let consts: Vec<String> = offs.iter().map(|o| const_name(*o)).collect();
            let _ = ty;
            let whole = one_line(self.text(start, end), usize::MAX);
            let ty_text = type_text(&whole).to_string();
            self.merge_into_marked(&res, &ty_text, offs);
            self.line(
                depth,
                &format!(
                    "%{res} = hivm.hir.pointer_cast({}) : {ty_text}",
                    consts
                        .iter()
                        .map(|c| format!("%{c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        } else {
            let rs = regions(op);
            if let Some(t) = self.edits.replace.get(&key) {
                let t = t.clone();
                self.line(depth, &t);
            } else if let Some(t) = sync_text(op) {
                // sync ops print in their short form, as HIVM's printer writes them
                let t = renamed(&t, &self.rename);
                self.line(depth, &t);
            } else if rs.is_empty() {
                let t = canonical(&renamed(
                    &one_line(self.text(start, end), usize::MAX),
                    &self.rename,
                ));
                match self.edits.suffix.get(&key) {
                    Some(more) => self.line(depth, &format!("{t} {more}")),
                    None => self.line(depth, &t),
                }
            } else {
                if let OpKind::Func { .. } = op.kind {
                    self.taken.clear();
                    names(std::slice::from_ref(op), &mut self.taken);
                    self.marked.clear();
                    marked_allocs(std::slice::from_ref(op), &mut self.marked);
                    self.casts_marked.clear();
                    // a merge is the function's own: names may repeat in the next one
                    for n in std::mem::take(&mut self.merged) {
                        self.rename.remove(&n);
                    }
                }
                let is_for = matches!(op.kind, OpKind::For { .. });
                self.enclosing.push((op.span.start.offset, is_for));
                let mut from = start;
                for (i, r) in rs.iter().enumerate() {
                    let Some((open, close)) = self.braces(op, r, from) else {
                        // a declaration, or text the reader accepted but the printer cannot
                        // split: the op's own text on one line
                        let t = one_line(self.text(from, end), usize::MAX);
                        self.line(depth, &t);
                        from = end;
                        break;
                    };
                    let head = renamed(
                        &one_line(self.text(from, open + 1), usize::MAX),
                        &self.rename,
                    );
                    if i == 0 {
                        self.line(depth, &head);
                    } else {
                        // `} else {`, `} do {`: the text between the regions
                        let pop = self.out.trim_end_matches('\n').len();
                        self.out.truncate(pop);
                        self.out.push(' ');
                        self.out.push_str(head.trim_start_matches('}').trim_start());
                        self.out.push('\n');
                    }
                    if let OpKind::Func { .. } = op.kind {
                        self.prologue(op, depth + 1);
                    }
                    for b in &r.blocks {
                        // a block label (`^bb0(%a: T):`) is printed from its text
                        if let Some(l) = &b.label {
                            let first = b.ops.first().map(|o| o.span.start.offset as usize);
                            let lt = first.map(|f| self.text(open + 1, f)).unwrap_or("");
                            let lt = lt.rfind('^').map(|k| &lt[k..]).unwrap_or(lt);
                            let t = one_line(lt, usize::MAX);
                            if !t.is_empty() {
                                self.line(depth, &t);
                            } else {
                                self.line(depth, &format!("^{l}:"));
                            }
                        }
                        let (front, rest) = self.ordered(&b.ops, is_for);
                        for o in &front {
                            self.op(o, depth + 1);
                        }
                        // a pointer_cast moved out of an scf.if is not printed again there
                        for o in &front {
                            self.skip.insert(o.span.start.offset);
                        }
                        for o in rest {
                            self.op(o, depth + 1);
                        }
                    }
                    self.line(depth, "}");
                    from = close + 1;
                }
                self.enclosing.pop();
                if from < end {
                    let tail = one_line(self.text(from, end), usize::MAX);
                    if !tail.is_empty() {
                        let pop = self.out.trim_end_matches('\n').len();
                        self.out.truncate(pop);
                        self.out.push(' ');
                        self.out.push_str(&tail);
                        self.out.push('\n');
                    }
                }
            }
        }
        if let Some(lines) = self.edits.after.get(&key) {
            for l in lines.clone() {
                self.line(depth, &l);
            }
        }
    }

    /// The ops of a block in print order, as the ones moved to its front and the rest.
    /// HIVM's fixMultibufferEnabledPointerCastOps (PlanMemory.cpp) moves the pointer_cast of
    /// each multi-buffer-marked alloc under an scf.for to the front of that loop's body (out
    /// of any scf.if between), with its mark after it, one by one in walk order: so the last
    /// one comes first. A marked alloc under no loop stays where it is.
    fn ordered<'o>(&self, ops: &'o [Op], is_for: bool) -> (Vec<&'o Op>, Vec<&'o Op>) {
        if !is_for {
            return (Vec::new(), ops.iter().collect());
        }
        let mut found: Vec<(&'o Op, Vec<&'o Op>)> = Vec::new();
        self.marked_under(ops, &mut found);
        let mut front: Vec<&Op> = Vec::new();
        for (o, marks) in found.into_iter().rev() {
            front.push(o);
            front.extend(marks);
        }
        let rest = ops
            .iter()
            .filter(|o| !front.iter().any(|f| std::ptr::eq(*f, *o)))
            .collect();
        (front, rest)
    }

    /// The planned marked allocs under `ops` in walk order, each with the marks naming it in
    /// its own block; nested loops hold their own.
    fn marked_under<'o>(&self, ops: &'o [Op], out: &mut Vec<(&'o Op, Vec<&'o Op>)>) {
        for o in ops {
            let marked = matches!(o.kind, OpKind::Alloc { .. })
                && self.edits.offsets.contains_key(&o.span.start.offset)
                && o.results
                    .first()
                    .is_some_and(|r| self.marked.contains(&r.name));
            if marked {
                let name = o.results.first().map(|r| r.name.as_str()).unwrap_or("");
                let marks = ops
                    .iter()
                    .filter(|m| matches!(&m.kind, OpKind::Mark { target } if target.name == name))
                    .collect();
                out.push((o, marks));
            }
            if !matches!(o.kind, OpKind::For { .. }) {
                for r in regions(o) {
                    for b in &r.blocks {
                        self.marked_under(&b.ops, out);
                    }
                }
            }
        }
    }

    /// fixMultibufferEnabledPointerCastOps's second walk: a pointer_cast with no multi-buffer
    /// mark, of the same type and offsets as a marked one printed before it whose region
    /// (its loop's, after the move) holds it, has its uses replaced by the marked one's.
    fn merge_into_marked(&mut self, name: &str, ty: &str, offsets: &[u64]) {
        let ty: String = ty.split_whitespace().collect();
        if self.marked.contains(name) {
            let scope = self
                .enclosing
                .iter()
                .rev()
                .find(|e| e.1)
                .or(self.enclosing.last())
                .map(|e| e.0);
            self.casts_marked.push(MarkedCast {
                scope,
                ty,
                offsets: offsets.to_vec(),
                name: name.to_string(),
            });
            return;
        }
        let holds = |s: Option<u32>| s.is_none_or(|s| self.enclosing.iter().any(|e| e.0 == s));
        if let Some(m) = self
            .casts_marked
            .iter()
            .rev()
            .find(|m| holds(m.scope) && m.ty == ty && m.offsets == offsets)
        {
            self.rename.insert(name.to_string(), m.name.clone());
            self.merged.push(name.to_string());
        }
    }

    /// The offset constants of a function: one per distinct offset, in the order its allocs
    /// are walked, each new one in front of the earlier ones.
    fn prologue(&mut self, func: &Op, depth: usize) {
        let mut seen: Vec<u64> = Vec::new();
        let mut allocs = Vec::new();
        collect_allocs(std::slice::from_ref(func), &mut allocs);
        for a in allocs {
            if let Some(offs) = self.edits.offsets.get(&a) {
                for o in offs {
                    if !seen.contains(o) {
                        seen.push(*o);
                    }
                }
            }
        }
        // AllocToPointerCast creates each constant beside the alloc it rewrites, and MLIR's
        // folder moves every constant that is not in the function's entry block to its front:
        // so the first constant stays before the first alloc when that alloc is in the entry
        // block (after any constants the input had), and the others come first, newest first
        // (checked against bishengir-opt 1.2.0)
        let top: Vec<u32> = match &func.kind {
            OpKind::Func { body, .. } => body
                .blocks
                .first()
                .map(|b| {
                    b.ops
                        .iter()
                        .filter(|o| matches!(o.kind, OpKind::Alloc { .. }))
                        .map(|o| o.span.start.offset)
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        // an i64 constant of the function equal to an offset is the one MLIR's folder keeps:
        // it prints where the offset constant goes, and its uses name that constant
        if let OpKind::Func { body, .. } = &func.kind {
            if let Some(b) = body.blocks.first() {
                for o in &b.ops {
                    if let OpKind::Constant {
                        value: super::ast::Attr::Int { value, .. },
                        ty: super::ast::Type::Int { bits: 64, .. },
                    } = &o.kind
                    {
                        if let Ok(v) = u64::try_from(*value) {
                            if seen.contains(&v) {
                                if let Some(r) = o.results.first() {
                                    self.skip.insert(o.span.start.offset);
                                    self.rename.insert(r.name.clone(), const_name(v));
                                }
                            }
                        }
                    }
                }
            }
        }
        let first_alloc = allocs_in_order(func)
            .into_iter()
            .find(|a| self.edits.offsets.contains_key(a));
        let folded = if self.edits.fold_constants {
            self.fold_constants(func)
        } else {
            Vec::new()
        };
        // the folder keeps a constant in place only right after the constants it has already
        // seen (`OperationFolder::insertKnownConstant`): the first offset constant stays only
        // when the first alloc follows the entry block's leading constants
        let stays = first_alloc
            .filter(|a| top.contains(a))
            .filter(|a| !self.edits.fold_constants || self.after_leading_constants(func, *a));
        let front: &[u64] = match stays {
            Some(_) if !seen.is_empty() => &seen[1..],
            _ => &seen,
        };
        for o in front.iter().rev() {
            let name = const_name(*o);
            self.line(depth, &format!("%{name} = arith.constant {o} : i64"));
        }
        for l in folded {
            self.line(depth, &l);
        }
        if let (Some(a), Some(o)) = (stays, seen.first()) {
            self.first_const = Some((a, format!("%{} = arith.constant {o} : i64", const_name(*o))));
        }
        if let Some(lines) = self.edits.prologue.get(&func.span.start.offset) {
            for l in lines.clone() {
                self.line(depth, &l);
            }
        }
    }
}

/// A set_flag, wait_flag or pipe_barrier as HIVM prints it:
/// `hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]` (the input may spell
/// `#hivm.pipe<...>` and `#hivm.event<...>`, and put a space before `[`).
fn sync_text(op: &Op) -> Option<String> {
    let pipe = |p: &str| {
        if p.starts_with("PIPE_") || p.starts_with("VIRTUAL_") {
            p.to_string()
        } else {
            format!("PIPE_{p}")
        }
    };
    let event = |e: &super::ast::Event| match e {
        super::ast::Event::Id(n) => format!("<EVENT_ID{n}>"),
        super::ast::Event::Value(v) => format!("%{}", v.name),
    };
    Some(match &op.kind {
        OpKind::SetFlag { src, dst, event: e } => {
            format!(
                "hivm.hir.set_flag[<{}>, <{}>, {}]",
                pipe(src),
                pipe(dst),
                event(e)
            )
        }
        OpKind::WaitFlag { src, dst, event: e } => {
            format!(
                "hivm.hir.wait_flag[<{}>, <{}>, {}]",
                pipe(src),
                pipe(dst),
                event(e)
            )
        }
        OpKind::PipeBarrier { pipe: p } => format!("hivm.hir.pipe_barrier[<{}>]", pipe(p)),
        _ => return None,
    })
}

/// Every `arith.constant` and `memref.dim` (which may fold to one) under `ops`, in program
/// order.
fn constants<'o>(ops: &'o [Op], out: &mut Vec<&'o Op>) {
    for op in ops {
        if op.name == "arith.constant" || op.name == "memref.dim" {
            out.push(op);
        }
        for r in regions(op) {
            for b in &r.blocks {
                constants(&b.ops, out);
            }
        }
    }
}

/// `text` without its `//` comments.
pub(crate) fn uncommented(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for l in text.lines() {
        out.push_str(strip_comment(l));
        out.push('\n');
    }
    out
}

/// How many times `%name` occurs in `text` as a whole value name.
pub(crate) fn occurrences(text: &str, name: &str) -> usize {
    let pat = format!("%{name}");
    let b = text.as_bytes();
    let mut n = 0;
    let mut from = 0;
    while let Some(i) = text[from..].find(&pat) {
        let end = from + i + pat.len();
        let next = b.get(end).copied().unwrap_or(b' ');
        if !(next.is_ascii_alphanumeric() || matches!(next, b'_' | b'$' | b'.' | b'-')) {
            n += 1;
        }
        from = end;
    }
    n
}

/// The names of the values an `annotation.mark` with `hivm.multi_buffer` names under `ops`.
fn marked_allocs(ops: &[Op], out: &mut std::collections::HashSet<String>) {
    for op in ops {
        if let OpKind::Mark { target } = &op.kind {
            if op.attrs.iter().any(|a| a.name == "hivm.multi_buffer") {
                out.insert(target.name.clone());
            }
        }
        for r in regions(op) {
            for b in &r.blocks {
                marked_allocs(&b.ops, out);
            }
        }
    }
}

fn allocs_in_order(func: &Op) -> Vec<u32> {
    let mut v = Vec::new();
    collect_allocs(std::slice::from_ref(func), &mut v);
    v
}

impl Printer<'_> {
    /// The function's own constants after MLIR's folder (bishengir-opt 1.2.0 on plan-memory
    /// tests): a constant nothing uses is erased; of equal constants the first is kept and the
    /// others' uses name it; a constant that is not in the entry block's leading run of
    /// constants (it follows another op, or sits in a nested region) moves to the front, just
    /// after the offset constants, each in front of the ones moved before it.
    fn fold_constants(&mut self, func: &Op) -> Vec<String> {
        let OpKind::Func { body, .. } = &func.kind else {
            return Vec::new();
        };
        let Some(entry) = body.blocks.first() else {
            return Vec::new();
        };
        let text = uncommented(self.text(func.span.start.offset as usize, func.span.end as usize));
        let leading: Vec<u32> = entry
            .ops
            .iter()
            .take_while(|o| o.name == "arith.constant")
            .map(|o| o.span.start.offset)
            .collect();
        let mut all = Vec::new();
        constants(&entry.ops, &mut all);
        // (value and type text, name) of every constant, to evaluate a dim's index
        let values: HashMap<String, String> = all
            .iter()
            .filter(|c| c.name == "arith.constant")
            .filter_map(|c| {
                let r = c.results.first()?;
                let line = one_line(
                    self.text(c.span.start.offset as usize, c.span.end as usize),
                    usize::MAX,
                );
                Some((r.name.clone(), line.split_once('=')?.1.trim().to_string()))
            })
            .collect();
        // a `memref.dim` of a static dimension folds to a constant: its uses of the index
        // constant go with it
        let mut dims: HashMap<u32, u64> = HashMap::new();
        let mut dropped: HashMap<String, usize> = HashMap::new();
        for c in all.iter().filter(|c| c.name == "memref.dim") {
            let line = one_line(
                self.text(c.span.start.offset as usize, c.span.end as usize),
                usize::MAX,
            );
            if let Some((k, idx)) = static_dim(&line, &values) {
                dims.insert(c.span.start.offset, k);
                *dropped.entry(idx).or_default() += 1;
            }
        }
        let mut kept: Vec<(String, String)> = Vec::new(); // (value and type text, name)
        let mut moved: Vec<String> = Vec::new();
        for c in all {
            let Some(r) = c.results.first() else { continue };
            if self.skip.contains(&c.span.start.offset) {
                continue;
            }
            let (line, value) = match dims.get(&c.span.start.offset) {
                Some(k) => {
                    let value = format!("arith.constant {k} : index");
                    (format!("%{} = {value}", self.index_name(*k)), value)
                }
                None if c.name == "memref.dim" => continue,
                None => {
                    let line = one_line(
                        self.text(c.span.start.offset as usize, c.span.end as usize),
                        usize::MAX,
                    );
                    let value = line
                        .split_once('=')
                        .map(|(_, v)| v.trim().to_string())
                        .unwrap_or_default();
                    (line, value)
                }
            };
            let uses = occurrences(&text, &r.name)
                .saturating_sub(dropped.get(&r.name).copied().unwrap_or(0));
            if uses <= 1 {
                self.skip.insert(c.span.start.offset);
                continue;
            }
            if let Some((_, first)) = kept.iter().find(|(v, _)| *v == value) {
                self.rename.insert(r.name.clone(), first.clone());
                self.skip.insert(c.span.start.offset);
                continue;
            }
            let name = if dims.contains_key(&c.span.start.offset) {
                let n = self.index_name(dims[&c.span.start.offset]);
                self.taken.insert(n.clone(), ());
                self.rename.insert(r.name.clone(), n.clone());
                n
            } else {
                r.name.clone()
            };
            kept.push((value, name));
            if !leading.contains(&c.span.start.offset) {
                moved.push(line);
                self.skip.insert(c.span.start.offset);
            }
        }
        moved
            .iter()
            .rev()
            .map(|l| canonical(&renamed(l, &self.rename)))
            .collect()
    }

    /// The name MLIR's printer gives an index constant (`%c4`), unless the function has it.
    fn index_name(&self, k: u64) -> String {
        let n = format!("c{k}");
        if self.taken.contains_key(&n) {
            format!("c{k}_npu")
        } else {
            n
        }
    }

    /// Whether the op before `alloc` (by start offset) in the function's entry block, among
    /// those printed where they are, is one of its leading constants (or there is none).
    fn after_leading_constants(&self, func: &Op, alloc: u32) -> bool {
        let OpKind::Func { body, .. } = &func.kind else {
            return false;
        };
        let Some(entry) = body.blocks.first() else {
            return false;
        };
        let leading = entry
            .ops
            .iter()
            .take_while(|o| o.name == "arith.constant")
            .count();
        let Some(at) = entry.ops.iter().position(|o| o.span.start.offset == alloc) else {
            return false;
        };
        let before = entry.ops[..at].iter().enumerate().rev().find(|(_, o)| {
            let off = o.span.start.offset;
            !self.skip.contains(&off) && !self.edits.erased.contains(&off)
        });
        match before {
            None => true,
            Some((i, _)) => i < leading,
        }
    }
}

/// `%d = memref.dim %src, %i : memref<4x?xT, ...>` with `%i` a constant naming a static
/// dimension: that dimension, and the index constant's name.
fn static_dim(line: &str, values: &HashMap<String, String>) -> Option<(u64, String)> {
    let rest = line.split_once("memref.dim")?.1;
    let (operands, ty) = rest.rsplit_once(" : ")?;
    let idx = operands
        .split(',')
        .nth(1)?
        .trim()
        .strip_prefix('%')?
        .to_string();
    let v = values.get(&idx)?;
    let i: usize = v
        .strip_prefix("arith.constant")?
        .strip_suffix(" : index")?
        .trim()
        .parse()
        .ok()?;
    let shape = ty.trim().strip_prefix("memref<")?;
    let dims: Vec<&str> = shape.split('x').collect();
    // the last piece is the element type
    let d = *dims.get(i).filter(|_| i + 1 < dims.len())?;
    let k = d.trim().parse().ok()?;
    Some((k, idx))
}

fn collect_allocs(ops: &[Op], out: &mut Vec<u32>) {
    for op in ops {
        if let OpKind::Alloc { .. } = op.kind {
            out.push(op.span.start.offset);
        }
        for r in regions(op) {
            for b in &r.blocks {
                collect_allocs(&b.ops, out);
            }
        }
    }
}

/// The SSA name of the constant holding byte offset `o`. npusim's names carry a prefix no
/// input uses (`npu`), so they never clash with the function's own values.
pub fn const_name(o: u64) -> String {
    format!("c{o}_i64_npu")
}

/// The type after an op's last top-level ` : ` (`memref<16xf16, #hivm.address_space<ub>>`).
fn type_text(line: &str) -> &str {
    let b = line.as_bytes();
    let mut depth = 0i32;
    let mut last = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => depth -= 1,
            b':' if depth == 0 => last = Some(i),
            _ => {}
        }
    }
    match last {
        Some(i) => line[i + 1..].trim(),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_spaced_as_mlir_prints_them() {
        assert_eq!(
            canonical("hivm.hir.store ins(%a : memref<16xf16,#hivm.address_space<ub>>) outs(%d: memref<16xf16>)"),
            "hivm.hir.store ins(%a : memref<16xf16, #hivm.address_space<ub>>) outs(%d : memref<16xf16>)"
        );
        // an enum keyword loses its dialect prefix; inside an attribute dictionary it stays
        assert_eq!(
            canonical(
                "hivm.hir.vcast ins(%s : T) outs(%d : U) round_mode = #hivm.round_mode<trunc>"
            ),
            "hivm.hir.vcast ins(%s : T) outs(%d : U) round_mode = <trunc>"
        );
        assert_eq!(
            canonical("hivm.hir.fixpipe {dma_mode = #hivm.dma_mode<nz2nd>} ins(%a : T)"),
            "hivm.hir.fixpipe {dma_mode = #hivm.dma_mode<nz2nd>} ins(%a : T)"
        );
        // a result group and a string are left alone
        assert_eq!(
            canonical("%r:2 = \"x\"(%a) {s = \"a,b\"}"),
            "%r:2 = \"x\"(%a) {s = \"a,b\"}"
        );
    }

    #[test]
    fn renaming_replaces_whole_value_names_only() {
        let mut m = HashMap::new();
        m.insert("alloc_1".to_string(), "alloc_0".to_string());
        assert_eq!(
            renamed(
                "vadd ins(%alloc_1, %alloc_10 : T, T) outs(%alloc_1 : T)",
                &m
            ),
            "vadd ins(%alloc_0, %alloc_10 : T, T) outs(%alloc_0 : T)"
        );
    }

    #[test]
    fn sync_ops_print_in_short_form() {
        let text = "func.func @s(%e: i64) {\n  hivm.hir.wait_flag [#hivm.pipe<PIPE_MTE3>, #hivm.pipe<PIPE_MTE2>, %e]\n  hivm.hir.pipe_barrier[<PIPE_V>]\n  return\n}\n";
        let chunks = crate::mlir::parse_file(text, "s.mlir").unwrap();
        let out = print_chunk(text, &chunks[0], &Edits::default());
        assert!(
            out.contains("    hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, %e]\n"),
            "{out}"
        );
        assert!(
            out.contains("    hivm.hir.pipe_barrier[<PIPE_V>]\n"),
            "{out}"
        );
    }

    #[test]
    fn the_type_is_after_the_last_top_level_colon() {
        assert_eq!(
            type_text("%a = memref.alloc() {alignment = 64 : i64} : memref<16xf16, strided<[1], offset: ?>>"),
            "memref<16xf16, strided<[1], offset: ?>>"
        );
    }
}
