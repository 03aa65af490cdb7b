//! Property tests over inputs nobody wrote by hand: the shipped programs and fixtures, mutated
//! at random (numbers swapped for extreme values, lines deleted, duplicated or swapped, names
//! exchanged, characters inserted). Whatever the text, loading answers with a program or with
//! diagnostics, and a program that loads plans, synchronises and runs (within small limits)
//! to a result or a failure value: never a panic. Every run that completes accounts for every
//! cycle of every pipe (the pipeline checks it), and the race checker never changes a run.

use crate::{config, root};
use proptest::prelude::*;
use sim::engine::Limits;

/// The texts mutations start from: every shipped program and program fixture of the default
/// config.
fn seeds() -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["programs", "tests/fixtures", "sim/tests/fixtures/race"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.extension().is_some_and(|x| x == "yaml") && name != "test_config.yaml" {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 12, "the seed programs are in the repository");
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

/// Values that find edges: zero, signs, powers of two around the integer widths, the limits.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "255",
    "256",
    "65536",
    "2147483647",
    "2147483648",
    "4294967296",
    "1099511627776",
    "281474976710656",
    "4611686018427387904",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "1e9",
    "0.5",
    "n / 0",
    "t % 0",
    "-t",
    "\"\"",
    "[]",
    "{}",
    "null",
    "true",
];

/// One edit of the text; positions and choices are taken modulo what the text offers.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the k-th number with an extreme value.
    Number(usize, usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Replace the k-th name with the j-th name of the text.
    Rename(usize, usize),
    /// Insert a character at a byte position.
    Insert(usize, char),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..EXTREMES.len()).prop_map(|(k, v)| Edit::Number(k, v)),
        1 => any::<usize>().prop_map(Edit::DeleteLine),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Rename(a, b)),
        1 => (any::<usize>(), prop::sample::select(vec![
            '{', '}', '[', ']', ':', ',', '-', '#', '"', '\'', '&', '*', '!', '@', '%', '\t', '\n',
            ' ', 'x', '0', '9', 'é',
        ]))
            .prop_map(|(a, c)| Edit::Insert(a, c)),
    ]
}

/// Byte ranges of maximal runs matching `f` (ASCII classes only, so ranges are char-aligned).
fn runs(text: &str, f: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if f(b[i]) {
            let s = i;
            while i < b.len() && f(b[i]) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn apply(text: &str, e: &Edit) -> String {
    let mut lines: Vec<&str> = text.split('\n').collect();
    let n = lines.len().max(1);
    match *e {
        Edit::Number(k, v) => {
            let nums = runs(text, |c| c.is_ascii_digit());
            if nums.is_empty() {
                return text.to_string();
            }
            let (s, t) = nums[k % nums.len()];
            format!("{}{}{}", &text[..s], EXTREMES[v], &text[t..])
        }
        Edit::DeleteLine(k) => {
            lines.remove(k % n);
            lines.join("\n")
        }
        Edit::DuplicateLine(k) => {
            let l = lines[k % n];
            lines.insert(k % n, l);
            lines.join("\n")
        }
        Edit::SwapLines(a, b) => {
            lines.swap(a % n, b % n);
            lines.join("\n")
        }
        Edit::Rename(a, b) => {
            let names = runs(text, |c| c.is_ascii_alphabetic() || c == b'_');
            if names.is_empty() {
                return text.to_string();
            }
            let (s, t) = names[a % names.len()];
            let (u, w) = names[b % names.len()];
            format!("{}{}{}", &text[..s], &text[u..w], &text[t..])
        }
        Edit::Insert(a, c) => {
            let mut at = a % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            format!("{}{c}{}", &text[..at], &text[at..])
        }
    }
}

/// Small limits: a mutated loop bound may ask for 10^18 iterations.
fn opts(race_check: bool) -> pipeline::Options {
    pipeline::Options {
        race_check,
        validate: true,
        limits: Limits {
            max_cycles: 50_000_000,
            // a mutation that breaks a launch's cross-core order leaves the race checker
            // comparing every access with every other core's unpruned records (docs/race.md,
            // "Cost"): keep such runs short
            max_instructions: 40_000,
            ..Limits::default()
        },
        ..Default::default()
    }
}

/// Loads `text` and, when it loads, plans it at every level and runs it with and without the
/// race checker; returns whether it loaded. Panics only on a property violation (a panic
/// inside npusim fails the test the same way).
fn exercise(text: &str) -> bool {
    let config = config();
    let Ok(kernel) = sim::load_kernel(text, "mutated.yaml", &config, &[], None) else {
        return false; // diagnostics: a fine answer
    };
    for level in [2, 1, 0] {
        let mut o = opts(true);
        o.plan.max_level = level;
        let checked = pipeline::simulate_kernel(&kernel, &config, &o);
        if let Err(f) = &checked {
            assert!(!f.is_internal(), "an npusim bug: {f}\n{text}");
            continue;
        }
        let mut o = opts(false);
        o.plan.max_level = level;
        let plain = pipeline::simulate_kernel(&kernel, &config, &o).expect("ran with the checker");
        let checked = checked.unwrap();
        assert_eq!(
            checked.result, plain.result,
            "the race checker changed the run\n{text}"
        );
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_programs_never_panic_and_race_checking_never_changes_a_run(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed.index(seeds.len())].clone();
        for e in &edits {
            text = apply(&text, e);
        }
        exercise(&text);
    }
}

#[test]
fn every_seed_program_runs_the_same_with_and_without_the_race_checker() {
    let loaded = seeds().iter().filter(|t| exercise(t)).count();
    // every seed but the fixture made of load errors
    assert_eq!(loaded, seeds().len() - 1);
}

/// The property test is not vacuous: a fixed sequence of single edits gives programs that
/// load (and so plan and run) a good part of the time, not just diagnostics.
#[test]
fn single_edits_often_leave_a_program_that_runs() {
    let seeds = seeds();
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s as usize
    };
    let mut loaded = 0;
    let total = 200;
    for _ in 0..total {
        let text = &seeds[next() % seeds.len()];
        let e = match next() % 3 {
            0 => Edit::Number(next(), next() % EXTREMES.len()),
            1 => Edit::Rename(next(), next()),
            _ => Edit::DuplicateLine(next()),
        };
        loaded += exercise(&apply(text, &e)) as usize;
    }
    assert!(
        loaded * 5 >= total,
        "only {loaded} of {total} edited programs loaded"
    );
}
