//! [`crate::engine::work_of`]: the work an observer counts per instruction needs exactly the
//! busy cycles the engine charged it, where the engine charges nothing else (no banks, no
//! memory system), and its amounts are the ones derived by hand.

use super::*;
use std::collections::BTreeMap;

/// Per instruction: the cycles [`work_of`] says its work needs, the amounts per resource, and
/// the `Work` span cycles the engine charged it.
#[derive(Default)]
struct Counted<'a> {
    config: Option<&'a Config>,
    program: Option<&'a Program>,
    needs: BTreeMap<u64, u64>,
    amounts: BTreeMap<Resource, u64>,
    ideal: BTreeMap<Resource, f64>,
    charged: BTreeMap<u64, u64>,
}

impl Observer for Counted<'_> {
    fn on_issue(&mut self, i: &Issue<'_>) {
        let (config, program) = (self.config.unwrap(), self.program.unwrap());
        for w in work_of(config, program, i.op, i.pipe, i.vars)
            .into_iter()
            .flatten()
        {
            // the rounding only adds: less than a cycle per move, chunk or fractal dimension
            let (n, d) = w.exact;
            assert!(n <= w.cycles * d, "{w:?}");
            *self.needs.entry(i.seq).or_default() += w.cycles;
            *self.amounts.entry(w.resource).or_default() += w.amount;
            *self.ideal.entry(w.resource).or_default() += n as f64 / d as f64;
        }
    }

    fn on_span(&mut self, s: &Span) {
        if s.what == Activity::Work && s.to > s.from {
            *self.charged.entry(s.seq.unwrap()).or_default() += s.to - s.from;
        }
    }
}

fn count<'a>(p: &'a Program, config: &'a Config) -> (Counted<'a>, RunResult) {
    let mut c = Counted {
        config: Some(config),
        program: Some(p),
        ..Counted::default()
    };
    let r = run_observed(p, config, &mut c).expect("runs");
    (c, r)
}

#[test]
fn work_needs_the_cycles_the_engine_charged() {
    // four iterations of: load row t of x (512 f16 = 1024 B) into xb, vexp and vadd on it, an
    // mmad_l1 of m 16, n 16 and k = 32 (t + 1), and store xb back; on a core whose L0A holds
    // 2 KiB, so a and b are staged in chunks.
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(4, 512, 1);
    let mut m = b.mmad(16, 16, 128);
    let t1 = Expr::Binary(BinOp::Add, Box::new(Expr::Var(t)), Box::new(Expr::Const(1)));
    m.k = Expr::Binary(BinOp::Mul, Box::new(Expr::Const(32)), Box::new(t1));
    let ops = vec![for_(
        t,
        4,
        vec![
            load(b.row(x, Expr::Var(t)), b.b(xb)),
            set(Pipe::Mte2, Pipe::V, 0),
            wait(Pipe::Mte2, Pipe::V, 0),
            vop(VecOp::Vexp, vec![b.b(xb)], b.b(xb)),
            vop(VecOp::Vadd, vec![b.b(xb), b.b(xb)], b.b(xb)),
            mmad_l1(m),
            set(Pipe::V, Pipe::Mte3, 0),
            wait(Pipe::V, Pipe::Mte3, 0),
            store(b.b(xb), b.row(x, Expr::Var(t))),
        ],
    )];
    let p = b.build(ops);
    let mut config = config();
    for s in &mut config.cores[0].scopes {
        if s.space == Space::L0a {
            s.bytes = 2048;
        }
    }
    let (c, r) = count(&p, &config);
    assert_eq!(c.needs, c.charged);
    // every instruction with work is counted: the loads, vector ops, both parts of the
    // mmad_l1s and the stores, 4 × 6
    assert_eq!(c.needs.len(), 24);
    // a and b are whole buffers of 16 × 128 f16 = 4096 B each, whatever k is; a's half of
    // L0A, 1024 B, fits k / 4 of it, whole fractals of 16 (at least one): k 32 -> 2 chunks of
    // 16 (2048 B), k 64 -> 4 of 16 (1024 B), k 96 -> 6 of 16 (4096 × 16 / 96 = 683 B rounded
    // up), k 128 -> 4 of 32 (1024 B). Each chunk copies its share of a at 128 B/cycle and of b
    // at 64: 2 × (16 + 32) + 4 × (8 + 16) + 6 × (6 + 11) + 4 × (8 + 16) = 96 + 96 + 102 + 96.
    let core = &r.cores[0];
    assert_eq!(core.pipe(Pipe::Mte1).unwrap().busy, 390);
    let amount = |r: Resource| c.amounts.get(&r).copied().unwrap_or(0);
    // 16 × 16 × 32 × (1 + 2 + 3 + 4) MACs
    assert_eq!(amount(Resource::Cube), 16 * 16 * 32 * 10);
    // 4 × (vexp 4 + vadd 4) repeats of 256 B over 1024 B
    assert_eq!(amount(Resource::Vector), 32);
    assert_eq!(amount(Resource::Path(Space::Gm, Space::Ub)), 4 * 1024);
    assert_eq!(amount(Resource::Path(Space::Ub, Space::Gm)), 4 * 1024);
    assert_eq!(amount(Resource::Path(Space::L1, Space::L0a)), 4 * 4096);
    assert_eq!(amount(Resource::Path(Space::L1, Space::L0b)), 4 * 4096);
    // without the rounding: 16 × 16 × 16 MACs a cycle, 128 B a cycle to L0A, 64 to L0B and UB
    assert_eq!(
        c.ideal[&Resource::Cube],
        (16 * 16 * 32 * 10) as f64 / 4096.0
    );
    assert_eq!(c.ideal[&Resource::Path(Space::L1, Space::L0a)], 128.0);
    assert_eq!(c.ideal[&Resource::Path(Space::L1, Space::L0b)], 256.0);
    assert_eq!(c.ideal[&Resource::Path(Space::Gm, Space::Ub)], 64.0);
}

#[test]
fn banked_vector_work_is_the_busy_cycles_without_the_conflicts() {
    // with blocks and UB banks, a vector op's busy cycles are its repeats × cycles_per_repeat
    // plus the conflicts the run counts apart
    let mut config = config();
    config.vector.block_bytes = Some(32);
    config.vector.ub_banks = Some(crate::config::UbBanks {
        groups: 16,
        bank_bytes: 32,
        row_bytes: 32,
    });
    let mut b = B::new();
    let xb = b.buffer("xb", Space::Ub, 512, Dtype::F16, 1);
    let yb = b.buffer("yb", Space::Ub, 512, Dtype::F16, 1);
    // both at 0: every input block shares its group with the other input's
    b.p.buffers[xb.index()].at = Some(vec![0]);
    b.p.buffers[yb.index()].at = Some(vec![0]);
    let add = vop(VecOp::Vadd, vec![b.b(xb), b.b(yb)], b.b(xb));
    let p = b.build(vec![add]);
    let (c, r) = count(&p, &config);
    // 1024 B = 32 blocks, 8 a repeat: 4 repeats of 1 cycle
    assert_eq!(c.amounts[&Resource::Vector], 4);
    // repeat i reads blocks 8i..8i+7 of xb and of yb, both at groups 0..7: 2 input blocks a
    // group, and xb's banks are read and written: max(1, 2, 1) + 1 = 3 cycles a repeat, 8
    // above the 4 × 1 the work needs
    let core = &r.cores[0];
    assert_eq!(core.bank_conflict_cycles, Some(8));
    assert_eq!(core.pipe(Pipe::V).unwrap().busy, 4 + 8);
}
