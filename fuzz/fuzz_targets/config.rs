//! `config`: arbitrary bytes as a chip config.
//!
//! bytes → UTF-8 (invalid input is skipped) → `sim::load_config`; when the config loads, a few
//! tiny fixed programs (a vector pipeline in UB, a cube pipeline through L1 and L0C, a plain
//! load and store through the first scope gm reaches) are written for each of its core types,
//! loaded against it and, when they load, planned and simulated with the race checker and the
//! validator on. A split chip's config (core types `aic` and `aiv`, a `chip` section) also gets
//! a tiny mixed kernel on every AI core of the chip (up to the loader's `MAX_BLOCKS`, 4096, each
//! with up to 8 vector cores): the cube part hands a tile to the vector cores through gm with a
//! cross-core flag, run as one launch. The programs are small and their loops constant,
//! so every run is short; what varies is the config's numbers (capacities, alignments, rates,
//! latencies, queue depth, event ids, AI cores, cross-core latency), which is what this target
//! is after.
//!
//! Crashes are panics, hangs, memory blow-ups and the pipeline's "npusim bug" failures
//! (`Failure::is_internal`), which this target turns into panics.

#![no_main]

#[path = "edge_numbers.rs"]
mod edge_numbers;

use libfuzzer_sys::{fuzz_mutator, fuzz_target};
use pipeline::Options;
use sim::{Config, Space};

/// The first few core types get programs; more cost time and find nothing new.
const MAX_CORES: usize = 4;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = sim::load_config(text, "fuzz-config.yaml") else {
        return;
    };
    for program in programs(&config) {
        let Ok(kernel) = sim::load_kernel(&program, "tiny.yaml", &config, &[], None) else {
            continue;
        };
        let opts = Options {
            validate: true,
            ..Default::default()
        };
        if let Err(e) = pipeline::simulate_kernel(&kernel, &config, &opts) {
            if e.is_internal() {
                panic!("internal failure (an npusim bug): {e}");
            }
        }
    }
});

/// The fixed programs for each core type of `config`.
fn programs(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for core in config.cores.iter().take(MAX_CORES) {
        let name = &core.name;
        out.push(format!(
            r#"kernel: tiny_vec
core: {name}
params: {{ tiles: 4, n: 256 }}
gm:
  x: {{ shape: [tiles, n], dtype: f16 }}
  y: {{ shape: [tiles, n], dtype: f16 }}
  z: {{ shape: [tiles, n], dtype: f16 }}
body:
  - for: {{ var: t, to: tiles }}
    buffers:
      xb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
      yb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
      zb: {{ scope: ub, shape: [n], dtype: f16, multi: 2 }}
    body:
      - load: {{ src: "x[t]", dst: xb }}
      - load: {{ src: "y[t]", dst: yb }}
      - vadd: {{ ins: [xb, yb], out: zb }}
      - vexp: {{ ins: [zb], out: zb }}
      - store: {{ src: zb, dst: "z[t]" }}
  - scalar: {{ cycles: 3 }}
"#
        ));
        out.push(format!(
            r#"kernel: tiny_cube
core: {name}
params: {{ M: 32, N: 32, K: 64, kt: 32 }}
gm:
  a: {{ shape: [M, K], dtype: f16 }}
  b: {{ shape: [K, N], dtype: f16 }}
  c: {{ shape: [M, N], dtype: f16 }}
buffers:
  l1a: {{ scope: l1, shape: [M, kt], dtype: f16, multi: 2 }}
  l1b: {{ scope: l1, shape: [kt, N], dtype: f16, multi: 2 }}
  l0c: {{ scope: l0c, shape: [M, N], dtype: f32 }}
body:
  - for: {{ var: kk, to: "K / kt" }}
    body:
      - load: {{ src: "a[:, kk * kt : (kk + 1) * kt]", dst: "l1a@(kk % 2)", layout: nz }}
      - load: {{ src: "b[kk * kt : (kk + 1) * kt]", dst: "l1b@(kk % 2)", layout: nz }}
      - mmad_l1: {{ a: "l1a@(kk % 2)", b: "l1b@(kk % 2)", c: l0c, m: M, n: N, k: kt, init: "kk == 0" }}
  - fixpipe: {{ src: l0c, dst: c, quant: true }}
"#
        ));
        // a load and a store (when there is a way back) through the first scope gm reaches,
        // synchronised by hand
        if let Some(scope) = core
            .scopes
            .iter()
            .find(|s| config.path(Space::Gm, s.space).is_some())
        {
            let sname = scope.space.yaml_name();
            let store = if config.path(scope.space, Space::Gm).is_some() {
                r#"      - store: { src: xb, dst: "y[t]" }"#
            } else {
                ""
            };
            out.push(format!(
                r#"kernel: tiny_move
core: {name}
sync: manual
gm:
  x: {{ shape: [4, 64], dtype: f16 }}
  y: {{ shape: [4, 64], dtype: f16 }}
body:
  - for: {{ var: t, to: 4 }}
    buffers:
      xb: {{ scope: {sname}, shape: [64], dtype: f16, multi: 2 }}
    body:
      - load: {{ src: "x[t]", dst: xb }}
{store}
  - barrier: all
"#
            ));
        }
    }
    // every AI core of the chip, so the largest chips the loader takes run whole launches
    // each of an AI core's vector cores takes its share of the block's 32 rows
    let (blocks, half) = config
        .chip
        .map_or((2, 16), |c| (c.aic.max(1), 32 / c.aiv_per_aic.clamp(1, 32)));
    out.push(
        MIXED
            .replace("BLOCKS", &blocks.to_string())
            .replace("HALF", &half.to_string()),
    );
    out
}

/// A mixed kernel on BLOCKS blocks (every AI core): each cube core writes its tile to gm and
/// sets a mode-2 cross flag; each vector core waits for it and adds its half of the tile's rows
/// to x. Loads only on a split chip with these scopes (the loader refuses it otherwise, and it
/// is skipped).
const MIXED: &str = r#"kernel: tiny_mixed
launch: { blocks: BLOCKS }
params: { tm: 32, N: 64, K: 32, half: HALF, rows: "BLOCKS * tm" }
gm:
  a: { shape: [rows, K], dtype: f16 }
  b: { shape: [K, N], dtype: f16 }
  x: { shape: [rows, N], dtype: f16 }
  ws: { shape: [rows, N], dtype: f16 }
  y: { shape: [rows, N], dtype: f16 }
aic:
  buffers:
    a1: { scope: l1, shape: [tm, K], dtype: f16 }
    b1: { scope: l1, shape: [K, N], dtype: f16 }
    c0: { scope: l0c, shape: [tm, N], dtype: f32 }
  body:
    - load: { src: "a[block * tm : (block + 1) * tm]", dst: a1, layout: nz }
    - load: { src: b, dst: b1, layout: nz }
    - mmad_l1: { a: a1, b: b1, c: c0, m: tm, n: N, k: K, init: 1 }
    - fixpipe: { src: c0, dst: "ws[block * tm : (block + 1) * tm]", quant: true }
    - cross_set: { mode: 2, pipe: fix, id: 0 }
aiv:
  buffers:
    wb: { scope: ub, shape: [half, N], dtype: f16 }
    xb: { scope: ub, shape: [half, N], dtype: f16 }
    yb: { scope: ub, shape: [half, N], dtype: f16 }
  body:
    - load: { src: "x[block * tm + subblock * half : block * tm + (subblock + 1) * half]", dst: xb }
    - cross_wait: { id: 0, pipe: mte2 }
    - load: { src: "ws[block * tm + subblock * half : block * tm + (subblock + 1) * half]", dst: wb }
    - vadd: { ins: [wb, xb], out: yb }
    - store: { src: yb, dst: "y[block * tm + subblock * half : block * tm + (subblock + 1) * half]" }
"#;

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    edge_numbers::mutate(data, size, max_size, seed)
});
