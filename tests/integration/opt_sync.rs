//! `npusim opt -hivm-inject-sync`: the InjectSync compatibility mode prints the flags
//! bishengir-opt's `-hivm-inject-sync` inserts (docs/sync.md, "InjectSync compatibility"),
//! multi-buffer ids as its `affine.apply` / `arith.cmpi` / `arith.select` chain; `--npusim-sync`
//! prints npusim's own pass instead.

use crate::{npusim, scratch, stderr, stdout};

/// A double buffer reloaded in a loop of step 4, in a function that is no device entry.
const DOUBLE: &str = r#"module {
  func.func @double(%arg0: memref<64xf16, #hivm.address_space<gm>>, %arg1: memref<64xf16, #hivm.address_space<gm>>) {
    %c0_i64 = arith.constant 0 : i64
    %c128_i64 = arith.constant 128 : i64
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c32 step %c4 {
      %0 = hivm.hir.pointer_cast(%c0_i64, %c128_i64) : memref<64xf16, #hivm.address_space<ub>>
      annotation.mark %0 {hivm.multi_buffer = 2 : i32} : memref<64xf16, #hivm.address_space<ub>>
      hivm.hir.load ins(%arg0 : memref<64xf16, #hivm.address_space<gm>>) outs(%0 : memref<64xf16, #hivm.address_space<ub>>)
      hivm.hir.store ins(%0 : memref<64xf16, #hivm.address_space<ub>>) outs(%arg1 : memref<64xf16, #hivm.address_space<gm>>)
    }
    return
  }
}
"#;

fn opt(text: &str, extra: &[&str]) -> String {
    let dir = scratch(&format!("opt_sync_{}", extra.len()));
    let file = dir.join("double.mlir");
    std::fs::write(&file, text).unwrap();
    let mut args = vec!["opt", file.to_str().unwrap(), "-hivm-inject-sync"];
    args.extend(extra);
    let o = npusim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// What bishengir 1.2.0 inserts here (checked against it when written; by InjectSync's rules:
/// two ids for the backward MTE3→MTE2 pair of the 2-slot buffer, chosen by
/// `(i floordiv 4) mod 2`, balanced at the function's start and end; one id for the forward
/// MTE2→MTE3 pair; `pipe_barrier[PIPE_MTE3]` for the store against the next one, which a
/// multi-id pair does not order; no final barrier outside a device entry).
#[test]
fn compat_mode_prints_injectsync_flags() {
    let out = opt(DOUBLE, &[]);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let want = [
        "#map = affine_map<()[s0] -> ((s0 floordiv 4) mod 2)>",
        "hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]",
        "hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]",
        "scf.for %i = %c0 to %c32 step %c4 {",
        "%npu_count0 = affine.apply #map()[%i]",
        "%1 = arith.index_cast %npu_count0 : index to i64",
        "%c0_i64_0 = arith.constant 0 : i64",
        "%c1_i64 = arith.constant 1 : i64",
        "%c1_i64_1 = arith.constant 1 : i64",
        "%3 = arith.cmpi eq, %1, %c1_i64_1 : i64",
        "%2 = arith.select %3, %c1_i64, %c0_i64_0 : i64",
        "hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, %2]",
        "hivm.hir.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]",
        "hivm.hir.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]",
        "hivm.hir.pipe_barrier[<PIPE_MTE3>]",
        "hivm.hir.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, %2]",
        "hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]",
        "hivm.hir.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]",
    ];
    let got: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            l.starts_with("#map")
                || l.contains("flag[")
                || l.contains("pipe_barrier")
                || l.starts_with("scf.for")
                || l.contains("npu_count")
                || l.contains(": i64")
                    && !l.contains("pointer_cast")
                    && !l.starts_with("%c0_i64 =")
                    && !l.starts_with("%c128_i64 =")
        })
        .collect();
    assert_eq!(got, want, "{out}");
    assert!(!out.contains("PIPE_ALL"), "{out}");
}

/// `--npusim-sync`: npusim's own pass (its ids by iteration for both pairs, its final
/// `pipe_barrier[PIPE_ALL]`).
#[test]
fn npusim_sync_flag_keeps_npusims_own_pass() {
    let out = opt(DOUBLE, &["--npusim-sync"]);
    assert!(out.contains("hivm.hir.pipe_barrier[<PIPE_ALL>]"), "{out}");
    assert!(!out.contains("pipe_barrier[<PIPE_MTE3>]"), "{out}");
    assert!(!out.contains("#map"), "{out}");
}
