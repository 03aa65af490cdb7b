//! `npusim pack` as a user meets it: MiniMalloc CSV in, CSV with offsets out (validated by the
//! independent validator here too), the summary on stderr, exit codes.

use crate::{npusim, stderr, stdout};
use planner::pack::{csv, validate};

const DATA: &str = "planner/tests/data/minimalloc";

fn placed(out: &str, capacity: u64) {
    let (inst, _) = csv::parse(out).unwrap_or_else(|e| panic!("{e:?}\n{out}"));
    let offsets: Vec<u64> = inst.buffers.iter().map(|b| b.fixed.unwrap()).collect();
    assert_eq!(validate(&inst, &offsets, Some(capacity)), Ok(()));
}

#[test]
fn fast_mode_places_the_readme_example() {
    let o = npusim(&[
        "pack",
        &format!("{DATA}/examples/input.12.csv"),
        "--capacity",
        "12",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("id,lower,upper,size,offset\n"), "{out}");
    placed(&out, 12);
    let err = stderr(&o);
    assert!(
        err.contains("instance    planner/tests/data/minimalloc/examples/input.12.csv (5 buffers)"),
        "{err}"
    );
    assert!(err.contains("lower bound 12 (max live bytes"), "{err}");
    assert!(
        err.contains("height      12 (1.0000 × lower bound)"),
        "{err}"
    );
    assert!(err.contains("capacity    12: fits"), "{err}");
}

#[test]
fn exact_mode_proves_tricky_infeasible_at_4_and_places_it_at_5() {
    let f = format!("{DATA}/derived/tricky.5.csv");
    let o = npusim(&["pack", &f, "--capacity", "4", "--mode", "exact"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("capacity    4: does not fit (proven: no placement exists)"),
        "{}",
        stderr(&o)
    );
    let o = npusim(&["pack", &f, "--capacity", "5", "--mode", "exact"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    placed(&stdout(&o), 5);
    let o = npusim(&[
        "pack",
        &f,
        "--capacity",
        "100",
        "--mode",
        "exact",
        "--minimize",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("height      5 (1.2500 × lower bound)"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("fits (height proven minimal)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exact_mode_places_a_challenging_instance_at_the_published_capacity() {
    let f = format!("{DATA}/challenging/K.1048576.csv");
    let dir = crate::scratch("pack");
    let target = dir.join("K.csv");
    let t = target.to_string_lossy().into_owned();
    let o = npusim(&[
        "pack",
        &f,
        "--capacity",
        "1MiB",
        "--mode",
        "exact",
        "-o",
        &t,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "the CSV goes to the file");
    placed(&std::fs::read_to_string(&target).unwrap(), 1 << 20);
    // fast mode cannot reach it: exit 1, and the (taller) placement is still written whole
    let o = npusim(&["pack", &f, "--capacity", "1048576"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("fast mode found no placement that fits (try --mode exact)"));
    let (inst, _) = csv::parse(&stdout(&o)).unwrap();
    let offsets: Vec<u64> = inst.buffers.iter().map(|b| b.fixed.unwrap()).collect();
    assert_eq!(validate(&inst, &offsets, None), Ok(()));
}

#[test]
fn malformed_csv_is_bad_input_with_line_numbers() {
    let dir = crate::scratch("pack-bad");
    let f = dir.join("bad.csv");
    std::fs::write(&f, "id,lower,upper,size\na,0,3,4\nb,5,2,4\nc,0,x,4\n").unwrap();
    let o = npusim(&["pack", &f.to_string_lossy(), "--capacity", "8"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bad.csv:3: buffer `b`: upper 2 is not after lower 5"),
        "{err}"
    );
    assert!(
        err.contains("bad.csv:4: upper `x` is not a non-negative integer"),
        "{err}"
    );
    assert!(err.contains("2 problems"), "{err}");
    assert!(o.stdout.is_empty());

    std::fs::write(&f, "id,lower,upper,size,offset\na,0,3,4,6\n").unwrap();
    let o = npusim(&["pack", &f.to_string_lossy(), "--capacity", "8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("buffer `a` is fixed at 6, but its 4 bytes end past the capacity 8")
    );
    let o = npusim(&["pack", &f.to_string_lossy(), "--capacity", "8KB"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn fixed_offsets_and_alignment_survive_the_round_trip() {
    let dir = crate::scratch("pack-fixed");
    let f = dir.join("fixed.csv");
    std::fs::write(
        &f,
        "id,lower,upper,size,alignment,offset\na,0,10,32,32,64\nb,0,10,40,32,-1\nc,5,20,16,16,-1\n",
    )
    .unwrap();
    for mode in ["fast", "exact"] {
        let o = npusim(&[
            "pack",
            &f.to_string_lossy(),
            "--capacity",
            "256",
            "--mode",
            mode,
        ]);
        assert_eq!(o.status.code(), Some(0), "{mode}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.starts_with("id,lower,upper,size,alignment,offset\na,0,10,32,32,64\n"),
            "{out}"
        );
        placed(&out, 256);
    }
}
