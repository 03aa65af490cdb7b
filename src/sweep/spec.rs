//! The sweep file (docs/cli.md, "The sweep file") and the grid of points it spans.
//!
//! The file lists values per axis; the grid is their product in the order programs × configs
//! × params (keys in file order) × levels × capacities × blocks × l2, the last varying
//! fastest. A value that does not apply to a program (a param it does not declare, a capacity
//! for a scope none of its cores has) is dropped for that program, and the points that become
//! the same are one point: the grid holds each distinct effective input once. Points are
//! decoded from their index on demand (mixed radix within each program × config pair), so a
//! grid of millions of points takes no memory.

use crate::cli::L2Arg;
use sim::load::reader::{index, join, show, suggest, Reader};
use sim::yaml::{Node, Value};
use sim::Space;

/// The keys of a sweep file, in grid order.
pub const KEYS: [&str; 7] = [
    "programs",
    "configs",
    "params",
    "levels",
    "capacities",
    "blocks",
    "l2",
];

/// The most points a sweep may have: far beyond what any machine runs, and small enough that
/// every count and index fits everywhere it goes.
pub const MAX_POINTS: u64 = 1 << 40;

/// A sweep file's axes, as written (values checked; program and config names not resolved).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepFile {
    pub programs: Vec<String>,
    /// `[ascend910b]` (the default config) when the file has no `configs`.
    pub configs: Vec<String>,
    pub params: Vec<(String, Vec<i64>)>,
    /// `[2]` when the file has no `levels`.
    pub levels: Vec<u8>,
    /// Each set sorted by scope; `[{}]` when the file has no `capacities`.
    pub capacities: Vec<Vec<(Space, u64)>>,
    /// `[None]` when the file has no `blocks`: each program's own launch.
    pub blocks: Vec<Option<u32>>,
    /// `[cold]` when the file has no `l2`.
    pub l2: Vec<L2Arg>,
}

/// Reads a sweep file's document, every problem reported into `r`. What could be read is
/// returned even then (a bad value left out), so that the programs and configs it names are
/// still checked; `None` only when the document is not a mapping.
pub fn read(r: &mut Reader, root: &Node) -> Option<SweepFile> {
    let f = r.map(root, "", "a sweep file", &["programs"], &KEYS[1..])?;
    let programs = f
        .get("programs")
        .map(|n| list(r, n, "programs", name("a program file")))
        .unwrap_or_default();
    let configs = match f.get("configs") {
        Some(n) => list(r, n, "configs", name("a config name or file")),
        None => vec![sim::builtin::DEFAULT.to_string()],
    };
    let mut params = Vec::new();
    if let Some(n) = f.get("params") {
        let what = "params (each name with a list of values)";
        for (name, values) in r.entries(n, "params", what).unwrap_or(&[]) {
            let path = join("params", name);
            let ok = r.name_ok(name, &path);
            let values = list(r, values, &path, |r, n, p| r.int(n, p));
            if ok {
                params.push((name.clone(), values));
            }
        }
    }
    let levels = match f.get("levels") {
        Some(n) => list(r, n, "levels", |r, n, p| {
            r.int_in(n, p, 0, 2).map(|l| l as u8)
        }),
        None => vec![2],
    };
    let capacities = match f.get("capacities") {
        Some(n) => list(r, n, "capacities", capacity_set),
        None => vec![Vec::new()],
    };
    let blocks = match f.get("blocks") {
        Some(n) => list(r, n, "blocks", |r, n, p| r.u32(n, p, true).map(Some)),
        None => vec![None],
    };
    let l2 = match f.get("l2") {
        Some(n) => list(r, n, "l2", l2_state),
        None => vec![L2Arg::Cold],
    };
    Some(SweepFile {
        programs,
        configs,
        params,
        levels,
        capacities,
        blocks,
        l2,
    })
}

/// A reader of one name (a program file, a config), `what` naming it in messages: printable
/// text, as every name the outputs show (the CSV's program and config cells, the summary).
fn name(what: &'static str) -> impl FnMut(&mut Reader, &Node, &str) -> Option<String> {
    move |r, n, p| {
        let s = r.string(n, p, what)?;
        r.name_ok(s, p).then(|| s.to_string())
    }
}

/// The values of the list at `path`, each read by `one`. An empty list, and a value listed
/// twice (the grid would run the same points twice), are problems too.
fn list<T: PartialEq>(
    r: &mut Reader,
    node: &Node,
    path: &str,
    mut one: impl FnMut(&mut Reader, &Node, &str) -> Option<T>,
) -> Vec<T> {
    let Value::Seq(items) = &node.value else {
        r.error_hint(
            path,
            format!("expected a list, found {}", show(node)),
            Some(format!(
                "write the values in brackets, e.g. `{}: [{}]`",
                path.rsplit('.').next().unwrap_or(path),
                match &node.value {
                    Value::Map(_) | Value::Seq(_) | Value::Null => "...".to_string(),
                    _ => show(node).trim_matches('"').to_string(),
                }
            )),
        );
        return Vec::new();
    };
    if items.is_empty() {
        r.error_hint(
            path,
            "the list is empty, so the sweep would have no points",
            Some("list at least one value, or leave the key out for its default".into()),
        );
    }
    let mut out: Vec<(usize, T)> = Vec::with_capacity(items.len());
    for (i, n) in items.iter().enumerate() {
        let p = index(path, i);
        let Some(v) = one(r, n, &p) else { continue };
        match out.iter().find(|(_, o)| *o == v) {
            Some((first, _)) => r.error_hint(
                &p,
                format!(
                    "{} is listed twice (first at {})",
                    show(n),
                    index(path, *first)
                ),
                Some("list each value once: the grid would run the same points twice".into()),
            ),
            None => out.push((i, v)),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// One entry of `capacities`: a mapping of on-chip scopes to sizes (`{ ub: 128KiB }`), `{}`
/// for the config's own capacities. Sorted by scope.
fn capacity_set(r: &mut Reader, node: &Node, path: &str) -> Option<Vec<(Space, u64)>> {
    let what = "a set of capacities (scope: size, e.g. { ub: 128KiB })";
    let entries = r.entries(node, path, what)?;
    let before = r.count();
    let mut set = Vec::with_capacity(entries.len());
    for (scope, size) in entries {
        let p = join(path, scope);
        let size_text = match &size.value {
            Value::Int(i) => i.to_string(),
            Value::Str(s) => s.clone(),
            _ => {
                r.error_hint(
                    &p,
                    format!("expected a size, found {}", show(size)),
                    Some("write bytes, or a whole number with KiB or MiB, e.g. 128KiB".into()),
                );
                continue;
            }
        };
        match crate::cli::parse_capacity(&format!("{scope}={size_text}")) {
            Ok(c) => set.push(c),
            Err(message) => r.error_hint(
                &p,
                message,
                Some("a capacity is an on-chip scope with bytes, or a whole number with KiB or MiB, e.g. ub: 128KiB".into()),
            ),
        }
    }
    set.sort_by_key(|(space, _)| *space);
    (r.count() == before).then_some(set)
}

fn l2_state(r: &mut Reader, node: &Node, path: &str) -> Option<L2Arg> {
    let s = r.string(node, path, "an L2 state (cold or warm)")?;
    match s {
        "cold" => Some(L2Arg::Cold),
        "warm" => Some(L2Arg::Warm),
        other => {
            r.error_hint(
                path,
                format!("unknown L2 state \"{other}\""),
                suggest(other, &["cold", "warm"]),
            );
            None
        }
    }
}

/// What the grid needs to know of one program on one config, from loading it with its own
/// params.
#[derive(Clone, Debug)]
pub struct PairInfo {
    pub program: usize,
    pub config: usize,
    /// The params the program declares.
    pub declared: Vec<String>,
    /// The on-chip scopes of its cores (every part's, for a mixed kernel).
    pub scopes: Vec<Space>,
}

/// One program on one config and the part of the grid it spans.
#[derive(Clone, Debug)]
pub struct Pair {
    pub program: usize,
    pub config: usize,
    /// For each param of the file: whether this program declares it.
    pub applies: Vec<bool>,
    /// The capacity sets that differ for this program, each without the scopes its cores lack,
    /// in file order (the first of equal sets).
    pub capacities: Vec<Vec<(Space, u64)>>,
}

/// The points of a sweep: pairs of a program and a config, in file order (programs, then
/// configs), each with the product of the other axes.
#[derive(Clone, Debug)]
pub struct Grid {
    pub file: SweepFile,
    pub pairs: Vec<Pair>,
    /// The index of each pair's first point.
    starts: Vec<u64>,
    pub points: u64,
}

/// One point of the grid: its index and its effective inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Point<'g> {
    pub index: u64,
    pub program: usize,
    pub config: usize,
    /// For each param of the file: its value, or `None` where the program does not declare it.
    pub params: Vec<Option<i64>>,
    pub level: u8,
    pub capacities: &'g [(Space, u64)],
    pub blocks: Option<u32>,
    pub l2: L2Arg,
}

impl Grid {
    /// The grid of `file` over `infos`, one per program × config in that order. Fails when the
    /// grid would have more than [`MAX_POINTS`] points.
    pub fn new(file: SweepFile, infos: &[PairInfo]) -> Result<Grid, String> {
        let mut pairs = Vec::with_capacity(infos.len());
        let mut starts = Vec::with_capacity(infos.len());
        let mut total: u64 = 0;
        let too_many = || format!("the sweep has more than {MAX_POINTS} points; split it");
        for info in infos {
            let applies: Vec<bool> = file
                .params
                .iter()
                .map(|(name, _)| info.declared.contains(name))
                .collect();
            let mut capacities: Vec<Vec<(Space, u64)>> = Vec::new();
            for set in &file.capacities {
                let own: Vec<(Space, u64)> = set
                    .iter()
                    .copied()
                    .filter(|(space, _)| info.scopes.contains(space))
                    .collect();
                if !capacities.contains(&own) {
                    capacities.push(own);
                }
            }
            let mut points: u64 = 1;
            let sizes = file
                .params
                .iter()
                .zip(&applies)
                .filter(|(_, on)| **on)
                .map(|((_, values), _)| values.len())
                .chain([
                    file.levels.len(),
                    capacities.len(),
                    file.blocks.len(),
                    file.l2.len(),
                ]);
            for n in sizes {
                points = points
                    .checked_mul(n as u64)
                    .filter(|p| *p <= MAX_POINTS)
                    .ok_or_else(too_many)?;
            }
            starts.push(total);
            total = total
                .checked_add(points)
                .filter(|t| *t <= MAX_POINTS)
                .ok_or_else(too_many)?;
            pairs.push(Pair {
                program: info.program,
                config: info.config,
                applies,
                capacities,
            });
        }
        Ok(Grid {
            file,
            pairs,
            starts,
            points: total,
        })
    }

    /// The point at `index` (below [`Grid::points`]).
    pub fn point(&self, index: u64) -> Point<'_> {
        assert!(index < self.points, "point {index} of {}", self.points);
        // the last pair starting at or before the index (pairs of no points start where the
        // next one does)
        let p = self.starts.partition_point(|s| *s <= index) - 1;
        let pair = &self.pairs[p];
        let mut j = index - self.starts[p];
        let f = &self.file;
        let mut take = |n: usize| {
            let i = (j % n as u64) as usize;
            j /= n as u64;
            i
        };
        // the last axis varies fastest: decode from the end
        let l2 = f.l2[take(f.l2.len())];
        let blocks = f.blocks[take(f.blocks.len())];
        let capacities = &pair.capacities[take(pair.capacities.len())];
        let level = f.levels[take(f.levels.len())];
        let mut params = vec![None; f.params.len()];
        for (k, (_, values)) in f.params.iter().enumerate().rev() {
            if pair.applies[k] {
                params[k] = Some(values[take(values.len())]);
            }
        }
        Point {
            index,
            program: pair.program,
            config: pair.config,
            params,
            level,
            capacities,
            blocks,
            l2,
        }
    }

    /// The params of point `point` that apply to its program, as `--param` overrides.
    pub fn overrides(&self, point: &Point) -> Vec<(String, i64)> {
        self.file
            .params
            .iter()
            .zip(&point.params)
            .filter_map(|((name, _), v)| v.map(|v| (name.clone(), v)))
            .collect()
    }
}

/// A 64-bit FNV-1a hash: a fingerprint that is the same on every machine and every run (the
/// standard library's hashers promise neither).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`, then a separator, so that ("ab", "c") and ("a", "bc") differ.
    pub fn add(&mut self, bytes: &[u8]) -> &mut Self {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<SweepFile, sim::LoadError> {
        sim::load::read_document(text, "s.yaml", read)
    }

    /// (path, line, message) of every problem.
    fn problems(text: &str) -> Vec<(String, u32, String)> {
        read_text(text)
            .unwrap_err()
            .diagnostics
            .into_iter()
            .map(|d| (d.path, d.line.unwrap_or(0), d.message))
            .collect()
    }

    /// The design's first sweep file, byte for byte (the integration tests run it).
    const DESIGN: &str = include_str!("../../tests/fixtures/sweep/design.yaml");

    #[test]
    fn the_design_example_reads() {
        let f = read_text(DESIGN).unwrap();
        assert_eq!(
            f,
            SweepFile {
                programs: vec![
                    "programs/vec_add_db.yaml".into(),
                    "programs/matmul.yaml".into()
                ],
                configs: vec!["ascend910b".into()],
                params: vec![("tiles".into(), vec![64, 128])],
                levels: vec![2, 1, 0],
                capacities: vec![vec![], vec![(Space::Ub, 128 * 1024)]],
                blocks: vec![None],
                l2: vec![L2Arg::Cold],
            }
        );
    }

    #[test]
    fn every_problem_is_reported_at_its_place() {
        let text = "programs: [a.yaml, a.yaml]
levles: [2]
levels: [3, 1]
capacities: [{ ubb: 1KiB }, { ub: 1.5KiB }]
blocks: [0]
l2: [hot]
params: { n: [1, x], m: 4 }
configs: []
";
        let got = problems(text);
        let paths: Vec<(&str, u32)> = got.iter().map(|(p, l, _)| (p.as_str(), *l)).collect();
        assert_eq!(
            paths,
            [
                ("levles", 2),
                ("programs[1]", 1),
                ("configs", 8),
                ("params.n[1]", 7),
                ("params.m", 7),
                ("levels[0]", 3),
                ("capacities[0].ubb", 4),
                ("capacities[1].ub", 4),
                ("blocks[0]", 5),
                ("l2[0]", 6),
            ],
            "{got:#?}"
        );
        let message = |path: &str| &got.iter().find(|(p, _, _)| p == path).unwrap().2;
        assert!(message("programs[1]").contains("listed twice (first at programs[0])"));
        assert!(message("configs").contains("empty"));
        assert!(message("levels[0]").contains("3 is too large (at most 2)"));
        assert!(message("capacities[0].ubb").contains("not an on-chip scope"));
        assert!(message("capacities[1].ub").contains("`1.5KiB`"));
        assert!(message("params.m").contains("expected a list, found 4"));
    }

    #[test]
    fn a_missing_programs_key_and_a_non_mapping_are_refused() {
        assert!(problems("levels: [1]\n")[0]
            .2
            .contains("missing required key \"programs\""));
        assert!(problems("[1, 2]\n")[0].2.contains("expected a sweep file"));
        assert!(problems("programs: [a\n")[0]
            .2
            .contains("YAML syntax error"));
    }

    fn info(program: usize, declared: &[&str], scopes: &[Space]) -> PairInfo {
        PairInfo {
            program,
            config: 0,
            declared: declared.iter().map(|s| s.to_string()).collect(),
            scopes: scopes.to_vec(),
        }
    }

    #[test]
    fn axes_a_program_lacks_collapse() {
        let f = read_text(DESIGN).unwrap();
        let grid = Grid::new(
            f,
            &[
                info(0, &["tiles", "n"], &[Space::Ub]),
                info(1, &["M", "N", "K"], &[Space::L1, Space::L0a]),
            ],
        )
        .unwrap();
        // vec_add_db: 2 tiles × 3 levels × 2 capacities; matmul: 3 levels (no tiles, no ub)
        assert_eq!(grid.points, 12 + 3);
        let p = |i| grid.point(i);
        assert_eq!(p(0).params, vec![Some(64)]);
        assert_eq!((p(0).level, p(0).capacities.len()), (2, 0));
        assert_eq!(
            (p(1).level, p(1).capacities),
            (2, &[(Space::Ub, 131072)][..])
        );
        assert_eq!((p(2).level, p(2).capacities.len()), (1, 0));
        assert_eq!(p(6).params, vec![Some(128)]);
        assert_eq!(p(11).level, 0);
        for (i, level) in [(12, 2), (13, 1), (14, 0)] {
            assert_eq!(
                (p(i).program, p(i).params.clone(), p(i).level),
                (1, vec![None], level)
            );
            assert!(p(i).capacities.is_empty());
        }
    }

    #[test]
    fn the_last_axis_varies_fastest() {
        let f = read_text(
            "programs: [a]\nparams: { x: [1, 2], y: [7, 8, 9] }\nblocks: [1, 4]\nl2: [cold, warm]\n",
        )
        .unwrap();
        let grid = Grid::new(f, &[info(0, &["x", "y"], &[])]).unwrap();
        assert_eq!(grid.points, 2 * 3 * 2 * 2);
        type Inputs = (Option<i64>, Option<i64>, Option<u32>, L2Arg);
        let all: Vec<Inputs> = (0..grid.points)
            .map(|i| {
                let p = grid.point(i);
                (p.params[0], p.params[1], p.blocks, p.l2)
            })
            .collect();
        assert_eq!(all[0], (Some(1), Some(7), Some(1), L2Arg::Cold));
        assert_eq!(all[1], (Some(1), Some(7), Some(1), L2Arg::Warm));
        assert_eq!(all[2], (Some(1), Some(7), Some(4), L2Arg::Cold));
        assert_eq!(all[4], (Some(1), Some(8), Some(1), L2Arg::Cold));
        assert_eq!(all[12], (Some(2), Some(7), Some(1), L2Arg::Cold));
        assert_eq!(all[23], (Some(2), Some(9), Some(4), L2Arg::Warm));
        // every combination once
        let mut sorted = all.clone();
        sorted.sort_by_key(|x| format!("{x:?}"));
        sorted.dedup();
        assert_eq!(sorted.len(), all.len());
    }

    #[test]
    fn equal_capacity_sets_are_one_point() {
        let f =
            read_text("programs: [a]\ncapacities: [{ l1: 1KiB }, {}, { l1: 1KiB, ub: 2KiB }]\n")
                .unwrap();
        // a vector program: { l1: 1KiB } is {} for it, { l1, ub } is { ub }
        let grid = Grid::new(f, &[info(0, &[], &[Space::Ub])]).unwrap();
        assert_eq!(grid.points, 2);
        assert_eq!(grid.point(0).capacities, &[][..]);
        assert_eq!(grid.point(1).capacities, &[(Space::Ub, 2048)][..]);
    }

    #[test]
    fn too_many_points_is_refused() {
        let values: Vec<String> = (0..1100).map(|i| i.to_string()).collect();
        let list = values.join(", ");
        let text = format!(
            "programs: [a]\nparams: {{ a: [{list}], b: [{list}], c: [{list}], d: [{list}] }}\n"
        );
        let f = read_text(&text).unwrap();
        let e = Grid::new(f, &[info(0, &["a", "b", "c", "d"], &[])]).unwrap_err();
        assert!(e.contains("more than"), "{e}");
    }

    #[test]
    fn fingerprints_separate_their_parts() {
        let h = |parts: &[&str]| {
            let mut f = Fnv::default();
            for p in parts {
                f.add(p.as_bytes());
            }
            f.hex()
        };
        assert_ne!(h(&["ab", "c"]), h(&["a", "bc"]));
        assert_eq!(h(&["x"]), h(&["x"]));
        assert_eq!(h(&["x"]).len(), 16);
    }
}
