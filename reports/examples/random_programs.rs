//! Random npusim programs for differential testing against HIVM's compiler
//! (`scripts/differential`, docs/mlir.md): only what the MLIR writer can express and HIVM's
//! PlanMemory plans (UB on the vector core; L1 and L0C on the cube core), with nested loops,
//! branches, multi-buffers, ops whose output may take an input's address (inplace candidates),
//! and sizes that sometimes overflow their scope.
//!
//! `cargo run --release -p reports --example random_programs -- --seed S --count N --out DIR`
//! writes `DIR/rSEED_I.yaml` for I in 0..N; the same seed gives the same files. Every program
//! loads (`npusim check` accepts it, bar an overflow): the generator keeps the loader's rules
//! (a buffer is read only after some op wrote it, slices in bounds).

use std::fmt::Write as _;
use std::path::PathBuf;

/// A buffer visible where an op is generated.
#[derive(Clone)]
struct Buf {
    name: String,
    /// Elements (vector core), or rows of 64 (cube core).
    len: u64,
    /// `ub`, `l1` or `l0c`.
    scope: &'static str,
}

struct Gen {
    s: u64,
    cube: bool,
    out: String,
    bufs: usize,
    vars: Vec<String>,
    next_var: usize,
    frames: Vec<Vec<Buf>>,
    written: Vec<String>,
}

impl Gen {
    fn new(seed: u64, cube: bool) -> Gen {
        Gen {
            s: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            cube,
            out: String::new(),
            bufs: 0,
            vars: Vec::new(),
            next_var: 0,
            frames: Vec::new(),
            written: Vec::new(),
        }
    }

    /// xorshift64: the whole program follows from the seed.
    fn r(&mut self, n: u64) -> u64 {
        self.s ^= self.s << 13;
        self.s ^= self.s >> 7;
        self.s ^= self.s << 17;
        self.s % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.r(100) < percent
    }

    fn pick(&mut self, f: impl Fn(&Buf) -> bool, written: bool) -> Option<Buf> {
        let c: Vec<Buf> = self
            .frames
            .iter()
            .flatten()
            .filter(|b| f(b) && (!written || self.written.contains(&b.name)))
            .cloned()
            .collect();
        if c.is_empty() {
            return None;
        }
        let i = self.r(c.len() as u64) as usize;
        Some(c[i].clone())
    }

    fn mark(&mut self, b: &Buf) {
        if !self.written.contains(&b.name) {
            self.written.push(b.name.clone());
        }
    }

    /// `buffers:` of a block; multi-buffers only inside loops, where HIVM gives them meaning.
    fn declare(&mut self, pad: &str, in_loop: bool) -> Vec<Buf> {
        let n = 1 + self.r(4);
        let mut frame = Vec::new();
        let _ = writeln!(self.out, "{pad}buffers:");
        for _ in 0..n {
            let name = format!("b{}", self.bufs);
            self.bufs += 1;
            let (scope, len, fields) = if self.cube {
                if self.chance(70) {
                    let rows = [64, 64, 128, 256, 1024][self.r(5) as usize];
                    (
                        "l1",
                        rows,
                        format!("scope: l1, shape: [{rows}, 64], dtype: f16"),
                    )
                } else {
                    let rows = [64, 64, 128][self.r(3) as usize];
                    (
                        "l0c",
                        rows,
                        format!("scope: l0c, shape: [{rows}, 64], dtype: f32"),
                    )
                }
            } else {
                // 192 KiB of UB holds 98,304 f16: a few large buffers overflow it
                let len = [256, 512, 2048, 8192, 16384, 24576][self.r(6) as usize];
                ("ub", len, format!("scope: ub, shape: [{len}], dtype: f16"))
            };
            let multi = if in_loop && self.chance(30) {
                ", multi: 2"
            } else {
                ""
            };
            let _ = writeln!(self.out, "{pad}  {name}: {{ {fields}{multi} }}");
            frame.push(Buf { name, len, scope });
        }
        frame
    }

    /// `name`, or its first `len` elements (rows).
    fn operand(b: &Buf, len: u64) -> String {
        if len < b.len {
            format!("\"{}[0:{len}]\"", b.name)
        } else {
            b.name.clone()
        }
    }

    fn row(&mut self, rows: u64) -> String {
        match self.vars.last() {
            Some(v) if !self.s.is_multiple_of(3) => format!("{v} % {rows}"),
            _ => self.r(rows).to_string(),
        }
    }

    fn block(&mut self, indent: usize, depth: usize) {
        let pad = " ".repeat(indent);
        for _ in 0..2 + self.r(4) {
            if depth < 3 && self.chance(30) {
                if self.chance(65) {
                    self.for_loop(&pad, indent, depth);
                } else {
                    self.branch(&pad, indent, depth);
                }
            } else if self.cube {
                self.cube_op(&pad);
            } else {
                self.vector_op(&pad);
            }
        }
    }

    fn for_loop(&mut self, pad: &str, indent: usize, depth: usize) {
        let v = format!("v{}", self.next_var);
        self.next_var += 1;
        let trips = 1 + self.r(4);
        let _ = writeln!(self.out, "{pad}- for: {{ var: {v}, to: {trips} }}");
        let inner = format!("{pad}  ");
        let frame = if self.chance(60) {
            self.declare(&inner, true)
        } else {
            Vec::new()
        };
        let _ = writeln!(self.out, "{inner}body:");
        self.frames.push(frame);
        self.vars.push(v);
        self.block(indent + 4, depth + 1);
        self.vars.pop();
        self.frames.pop();
    }

    fn branch(&mut self, pad: &str, indent: usize, depth: usize) {
        let k = self.r(2);
        let cond = match self.vars.last() {
            Some(v) => format!("{v} % 2 == {k}"),
            None => "1 == 1".into(),
        };
        let _ = writeln!(self.out, "{pad}- if: \"{cond}\"\n{pad}  then:");
        // the loader's read-before-write rule is textual: what a branch writes counts after it
        self.block(indent + 4, depth + 1);
        if self.chance(50) {
            let _ = writeln!(self.out, "{pad}  else:");
            self.block(indent + 4, depth + 1);
        }
    }

    fn vector_op(&mut self, pad: &str) {
        let len = [256, 256, 512, 2048][self.r(4) as usize];
        let fits = move |b: &Buf| b.len >= len;
        // nothing written yet to read: write something first
        let kind = if self.pick(fits, true).is_none() {
            0
        } else {
            self.r(7)
        };
        match kind {
            0 | 1 => {
                let Some(d) = self.pick(fits, false) else {
                    return;
                };
                let row = self.row(4);
                let _ = writeln!(
                    self.out,
                    "{pad}- load: {{ src: \"x[{row}, 0:{len}]\", dst: {} }}",
                    Self::operand(&d, len)
                );
                self.mark(&d);
            }
            2 => {
                let Some(s) = self.pick(fits, true) else {
                    return;
                };
                let row = self.row(4);
                let _ = writeln!(
                    self.out,
                    "{pad}- store: {{ src: {}, dst: \"y[{row}, 0:{len}]\" }}",
                    Self::operand(&s, len)
                );
            }
            3 => {
                let Some(d) = self.pick(fits, false) else {
                    return;
                };
                let _ = writeln!(
                    self.out,
                    "{pad}- vdup: {{ scalar: 1, out: {} }}",
                    Self::operand(&d, len)
                );
                self.mark(&d);
            }
            _ => {
                // an output that may take the address of an input dying here
                let Some(a) = self.pick(fits, true) else {
                    return;
                };
                let Some(d) = self.pick(fits, false) else {
                    return;
                };
                let (ia, out) = (Self::operand(&a, len), Self::operand(&d, len));
                let op = match self.r(4) {
                    0 => format!("vexp: {{ ins: [{ia}], out: {out} }}"),
                    1 => format!("vmuls: {{ ins: [{ia}], out: {out}, scalar: 2 }}"),
                    2 => format!("vcopy: {{ ins: [{ia}], out: {out} }}"),
                    _ => {
                        let Some(b) = self.pick(fits, true) else {
                            return;
                        };
                        let ib = Self::operand(&b, len);
                        format!("vadd: {{ ins: [{ia}, {ib}], out: {out} }}")
                    }
                };
                let _ = writeln!(self.out, "{pad}- {op}");
                self.mark(&d);
            }
        }
    }

    fn cube_op(&mut self, pad: &str) {
        let scope = |s: &'static str| move |b: &Buf| b.scope == s;
        let kind = if self.pick(scope("l1"), true).is_none() {
            0
        } else if self.pick(scope("l0c"), true).is_none() {
            1
        } else {
            self.r(4)
        };
        match kind {
            0 => {
                let Some(d) = self.pick(scope("l1"), false) else {
                    return;
                };
                let row = 64 * self.r(4);
                let _ = writeln!(
                    self.out,
                    "{pad}- load: {{ src: \"a[{row}:{}]\", dst: {}, layout: nz }}",
                    row + d.len,
                    d.name
                );
                self.mark(&d);
            }
            1 | 2 => {
                let Some(a) = self.pick(scope("l1"), true) else {
                    return;
                };
                let Some(b) = self.pick(scope("l1"), true) else {
                    return;
                };
                let Some(c) = self.pick(scope("l0c"), false) else {
                    return;
                };
                let accumulate = self.chance(40) && self.written.contains(&c.name);
                let init = match self.vars.last() {
                    Some(v) if accumulate => {
                        format!("{v} == 0")
                    }
                    _ => "1".into(),
                };
                let _ = writeln!(
                    self.out,
                    "{pad}- mmad_l1: {{ a: {}, b: {}, c: {}, m: 64, n: 64, k: 64, init: \"{init}\" }}",
                    Self::operand(&a, 64),
                    Self::operand(&b, 64),
                    Self::operand(&c, 64)
                );
                self.mark(&c);
            }
            _ => {
                let Some(s) = self.pick(scope("l0c"), true) else {
                    return;
                };
                let row = 64 * self.r(8);
                let _ = writeln!(
                    self.out,
                    "{pad}- fixpipe: {{ src: {}, dst: \"c[{row}:{}]\", quant: true }}",
                    Self::operand(&s, 64),
                    row + 64
                );
            }
        }
    }

    fn program(mut self, name: &str) -> String {
        let head = if self.cube {
            format!("kernel: {name}\ncore: aic\nsync: auto\ngm:\n  a: {{ shape: [1280, 64], dtype: f16 }}\n  c: {{ shape: [512, 64], dtype: f16 }}\n")
        } else {
            format!("kernel: {name}\ncore: aiv\nsync: auto\ngm:\n  x: {{ shape: [4, 2048], dtype: f16 }}\n  y: {{ shape: [4, 2048], dtype: f16 }}\n")
        };
        let body = {
            let frame = self.declare("", false);
            self.frames.push(frame);
            let _ = writeln!(self.out, "body:");
            self.block(2, 0);
            std::mem::take(&mut self.out)
        };
        format!("{head}{body}")
    }
}

fn main() {
    let mut seed = 0u64;
    let mut count = 100u64;
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    let usage = "usage: random_programs --seed S --count N --out DIR";
    while let Some(a) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("{a} needs a value; {usage}");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--seed" | "--count" => {
                let v = value();
                let n = v.parse().unwrap_or_else(|_| {
                    eprintln!("{a} {v}: not a whole number; {usage}");
                    std::process::exit(2)
                });
                if a == "--seed" {
                    seed = n
                } else {
                    count = n
                }
            }
            "--out" => out = Some(PathBuf::from(value())),
            _ => {
                eprintln!("unknown argument `{a}`; {usage}");
                std::process::exit(2)
            }
        }
    }
    let Some(dir) = out else {
        eprintln!("--out DIR is required; {usage}");
        std::process::exit(2)
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(2)
    }
    for i in 0..count {
        let s = seed.wrapping_mul(1_000_003).wrapping_add(i);
        let cube = s % 3 == 0;
        let name = format!("r{seed}_{i}");
        let text = Gen::new(s, cube).program(&name);
        let path = dir.join(format!("{name}.yaml"));
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("{}: {e}", path.display());
            std::process::exit(2)
        }
    }
}
