//! Seeded instance generators (after the families in the MiniMalloc and idealloc evaluations), for tests and benchmarks. Three
//! families have a known optimum, which makes them oracles:
//! - [`pipeline`] (F2): S stages over K iterations, each stage's tile k live from iteration k to
//!   k + 2 (ping-pong): two slots per stage reach OPT = LB = 2 · Σ tile sizes;
//! - [`nested`] (F3): a loop nest whose lifetimes are laminar (any two disjoint or nested):
//!   OPT = LB;
//! - [`guillotine`] (F4): a T × C rectangle cut recursively in time or in space; the pieces
//!   tile it, so OPT = LB = C, and the cutting is the witness.
//!
//! [`random`] (F1) has no known optimum.

use super::{Instance, PackBuffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// An instance with what is known about its optimum.
#[derive(Clone, Debug)]
pub struct Generated {
    pub instance: Instance,
    /// The optimum height, when the construction proves it.
    pub optimum: Option<u64>,
    /// A placement reaching `optimum` (the construction's own), when there is one.
    pub witness: Option<Vec<u64>>,
}

/// F1: `n` buffers over a horizon of 4n; starts uniform, lengths log-uniform in [1, T/4],
/// sizes log-uniform in [64, 65536] rounded to 32.
pub fn random(n: usize, seed: u64) -> Generated {
    let mut rng = StdRng::seed_from_u64(seed);
    let horizon = (4 * n).max(4) as u64;
    let buffers = (0..n)
        .map(|i| {
            let lower = rng.gen_range(0..horizon);
            let len = log_uniform(&mut rng, 1, (horizon / 4).max(1));
            let size = (log_uniform(&mut rng, 64, 65536) / 32).max(1) * 32;
            PackBuffer::new(format!("r{i}"), lower, lower + len, size)
        })
        .collect();
    Generated {
        instance: Instance::new(buffers),
        optimum: None,
        witness: None,
    }
}

/// F2: `stages` stages over `iters` iterations, each stage's tile size one of 8/16/32 KiB.
/// Tile k of stage s is live over [k, k + 2): with two slots per stage (even k in slot 0, odd k
/// in slot 1) the height is 2 · Σ sizes, which every instant from 1 to iters - 1 needs.
pub fn pipeline(stages: usize, iters: usize, seed: u64) -> Generated {
    let mut rng = StdRng::seed_from_u64(seed);
    let sizes: Vec<u64> = (0..stages)
        .map(|_| [8192u64, 16384, 32768][rng.gen_range(0..3)])
        .collect();
    let mut buffers = Vec::new();
    let mut witness = Vec::new();
    let mut base = 0u64;
    for (s, &size) in sizes.iter().enumerate() {
        for k in 0..iters as u64 {
            buffers.push(PackBuffer::new(format!("s{s}k{k}"), k, k + 2, size));
            witness.push(base + (k % 2) * size);
        }
        base += 2 * size;
    }
    let optimum = if iters >= 2 { base } else { base / 2 };
    Generated {
        instance: Instance::new(buffers),
        optimum: Some(optimum),
        witness: Some(witness),
    }
}

/// F3: a loop nest of `depth` levels with trip counts in 2..=4: at each level an accumulator
/// live for the whole loop, and per iteration a temporary, nested inside. Laminar lifetimes:
/// placing each buffer on top of its ancestors reaches the bound at every instant.
pub fn nested(depth: usize, seed: u64) -> Generated {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut buffers = Vec::new();
    let mut witness = Vec::new();
    let mut t = 0u64;
    let mut best = 0u64;
    nest(
        &mut rng,
        depth,
        0,
        &mut t,
        &mut buffers,
        &mut witness,
        &mut best,
    );
    Generated {
        instance: Instance::new(buffers),
        optimum: Some(best),
        witness: Some(witness),
    }
}

fn nest(
    rng: &mut StdRng,
    depth: usize,
    base: u64,
    t: &mut u64,
    buffers: &mut Vec<PackBuffer>,
    witness: &mut Vec<u64>,
    best: &mut u64,
) {
    let start = *t;
    let acc = buffers.len();
    let acc_size = 32 * rng.gen_range(1..=64u64);
    buffers.push(PackBuffer::new(
        format!("acc{acc}"),
        start,
        start + 1,
        acc_size,
    ));
    witness.push(base);
    let inner = base + acc_size;
    *best = (*best).max(inner);
    let trips = rng.gen_range(2..=4);
    for _ in 0..trips {
        *t += 1;
        let tmp_size = 32 * rng.gen_range(1..=64u64);
        let from = *t;
        let tmp = buffers.len();
        buffers.push(PackBuffer::new(
            format!("tmp{tmp}"),
            from,
            from + 1,
            tmp_size,
        ));
        witness.push(inner);
        *best = (*best).max(inner + tmp_size);
        if depth > 1 {
            // the inner loop nests inside this iteration's temporary, on top of it
            nest(rng, depth - 1, inner + tmp_size, t, buffers, witness, best);
            buffers[tmp].upper = *t + 1;
        }
    }
    *t += 1;
    buffers[acc].upper = *t;
}

/// F4: cut the rectangle [0, 2^20) time × [0, capacity) bytes into `n` pieces, each cut at a
/// multiple of 1024 in time or in space (the larger side first when possible). The pieces are
/// the buffers; their positions are the witness, so OPT = LB = capacity.
pub fn guillotine(n: usize, capacity: u64, seed: u64) -> Generated {
    const GRAIN: u64 = 1024;
    let mut rng = StdRng::seed_from_u64(seed);
    // (t0, t1, b0, b1)
    let mut pieces: Vec<(u64, u64, u64, u64)> = vec![(0, 1 << 20, 0, capacity)];
    let mut guard = 0;
    while pieces.len() < n && guard < 100 * n + 100 {
        guard += 1;
        let i = rng.gen_range(0..pieces.len());
        let (t0, t1, b0, b1) = pieces[i];
        let cut_time = rng.gen_bool(0.5);
        let (lo, hi) = if cut_time { (t0, t1) } else { (b0, b1) };
        let cells = (hi - lo) / GRAIN;
        if cells < 2 {
            continue;
        }
        let at = lo + GRAIN * rng.gen_range(1..cells);
        let (a, b) = if cut_time {
            ((t0, at, b0, b1), (at, t1, b0, b1))
        } else {
            ((t0, t1, b0, at), (t0, t1, at, b1))
        };
        pieces[i] = a;
        pieces.push(b);
    }
    let buffers = pieces
        .iter()
        .enumerate()
        .map(|(i, &(t0, t1, b0, b1))| PackBuffer::new(format!("g{i}"), t0, t1, b1 - b0))
        .collect();
    let witness = pieces.iter().map(|p| p.2).collect();
    Generated {
        instance: Instance::new(buffers),
        optimum: Some(capacity),
        witness: Some(witness),
    }
}

fn log_uniform(rng: &mut StdRng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    (rng.gen_range(a..=b).exp().round() as u64).clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::bound::lower_bound;
    use crate::pack::validate;

    fn check(g: &Generated) {
        let opt = g.optimum.unwrap();
        let w = g.witness.as_ref().unwrap();
        assert_eq!(validate(&g.instance, w, Some(opt)), Ok(()));
        assert_eq!(
            lower_bound(&g.instance).bytes,
            opt,
            "OPT = LB by construction"
        );
    }

    #[test]
    fn the_witnesses_are_valid_and_reach_the_bound() {
        for seed in 0..20 {
            check(&pipeline(1 + seed as usize % 6, 2 + seed as usize, seed));
            check(&nested(1 + seed as usize % 4, seed));
            check(&guillotine(50 + seed as usize * 10, 1 << 20, seed));
        }
    }

    #[test]
    fn generators_are_deterministic() {
        assert_eq!(random(100, 7).instance, random(100, 7).instance);
        assert_ne!(random(100, 7).instance, random(100, 8).instance);
        assert_eq!(
            guillotine(300, 1 << 20, 3).instance,
            guillotine(300, 1 << 20, 3).instance
        );
    }
}
