//! `mlir`: arbitrary bytes as a HIVM MLIR file.
//!
//! bytes → UTF-8 (invalid input is skipped) → `sim::mlir::parse_file`, which splits at
//! `// -----` lines and reads every chunk. Crashes are panics (the reader must turn any input
//! into a tree or located errors), stack overflows (nesting is capped at 256 levels), hangs
//! (-timeout) and memory blow-ups (-rss_limit_mb). On success the tree is checked against the
//! text: every op's span lies inside the file, starts at a character boundary, and its line and
//! column agree with its byte offset; a second read gives the same tree (determinism). Every
//! error names the file and a line and column inside it.
//!
//! A file that reads is then lowered and loaded, as `check` loads it (against the largest
//! built-in chip) and as `npusim opt` lowers it for planning (every function, plan-only): the
//! lowering must give a program or located errors, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sim::mlir::ast::Pos;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = sim::mlir::parse_file(text, "fuzz.mlir");
    match &first {
        Ok(chunks) => {
            for c in chunks {
                check_pos(text, c.span.start);
                c.walk(&mut |op| {
                    check_pos(text, op.span.start);
                    check_pos(text, op.name_pos);
                    assert!(op.span.start.offset <= op.span.end, "span ends before it starts");
                    assert!(op.span.end as usize <= text.len(), "span past the end");
                });
            }
        }
        Err(e) => {
            for d in &e.diagnostics {
                assert_eq!(d.file, "fuzz.mlir");
                let (Some(line), Some(column)) = (d.line, d.column) else {
                    panic!("an error without a place: {d}");
                };
                let lines = text.split('\n').count() as u32;
                assert!(line >= 1 && line <= lines.max(1), "line {line} of {lines}: {d}");
                assert!(column >= 1, "{d}");
            }
        }
    }
    assert_eq!(first, sim::mlir::parse_file(text, "fuzz.mlir"), "two reads differ");
    let Ok(chunks) = first else {
        return;
    };
    let config = sim::load_config(
        sim::builtin::builtin(sim::builtin::DEFAULT).expect("built in"),
        "<built-in>",
    )
    .expect("the built-in config loads");
    let _ = sim::mlir::load_kernel(text, "fuzz.mlir", &config, &[], None);
    let opts = sim::mlir::Options {
        params: Vec::new(),
        sync: sim::mlir::SyncOps::Drop,
        lenient: true,
    };
    for (c, f) in sim::mlir::lower::functions(&chunks) {
        if let Err(e) = sim::mlir::load_function(text, &chunks, c, f, "fuzz.mlir", &config, &opts, None) {
            for d in &e.diagnostics {
                assert!(d.line.is_some(), "an error without a place: {d}");
            }
        }
    }
});

/// `pos` is inside `text`, on a character boundary, and its line and column match its offset.
fn check_pos(text: &str, pos: Pos) {
    let o = pos.offset as usize;
    assert!(o <= text.len() && text.is_char_boundary(o), "offset {o} is not a character boundary");
    let before = &text[..o];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..o].chars().count() as u32 + 1;
    assert_eq!((pos.line, pos.column), (line, column), "position of offset {o}");
}
