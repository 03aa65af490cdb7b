//! What an [`crate::engine::Observer`] sees: every instruction in time order, and each of
//! composed observers every call in order.

use super::*;

#[test]
fn observer_sees_every_instruction_in_time_order() {
    // The flag chain plus an mmad_l1: every started instruction is issued once and started
    // once, flag ids are reported, and the event cycles never go backwards.
    let mut b = B::new();
    let (x, xb) = b.x_and_xb(1, 512, 1);
    let m = b.mmad(16, 16, 16);
    let ops = vec![
        load(b.row(x, Expr::Const(0)), b.b(xb)),
        set(Pipe::Mte2, Pipe::V, 3),
        wait(Pipe::Mte2, Pipe::V, 3),
        vop(VecOp::Vexp, vec![b.b(xb)], b.b(xb)),
        mmad_l1(m),
        scalar(3),
    ];
    let p = b.build(ops);
    #[derive(Default)]
    struct Rec {
        last: u64,
        issued: Vec<(u64, Pipe, Option<u32>, usize)>,
        started: Vec<u64>,
    }
    impl Observer for Rec {
        fn on_issue(&mut self, i: &Issue<'_>) {
            assert!(i.cycle >= self.last);
            self.last = i.cycle;
            self.issued.push((i.seq, i.pipe, i.flag_id, i.slots.len()));
        }
        fn on_start(&mut self, seq: u64, start: u64, complete: u64) {
            assert!(start >= self.last && complete >= start);
            self.last = start;
            self.started.push(seq);
        }
    }
    let mut rec = Rec::default();
    let r = run_observed(&p, &config(), &mut rec).unwrap();
    let pipes: Vec<_> = rec.issued.iter().map(|i| (i.1, i.2, i.3)).collect();
    assert_eq!(
        pipes,
        vec![
            (Pipe::Mte2, None, 2),
            (Pipe::Mte2, Some(3), 0),
            (Pipe::V, Some(3), 0),
            (Pipe::V, None, 2),
            (Pipe::Mte1, None, 3),
            (Pipe::M, None, 3),
            (Pipe::S, None, 0),
        ]
    );
    let mut started = rec.started.clone();
    started.sort();
    assert_eq!(started, (0..7).collect::<Vec<u64>>());
    assert_eq!(r.cores[0].instructions(), 7);
}

#[test]
fn composed_observers_each_see_every_call_in_order() {
    // (&mut A, (&mut B, ())): each part sees exactly the calls a lone observer sees, in the
    // same order, and watching does not change the run.
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(4, 512, 2);
    let ops = vec![for_(
        t,
        4,
        vec![
            load(b.row(x, Expr::Var(t)), b.b(xb)),
            set(Pipe::Mte2, Pipe::V, 0),
            wait(Pipe::Mte2, Pipe::V, 0),
            vop(VecOp::Vexp, vec![b.b(xb)], b.b(xb)),
        ],
    )];
    let p = b.build(ops);
    #[derive(Default)]
    struct Log(Vec<(char, u64, u64)>);
    impl Observer for Log {
        fn on_issue(&mut self, i: &Issue<'_>) {
            self.0.push(('i', i.seq, i.cycle));
        }
        fn on_start(&mut self, seq: u64, start: u64, _: u64) {
            self.0.push(('s', seq, start));
        }
    }
    let alone = {
        let mut a = Log::default();
        let r = run_observed(&p, &config(), &mut a).unwrap();
        (r, a.0)
    };
    let (mut a, mut b2) = (Log::default(), Log::default());
    let mut pair = (&mut a, (&mut b2, ()));
    let r = run_observed(&p, &config(), &mut pair).unwrap();
    assert_eq!(r, alone.0);
    assert_eq!(a.0, alone.1);
    assert_eq!(b2.0, alone.1);
    assert_eq!(a.0.len(), 2 * 16);
}
