//! Property tests of `if` guards and bounds (docs/decisions.md, "Guards"):
//!
//! - `guard::narrow` is sound (every value for which a branch runs stays in its narrowed
//!   ranges), exact when it says so (every value left satisfies the guard) and right when it
//!   says a branch never runs, checked by enumerating every value of small ranges;
//! - over random loops, guards and linear accesses, loading and running agree with an
//!   independent walk of the iterations: an access the loader refuses is out of bounds in an
//!   iteration that runs, and a program that loads runs clean exactly when no access that runs
//!   is out of bounds, and otherwise stops at the first one, naming its op and iteration. So no
//!   access the loader and the engine's compile accept without a run-time check goes out of
//!   bounds.

use proptest::prelude::*;
use sim::expr::Expr;
use sim::guard::{narrow, Guard};
use sim::VarId;

/// A guard over the loop variables `i` and `j`, as source text.
fn guard() -> impl Strategy<Value = String> {
    let coef = -3i64..=3;
    let konst = -12i64..=12;
    let op = prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]);
    let atom = prop_oneof![
        // linear comparisons, the kind the narrowing understands (several of them)
        4 => (coef.clone(), coef, konst.clone(), op, konst.clone())
            .prop_map(|(a, b, c, op, d)| format!("({a}) * i + ({b}) * j + ({c}) {op} ({d})")),
        // a bare linear value: true when not zero
        1 => (konst.clone()).prop_map(|c| format!("i - ({c})")),
        // what it does not understand
        1 => (2i64..5, 0i64..4).prop_map(|(k, r)| format!("i % {k} == {r}")),
        1 => (konst.clone(), konst.clone()).prop_map(|(c, d)| format!("min(i, {c}) < {d}")),
        1 => konst.prop_map(|c| format!("i * j < {c}")),
    ];
    atom.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) && ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) || ({b})")),
            inner.prop_map(|a| format!("!({a})")),
        ]
    })
}

/// Parses guard or index text with `i` and `j` as variables 0 and 1.
fn parse(src: &str) -> Expr {
    sim::expr::parse(src, &mut |name| match name {
        "i" => Some(Expr::Var(VarId::new(0))),
        "j" => Some(Expr::Var(VarId::new(1))),
        _ => None,
    })
    .unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn truth(e: &Expr, i: i64, j: i64) -> bool {
    e.eval(&[i, j]).unwrap() != 0
}

fn inside(r: Option<(i64, i64)>, v: i64) -> bool {
    r.is_some_and(|(lo, hi)| lo <= v && v <= hi)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn narrowing_keeps_every_value_the_branch_runs_for_and_only_those_when_exact(
        g in guard(),
        holds in any::<bool>(),
        (ilo, ilen, jlo, jlen) in (-6i64..6, 0i64..9, -6i64..6, 0i64..9),
    ) {
        let cond = parse(&g);
        let before = [Some((ilo, ilo + ilen)), Some((jlo, jlo + jlen))];
        let mut after = before;
        let verdict = narrow(&cond, holds, &mut after).guard;
        let points = || {
            (ilo..=ilo + ilen).flat_map(move |i| (jlo..=jlo + jlen).map(move |j| (i, j)))
        };
        let runs = |i, j| truth(&cond, i, j) == holds;
        if verdict == Guard::Never {
            prop_assert_eq!(after, before, "Never leaves the ranges");
            prop_assert!(points().all(|(i, j)| !runs(i, j)), "{} ({}) runs", g, holds);
            return Ok(());
        }
        for (i, j) in points() {
            if runs(i, j) {
                prop_assert!(
                    inside(after[0], i) && inside(after[1], j),
                    "{} ({}) runs at i={} j={}, outside {:?}", g, holds, i, j, after
                );
            }
        }
        if verdict == Guard::Exact {
            for (i, j) in points().filter(|&(i, j)| inside(after[0], i) && inside(after[1], j)) {
                prop_assert!(runs(i, j), "{} ({}) exact, but not at i={} j={}", g, holds, i, j);
            }
        }
    }
}

/// One access of the generated program: a load of `x[start : start + len]`.
#[derive(Clone, Debug)]
struct Access {
    start: String,
    /// Its YAML path as the loader and the engine name it.
    path: &'static str,
}

#[derive(Clone, Debug)]
struct Case {
    /// (from, trips, step) of the loops over i (outer) and j.
    i: (i64, i64, i64),
    j: (i64, i64, i64),
    /// The extent of x and the length of every slice.
    extent: i64,
    len: i64,
    outer: String,
    /// The guard of an `if` nested in the outer one's `then`, when there is one.
    inner: Option<String>,
    then: Access,
    els: Access,
    nested: Access,
}

const THEN: &str = "body[0].for.body[0].for.body[0].if.then[0]";
const ELSE: &str = "body[0].for.body[0].for.body[0].if.else[0]";
const NESTED: &str = "body[0].for.body[0].for.body[0].if.then[1].if.then[0]";

fn start() -> impl Strategy<Value = String> {
    // mostly small coefficients, so that accesses stay in bounds about as often as not
    let coef = || prop::sample::select(vec![-2i64, -1, 0, 0, 1, 1, 2]);
    (coef(), coef(), -2i64..=16).prop_map(|(p, q, r)| format!("({p}) * i + ({q}) * j + ({r})"))
}

fn case() -> impl Strategy<Value = Case> {
    let lp = (-2i64..4, 1i64..7, 1i64..4);
    (
        (lp.clone(), lp, 16i64..40, 1i64..5),
        (guard(), prop::option::of(guard())),
        (start(), start(), start()),
    )
        .prop_map(|((i, j, extent, len), (outer, inner), (a, b, c))| Case {
            i,
            j,
            extent,
            len,
            outer,
            inner,
            then: Access {
                start: a,
                path: THEN,
            },
            els: Access {
                start: b,
                path: ELSE,
            },
            nested: Access {
                start: c,
                path: NESTED,
            },
        })
}

fn render(c: &Case) -> String {
    let load = |a: &Access| {
        format!(
            "load: {{ src: \"x[{s} : {s} + {len}]\", dst: a }}",
            s = a.start,
            len = c.len
        )
    };
    let lp = |v: &str, (from, trips, step): (i64, i64, i64)| {
        format!(
            "for: {{ var: {v}, from: {from}, to: {}, step: {step} }}",
            from + trips * step
        )
    };
    let mut s = format!(
        "kernel: guards\ncore: aiv\nsync: manual\ngm: {{ x: {{ shape: [{}], dtype: f16 }} }}\n\
         buffers: {{ a: {{ scope: ub, shape: [{}], dtype: f16 }} }}\nbody:\n",
        c.extent, c.len
    );
    s += &format!("  - {}\n    body:\n", lp("i", c.i));
    s += &format!("      - {}\n        body:\n", lp("j", c.j));
    s += &format!("          - if: \"{}\"\n            then:\n", c.outer);
    s += &format!("              - {}\n", load(&c.then));
    if let Some(g) = &c.inner {
        s += &format!("              - if: \"{g}\"\n                then:\n");
        s += &format!("                  - {}\n", load(&c.nested));
    }
    s += &format!("            else:\n              - {}\n", load(&c.els));
    s
}

/// The accesses that run, in the order they run: (access, i, j, in bounds).
fn walk(c: &Case) -> Vec<(&Access, i64, i64, bool)> {
    let (outer, inner) = (parse(&c.outer), c.inner.as_deref().map(parse));
    let ok = |a: &Access, i, j| {
        let s = parse(&a.start).eval(&[i, j]).unwrap();
        s >= 0 && s + c.len <= c.extent
    };
    let mut out = Vec::new();
    let values = |(from, trips, step): (i64, i64, i64)| (0..trips).map(move |k| from + k * step);
    for i in values(c.i) {
        for j in values(c.j) {
            if truth(&outer, i, j) {
                out.push((&c.then, i, j, ok(&c.then, i, j)));
                if inner.as_ref().is_some_and(|g| truth(g, i, j)) {
                    out.push((&c.nested, i, j, ok(&c.nested, i, j)));
                }
            } else {
                out.push((&c.els, i, j, ok(&c.els, i, j)));
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn what_loads_without_a_check_stays_in_bounds_and_what_is_refused_goes_out(c in case()) {
        let config = sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "ascend910b")
            .unwrap();
        let yaml = render(&c);
        let runs = walk(&c);
        let out_of_bounds = |path: &str| runs.iter().any(|(a, _, _, ok)| a.path == path && !ok);
        match sim::load_program(&yaml, "guards.yaml", &config, &[]) {
            Err(e) => {
                // refused: each problem is an access out of bounds in an iteration that runs
                for d in &e.diagnostics {
                    let op = d.path.strip_suffix(".load.src").unwrap_or(&d.path);
                    prop_assert!(
                        d.message.contains("out of bounds") && out_of_bounds(op),
                        "refused {}: {}\n{}", d.path, d.message, yaml
                    );
                }
            }
            Ok(program) => match (sim::run(&program, &config), runs.iter().find(|r| !r.3)) {
                (Ok(_), None) => {}
                (Ok(_), Some((a, i, j, _))) => prop_assert!(
                    false, "{} ran out of bounds at i={} j={} unchecked\n{}", a.path, i, j, yaml
                ),
                (Err(e), None) => prop_assert!(false, "a run error in bounds: {}\n{}", e, yaml),
                (Err(e), Some((a, i, j, _))) => {
                    prop_assert_eq!(e.path.as_str(), a.path, "{}\n{}", e, yaml);
                    prop_assert_eq!(&e.iteration, &format!(", i={i}, j={j}"), "{}", yaml);
                    prop_assert!(e.message.contains("out of bounds"), "{}", e);
                }
            },
        }
    }
}
