//! Run-time errors, named by op and iteration, and the bounds checks the compiler leaves out
//! only where they cannot fail (over loop ranges and the ranges an `if` guard narrows).

use super::*;

#[test]
fn runtime_errors_name_op_and_iteration() {
    // index t+1 of a 3-row tensor: out of bounds at t = 2
    let (mut b, t) = B::with_t();
    let (x, xb) = b.x_and_xb(3, 64, 1);
    let i = Expr::binary(BinOp::Add, Expr::Var(t), Expr::Const(1)).unwrap();
    let ops = vec![for_(t, 3, vec![load(b.row(x, i), b.b(xb))])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert_eq!(e.path, "body[0].for.body[0]");
    assert_eq!(e.iteration, ", t=2");
    assert!(e.message.contains("index 3 out of bounds"), "{}", e.message);
    // t=0 sends at 2, t=1 at 5, t=2 reaches the load at 8
    assert_eq!(e.cycle, 8);

    // a flag id computed out of range
    let (b, t) = B::with_t();
    let id = Expr::binary(BinOp::Mul, Expr::Var(t), Expr::Const(4)).unwrap();
    let ops = vec![for_(
        t,
        2,
        vec![T::Leaf(OpKind::SetFlag {
            src: Pipe::V,
            dst: Pipe::Mte2,
            id,
        })],
    )];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(e.message.contains("flag id 4"), "{}", e.message);
    assert_eq!(e.iteration, ", t=1");

    // a negative trip count
    let (b, t) = B::with_t();
    let ops = vec![for_(t, -2, vec![scalar(1)])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(
        e.message.contains("negative trip count -2"),
        "{}",
        e.message
    );

    // division by zero in an expression
    let (b, t) = B::with_t();
    let c = Expr::Binary(BinOp::Div, Box::new(Expr::Const(4)), Box::new(Expr::Var(t)));
    let ops = vec![for_(t, 1, vec![T::Leaf(OpKind::Scalar { cycles: c })])];
    let e = run(&b.build(ops), &config()).unwrap_err();
    assert!(e.message.contains("division by zero"), "{}", e.message);
    assert_eq!(
        e.to_string(),
        format!("body[0].for.body[0]: {} (cycle 2, t=0)", e.message)
    );
}

#[test]
fn bounds_checks_are_left_out_only_where_they_cannot_fail() {
    use super::compile::compile;
    let big = Expr::Const(1 << 62);
    let (mut b, t) = B::with_t();
    let u = b.var("u");
    let (x, xb) = b.x_and_xb(4, 64, 1);
    let t1 = Expr::binary(BinOp::Add, Expr::Var(t), Expr::Const(1)).unwrap();
    // t × 2^62 − t × 2^62: 0 as a linear form, but it overflows at t = 2
    let tb = Expr::binary(BinOp::Mul, Expr::Var(t), big).unwrap();
    let zero = Expr::binary(BinOp::Sub, tb.clone(), tb).unwrap();
    let ops = vec![
        // x[u] before u's loop: u's range is not known there
        load(b.row(x, Expr::Var(u)), b.b(xb)),
        for_(
            t,
            3,
            vec![
                load(b.row(x, Expr::Var(t)), b.b(xb)),
                load(b.row(x, t1.clone()), b.b(xb)),
                T::For {
                    var: u,
                    from: 0,
                    to: t1,
                    body: vec![load(b.row(x, Expr::Var(u)), b.b(xb))],
                },
                load(b.row(x, zero), b.b(xb)),
            ],
        ),
    ];
    let p = b.build(ops);
    let c = compile(&p, &config(), &crate::Addresses::default())
        .ok()
        .unwrap();
    // the gm sources of the five loads, in order: x[u] outside, x[t] (t in 0..=2), x[t + 1]
    // (1..=3 of 4 rows), x[u] (u in 0..=2), the overflowing zero
    let checks: Vec<bool> = c.opnds.iter().step_by(2).map(|o| o.check).collect();
    assert_eq!(checks, [true, false, false, false, true]);
    // the one left in still fails where it must
    let e = run(&p, &config()).unwrap_err();
    assert!(e.message.contains("overflow"), "{}", e.message);
    assert_eq!(e.iteration, ", t=2");
}

#[test]
fn a_guard_proves_the_checks_of_its_branch() {
    use super::compile::compile;
    // for t < 4: if GUARD: load x[t + 1]; else: load x[t - 1] (x has 4 rows); t is variable 0
    let t = Expr::Var(VarId::new(0));
    let build = |guard: &Expr| {
        let mut b = B::new();
        let t = Expr::Var(b.var("t"));
        let (x, xb) = b.x_and_xb(4, 64, 1);
        let next = Expr::binary(BinOp::Add, t.clone(), Expr::Const(1)).unwrap();
        let prev = Expr::binary(BinOp::Sub, t.clone(), Expr::Const(1)).unwrap();
        let Expr::Var(v) = t else { unreachable!() };
        let ops = vec![for_(
            v,
            4,
            vec![T::If {
                cond: guard.clone(),
                then: vec![load(b.row(x, next), b.b(xb))],
                els: Some(vec![load(b.row(x, prev), b.b(xb))]),
            }],
        )];
        b.build(ops)
    };
    let checks = |p: &Program| -> Vec<bool> {
        let c = compile(p, &config(), &crate::Addresses::default())
            .ok()
            .unwrap();
        c.opnds.iter().step_by(2).map(|o| o.check).collect()
    };
    // t < 3: then t + 1 <= 3, else t = 3 and t - 1 = 2: both proven, and both run
    let p = build(&Expr::binary(BinOp::Lt, t.clone(), Expr::Const(3)).unwrap());
    assert_eq!(checks(&p), [false, false]);
    ok(&p);
    // t % 2 == 1 is not understood: both loads keep their checks
    let odd = Expr::binary(
        BinOp::Eq,
        Expr::binary(BinOp::Rem, t.clone(), Expr::Const(2)).unwrap(),
        Expr::Const(1),
    )
    .unwrap();
    let p = build(&odd);
    assert_eq!(checks(&p), [true, true]);
    // t = 0 is even: the else loads x[-1]
    let e = run(&p, &config()).unwrap_err();
    assert!(
        e.message.contains("index -1 out of bounds"),
        "{}",
        e.message
    );
    assert_eq!(
        (e.path.as_str(), e.iteration.as_str()),
        ("body[0].for.body[0].else[0]", ", t=0")
    );
}
