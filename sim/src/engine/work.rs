//! What one dynamic instruction asks of the resources a roofline bounds (docs/timing.md,
//! "Costs"): the MACs of an mmad, the repeats of a vector op, the bytes of a move on its path,
//! each with the cycles that work needs at the config's rate, rounded as the engine rounds it
//! and exactly.
//! Computed from the op and the loop variables of an [`super::Issue`] by the engine's own
//! rules ([`mmad_work`], [`chunking`], [`banks::repeats`], [`PathConfig::move_work`]), for an
//! observer: the engine never calls it, so a run that does not ask pays nothing.
//!
//! The cycles are the work alone: no startup, no bank conflicts (the cycles a vector op spends
//! above repeats × cycles_per_repeat) and no memory system (a gm move drawing less than its
//! path's rate from a shared L2 or HBM). Without those, they are the pipe's busy cycles
//! exactly.

use super::banks;
use super::compiled::{chunk_bytes, chunking, mmad_work};
use crate::config::{Config, PathConfig};
use crate::footprint::{self, Bases};
use crate::ids::OpId;
use crate::program::{Layout, Mmad, OpKind, Operand, Program};
use crate::types::{Pipe, Space};

/// A resource of one core that a roofline bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// The cube's multiply-accumulates (pipe M).
    Cube,
    /// The vector unit's repeats (pipe V).
    Vector,
    /// The data path `from -> to` of the config's `paths`: bytes written.
    Path(Space, Space),
}

/// Work on one resource: `amount` (MACs, repeats or bytes) that needs `cycles` at the config's
/// rate as the engine rounds it (whole cycles per instruction, per chunk, whole fractals), and
/// `exact.0 / exact.1` cycles without the rounding: bytes over bytes per cycle, MACs over MACs
/// per cycle, repeats × cycles per repeat over 1. Kept as a fraction so that work at one rate
/// adds up exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    pub resource: Resource,
    pub amount: u64,
    pub cycles: u64,
    pub exact: (u64, u64),
}

/// The cycles a move of `src` bytes read and `dst` written needs on `path` without rounding,
/// as a fraction: [`PathConfig::move_work`] before its ceilings (the slower side's bytes over
/// its rate).
fn move_exact(path: &PathConfig, src: u64, dst: u64, nz: bool) -> (u64, u64) {
    let write = path.write_rate(nz);
    match path.read_bytes_per_cycle {
        // src / read > dst / write
        Some(r) if src as u128 * write as u128 > dst as u128 * r.max(1) as u128 => {
            (src, r.max(1) as u64)
        }
        _ => (dst, write),
    }
}

/// The work of the instruction S issued for `op` on `pipe` with the loop variables `vars` (an
/// [`super::Issue`]'s): at most two items (the MTE1 part of an `mmad_l1` copies a and b on two
/// paths), none for an op that works no resource (flags, barriers, S's own ops).
///
/// The engine has evaluated the same expressions before issuing, so they evaluate here; should
/// one not, its operand counts as empty.
pub fn work_of(
    config: &Config,
    program: &Program,
    op: OpId,
    pipe: Pipe,
    vars: &[i64],
) -> [Option<Work>; 2] {
    let bases = Bases::of(program);
    let bytes = |o: &Operand| -> u64 {
        o.bytes().unwrap_or_else(|| {
            let n = footprint::count_at(o, bases.shape(o.base), vars).unwrap_or(0);
            o.dtype.bytes_for(n)
        })
    };
    let dim = |e: &crate::expr::Expr| e.eval(vars).map_or(0, |v| v.max(0) as u64);
    match &program.op(op).kind {
        OpKind::Load { src, dst, .. }
        | OpKind::Store { src, dst }
        | OpKind::Copy { src, dst }
        | OpKind::Fixpipe { src, dst, .. } => {
            let Some(path) = config.path(src.space, dst.space) else {
                return [None, None];
            };
            let nz = matches!(
                program.op(op).kind,
                OpKind::Load {
                    layout: Layout::Nz,
                    ..
                }
            );
            let (s, d) = (bytes(src), bytes(dst));
            [
                Some(Work {
                    resource: Resource::Path(src.space, dst.space),
                    amount: d,
                    cycles: path.move_work(s, d, nz),
                    exact: move_exact(path, s, d, nz),
                }),
                None,
            ]
        }
        OpKind::Vector(v) => {
            let repeat = config.vector.repeat_bytes.max(1) as u64;
            let cpr = config.vector_cost(v.op).cycles_per_repeat as u64;
            // `tmp` does not count
            let opnds = v.ins.iter().chain(v.outs.iter());
            let repeats = match config.vector.block_bytes {
                Some(block) => {
                    let block = block as u64;
                    let most = opnds
                        .map(|o| banks::blocks(o, bases.shape(o.base), vars, block).unwrap_or(0))
                        .max()
                        .unwrap_or(0);
                    banks::repeats(most, repeat / block)
                }
                None => opnds.map(bytes).max().unwrap_or(0).div_ceil(repeat),
            };
            [
                Some(Work {
                    resource: Resource::Vector,
                    amount: repeats,
                    cycles: repeats * cpr,
                    exact: (repeats * cpr, 1),
                }),
                None,
            ]
        }
        OpKind::Mmad(m) => [
            Some(macs(config, m, [dim(&m.m), dim(&m.n), dim(&m.k)])),
            None,
        ],
        OpKind::MmadL1(m) => {
            let dims = [dim(&m.m), dim(&m.n), dim(&m.k)];
            if pipe == Pipe::M {
                return [Some(macs(config, m, dims)), None];
            }
            let (Some(pa), Some(pb)) = (
                config.path(m.a.space, Space::L0a),
                config.path(m.b.space, Space::L0b),
            ) else {
                return [None, None];
            };
            let core = config.core(program.core);
            let half = |s: Space| core.scope(s).map_or(u64::MAX, |c| c.bytes / 2);
            let (_, _, kf) = cube_shape(config, m);
            let k = dims[2];
            let (a, b) = (bytes(&m.a), bytes(&m.b));
            let (chunks, per) = chunking(k, kf, (a, half(Space::L0a)), (b, half(Space::L0b)));
            let last = k - (chunks - 1) * per;
            // each chunk's copy is a move of its own, rounded as the engine rounds it
            let staged = |path: &PathConfig, resource: Resource, bytes: u64| -> Work {
                let (c, l) = (chunk_bytes(bytes, per, k), chunk_bytes(bytes, last, k));
                Work {
                    resource,
                    amount: bytes,
                    cycles: (chunks - 1) * path.move_work(c, c, false)
                        + path.move_work(l, l, false),
                    exact: move_exact(path, bytes, bytes, false),
                }
            };
            [
                Some(staged(pa, Resource::Path(m.a.space, Space::L0a), a)),
                Some(staged(pb, Resource::Path(m.b.space, Space::L0b), b)),
            ]
        }
        _ => [None, None],
    }
}

/// (fractal m, fractal n, k elements per fractal) of the cube for an mmad's a dtype, as the
/// engine's compiler derives them.
pub fn cube_shape(config: &Config, m: &Mmad) -> (u64, u64, u64) {
    let cube = &config.cube;
    let db = (m.a.dtype.bits() / 8).max(1);
    let kf = (cube.fractal_k_bytes as u64 / db).max(1);
    (
        cube.fractal_m.max(1) as u64,
        cube.fractal_n.max(1) as u64,
        kf,
    )
}

/// An mmad of `[m, n, k]`: m × n × k MACs in the engine's fractal steps.
fn macs(config: &Config, mm: &Mmad, [m, n, k]: [u64; 3]) -> Work {
    let (fm, fnn, kf) = cube_shape(config, mm);
    let amount = m.saturating_mul(n).saturating_mul(k);
    Work {
        resource: Resource::Cube,
        amount,
        cycles: mmad_work(m, n, k, fm, fnn, kf),
        exact: (amount, fm * fnn * kf),
    }
}
