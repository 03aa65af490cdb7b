//! HIVM MLIR in (docs/mlir.md): the reader builds the located tree of [`ast`]; the lowering
//! turns a function into the program model the planner, sync pass and engine read.
//!
//! The reader is hand-written (hivm-mlir.md §9): the grammar needed is small, every HIVM op
//! needs its own syntax anyway, and a hand-written lexer can re-lex a dimension list
//! (`16x?xf16`) from inside a token, which a generated lexer cannot do without a second mode.

//!
//! How the reader decides (the contract with the lowering, beyond [`ast`]'s doc comments):
//! - A chunk with no explicit `module` gets an implicit `builtin.module` (name `None`, no
//!   attributes) spanning its ops, so the lowering always finds one module per non-empty chunk.
//!   A chunk holding only comments (the part before the first `// -----`, or after a trailing
//!   one) has no ops.
//! - Op boundaries come from each family's grammar. An op of unknown syntax
//!   ([`ast::OpKind::Opaque`]) runs until the next token that can only start an op: `%r =`
//!   (or `%r:2 =`, `%a, %b =`), a dotted op name or `return` not followed by `=`/`:`, a generic
//!   `"name"(`, a block label `^bb1:` or the `}` closing its region. It keeps every `%value`
//!   used (in brackets too), the types after its last top-level `:` or `->`, its `key = value`
//!   keywords and attribute dictionaries in [`ast::Op::attrs`], and its regions: one region that
//!   holds ops makes it a [`ast::OpKind::Scope`]. A `{` opens a region (not a dictionary) when
//!   the next token starts an op, except `{name}`/`{name = ...}`/`{name, ...}`.
//! - Every `hivm.hir.*` op without its own family below is DPS when `ins(` or `outs(` follows
//!   its name, an optional `<modifier>` or `"string"` (custom_macro's macro name, kept as the
//!   modifier without quotes) and optional leading `{attrs}`; otherwise it is opaque
//!   (`get_block_idx`, `set_ffts_base_addr`, `set_mask_norm`, ...). A keyword with an SSA value
//!   and a type (`pad_value = %cst : f16`) is a one-operand group; one without a type is kept
//!   in `attrs` as `Attr::Other("%v")`, as are sync ops' `ffts_base_addr = %x`.
//! - Pipes drop `PIPE_` (`MTE2`); events drop `EVENT_ID` (`Event::Id(3)`); cores keep their
//!   word (`CUBE`). `arith.constant`'s value carries the constant's type; `true`/`false` are
//!   `Int` 1/0 of type `i1`. `scope.return` reads as [`ast::OpKind::Yield`].
//! - A view's `source_ty` is `A` of `: A to B`/`into B`/`-> B`, or the first input of
//!   `memref.reshape`'s function type.

pub mod ast;
mod attrs;
mod lexer;
mod ops;
mod parser;
mod walk;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use ast::{Chunk, Pos, Span};

/// Read a whole `.mlir` file: split at `// -----` lines (as `-split-input-file` does) and read
/// each chunk. Positions are in the whole file. Every chunk's first syntax error is reported,
/// so one run shows the problems of all chunks.
pub fn parse_file(text: &str, file: &str) -> Result<Vec<Chunk>, crate::LoadError> {
    // Recursive descent over input nested up to MAX_DEPTH levels needs more stack than a test
    // or worker thread's default 2 MiB in a debug build; a scoped thread with a stack sized for
    // the cap keeps deep input a located error, never a stack overflow. The stack is virtual
    // memory, touched only as deep as the input nests.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("mlir-reader".into())
            .stack_size(READER_STACK)
            .spawn_scoped(s, || parse_file_here(text, file))
            .map(|h| h.join())
    })
    .unwrap_or_else(|_| Ok(parse_file_here(text, file)))
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Enough for [`parser::MAX_DEPTH`] levels of the deepest-recursing syntax in a debug build
/// (256 nested regions need about 9 MiB there; unit tests nest every kind past the cap).
const READER_STACK: usize = 64 << 20;

fn parse_file_here(text: &str, file: &str) -> Result<Vec<Chunk>, crate::LoadError> {
    let mut chunks = Vec::new();
    let mut diagnostics = Vec::new();
    for (start, end) in split_chunks(text) {
        let mut p = parser::Parser::new(text, start, end);
        let span = Span {
            start,
            end: end as u32,
        };
        match p.chunk(span) {
            Ok(c) => chunks.push(c),
            Err(e) => diagnostics.push(parser::diagnostic(file, *e)),
        }
    }
    if diagnostics.is_empty() {
        Ok(chunks)
    } else {
        Err(crate::LoadError { diagnostics })
    }
}

/// The chunks' starts and end offsets: lines that are exactly `// -----` (trimmed) separate.
fn split_chunks(text: &str) -> Vec<(Pos, usize)> {
    let mut out = Vec::new();
    let mut start = Pos {
        line: 1,
        column: 1,
        offset: 0,
    };
    let mut offset = 0usize;
    for (line, l) in (1u32..).zip(text.split_inclusive('\n')) {
        if l.trim() == "// -----" {
            out.push((start, offset));
            start = Pos {
                line: line + 1,
                column: 1,
                offset: (offset + l.len()) as u32,
            };
        }
        offset += l.len();
    }
    out.push((start, text.len()));
    out
}
