//! `run --roofline` (docs/roofline.md): the work it counts is the work the engine charged
//! (every pipe's busy cycles on every shipped program), and its rows on the vector add, the
//! matmul and the flash attention launch, derived by hand from the programs and the built-in
//! config's rates.

use crate::{default_config, ideal_config, json_of, load_kernel_on, npusim, root, stderr, stdout};
use serde_json::Value;
use sim::config::Config;
use sim::engine::{work_of, Issue, Observer, Resource};
use sim::{Pipe, Program};
use std::collections::BTreeMap;

/// Σ of the cycles [`work_of`] gives the instructions each core sent to each pipe (rounded as
/// the engine rounds them).
struct PerPipe<'a> {
    config: &'a Config,
    parts: Vec<&'a Program>,
    part_of: Vec<u32>,
    cycles: BTreeMap<(u32, Pipe), u64>,
}

impl Observer for PerPipe<'_> {
    fn on_issue(&mut self, i: &Issue<'_>) {
        let program = self.parts[self.part_of[i.core as usize] as usize];
        for w in work_of(self.config, program, i.op, i.pipe, i.vars)
            .into_iter()
            .flatten()
        {
            let pipe = match w.resource {
                Resource::Cube => Pipe::M,
                Resource::Vector => Pipe::V,
                Resource::Path(from, to) => self.config.path(from, to).unwrap().pipe,
            };
            // the parts of an mmad_l1 go to the pipes the engine sends them to
            assert_eq!(pipe, i.pipe, "{}", program.op(i.op).path);
            *self.cycles.entry((i.core, pipe)).or_default() += w.cycles;
        }
    }

    fn ordered(&self) -> bool {
        false
    }
}

/// Runs every shipped program (and the launch fixtures) on `config` and checks each core's
/// pipes: `busy` is what the counted work needs, plus for V the bank conflicts, and for the
/// pipes that move gm `expect_gm` (exactly the work, when no memory system slows a move).
fn check_every_program(config: &Config, gm_exact: bool) {
    let mut files: Vec<_> = std::fs::read_dir(root().join("programs"))
        .unwrap()
        .chain(std::fs::read_dir(root().join("tests/fixtures/launch")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    for path in files {
        let name = path.display().to_string();
        let (config, kernel) = load_kernel_on(&path, config.clone());
        let opts = pipeline::Options::default();
        let prepared = pipeline::prepare_kernel(&kernel, &config, &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ran: Vec<Program> = prepared.parts.iter().map(|p| p.program.clone()).collect();
        let parts: Vec<&Program> = ran.iter().collect();
        let mut counted = PerPipe {
            config: &config,
            part_of: sim::launch::slots(&parts, &config)
                .iter()
                .map(|s| s.part)
                .collect(),
            parts,
            cycles: BTreeMap::new(),
        };
        let sim = pipeline::run_prepared(prepared, &config, &opts, &mut counted)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(sim.result.stopped.is_none() && sim.result.deadlock.is_none());
        for (c, core) in sim.result.cores.iter().enumerate() {
            for p in &core.pipes {
                let pipe = p.pipe;
                if pipe == Pipe::S {
                    continue;
                }
                let work = counted.cycles.get(&(c as u32, pipe)).copied().unwrap_or(0);
                let conflicts = match pipe {
                    Pipe::V => core.bank_conflict_cycles.unwrap_or(0),
                    _ => 0,
                };
                // MTE2, MTE3 and FIX move gm: under the memory system a move's work is its
                // L2 hits and HBM lines at their rates, not its path's
                let moves_gm = matches!(pipe, Pipe::Mte2 | Pipe::Mte3 | Pipe::Fix);
                if gm_exact || !moves_gm {
                    assert_eq!(p.busy, work + conflicts, "{name}: core {c} {pipe:?}");
                }
            }
        }
    }
}

#[test]
fn the_counted_work_is_the_busy_cycles_on_every_shipped_program() {
    // without blocks, banks or memory system every pipe is busy exactly its work
    check_every_program(&ideal_config(), true);
    // with them, the cube, MTE1 and the vector unit still are (V: plus its bank conflicts)
    check_every_program(&default_config(), false);
}

/// The roofline row of `resource` on `core_type` (`null` for the chip's).
fn row<'a>(doc: &'a Value, resource: &str, core_type: Option<&str>) -> &'a Value {
    doc["roofline"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == resource && r["core_type"].as_str() == core_type)
        .unwrap_or_else(|| panic!("no {resource} row: {}", doc["roofline"]))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// `x` rounded to 4 decimals, as the document rounds ratios.
fn r4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[test]
fn the_vector_add_is_nearest_its_loads_bound() {
    // 128 tiles of two 32 KiB loads (16384 f16), an add and a 32 KiB store. gm->ub: 128 × 2
    // × 32768 = 8 MiB at 110 B/cycle = 76,260.1 cycles; ub->gm: 4 MiB at 64 = 65,536; the
    // adds: 128 × 32768 / 256 = 16,384 repeats at 1 a cycle; HBM (cold: every read misses,
    // every write goes through): 12 MiB at 768 = 16,384; the L2 carries only the writes, 4
    // MiB at 3888 = 1,078.8. The loads need the most cycles, so they are the nearest bound
    // whatever the run's length.
    let d = json_of("run", &["programs/vec_add_db.yaml", "--roofline"]);
    let total = d["total_cycles"].as_u64().unwrap() as f64;
    let rf = &d["roofline"];
    assert_eq!(rf["total_cycles"], d["total_cycles"]);
    assert_eq!(rf["nearest"]["resource"], "gm->ub");
    let load = row(&d, "gm->ub", Some("aiv"));
    assert_eq!(load["work"], 8 << 20);
    assert_eq!(load["peak_per_cycle"], 110.0);
    assert_eq!(f(&load["utilisation"]), r4(8388608.0 / 110.0 / total));
    assert_eq!(load["min_cycles"], 76_261);
    assert_eq!(f(&load["achieved_per_cycle"]), r4(8388608.0 / total));
    let store = row(&d, "ub->gm", Some("aiv"));
    assert_eq!(
        (&store["work"], &store["min_cycles"]),
        (&(4 << 20).into(), &65_536.into())
    );
    let add = row(&d, "vector", Some("aiv"));
    assert_eq!(add["unit"], "repeats");
    assert_eq!(
        (&add["work"], &add["min_cycles"]),
        (&16_384.into(), &16_384.into())
    );
    let hbm = row(&d, "hbm", None);
    assert_eq!(
        (&hbm["work"], &hbm["min_cycles"]),
        (&(12 << 20).into(), &16_384.into())
    );
    assert_eq!(hbm["cores"], 1);
    assert_eq!(row(&d, "l2", None)["min_cycles"], 1_079);
    // no cube work on a vector core: no row
    assert_eq!(rf["rows"].as_array().unwrap().len(), 5);

    // the text: the section after the report, its nearest bound and a row
    let o = npusim(&["run", "programs/vec_add_db.yaml", "--roofline"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let section = text
        .split_once("\nroofline (")
        .expect("a roofline section")
        .1;
    assert!(
        section.contains("cycles): nearest bound: gm->ub ("),
        "{section}"
    );
    let line = section
        .lines()
        .find(|l| l.trim_start().starts_with("gm->ub"))
        .unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[..5], ["gm->ub", "aiv", "x1", "8388608", "bytes"]);
    assert_eq!(cells[6], "110.00");
    assert_eq!(cells[8], "76261");
}

#[test]
fn without_the_flag_nothing_changes() {
    // the same report, and `roofline` null in the document
    let plain = npusim(&["run", "programs/vec_add_db.yaml"]);
    let with = npusim(&["run", "programs/vec_add_db.yaml", "--roofline"]);
    let (plain, with) = (stdout(&plain), stdout(&with));
    assert!(!plain.contains("roofline"));
    assert!(with.starts_with(&plain), "{with}");
    let d = json_of("run", &["programs/vec_add_db.yaml"]);
    assert_eq!(d["roofline"], Value::Null);
}

#[test]
fn the_matmul_does_m_n_k_macs_and_is_as_near_its_cube_bound_as_its_loads() {
    // M 128, N 256, K 1024: 16 mmads (K / kt = 4 L1 tiles × kt / k0 = 4 steps) of 128 × 256
    // × 64 = 128 × 256 × 1024 = 33,554,432 MACs; the cube does 16 × 16 × (32 B / 2 B of f16)
    // = 4096 a cycle: 8192 cycles. The nz loads of A (128 × 1024 f16, 256 KiB) and B (1024 ×
    // 256, 512 KiB) at 96 B/cycle: 786,432 / 96 = 8192 cycles too: a tie, the cube first.
    let d = json_of("run", &["programs/matmul.yaml", "--roofline"]);
    let cube = row(&d, "cube", Some("aic"));
    assert_eq!(cube["unit"], "MACs");
    assert_eq!(cube["work"], 128 * 256 * 1024);
    assert_eq!(cube["peak_per_cycle"], 4096.0);
    assert_eq!(cube["min_cycles"], 8192);
    let loads = row(&d, "gm->l1", Some("aic"));
    assert_eq!(loads["work"], 786_432);
    assert_eq!(loads["peak_per_cycle"], 96.0);
    assert_eq!(loads["min_cycles"], 8192);
    assert_eq!(loads["utilisation"], cube["utilisation"]);
    assert_eq!(d["roofline"]["nearest"]["resource"], "cube");
    let text = stdout(&npusim(&["run", "programs/matmul.yaml", "--roofline"]));
    assert!(text.contains("nearest bound: cube = gm->l1 ("), "{text}");
}

#[test]
fn the_flash_attention_launch_has_rows_per_core_type() {
    // two blocks of one cube core and two vector cores (910B: 2 aiv per aic). Each cube core
    // computes S_j = Q K_jᵀ and O_j = P_j V_j for the nkv = 8 KV tiles (the first S and the
    // last O outside the loop of 7): 16 mmad_l1s of tq × kv × d = 128³ MACs, 2 × 16 × 2^21 =
    // 67,108,864 in the launch, against twice one core's 4096 a cycle: 8192 cycles.
    let d = json_of("run", &["programs/flash_attention.yaml", "--roofline"]);
    let total = d["total_cycles"].as_u64().unwrap() as f64;
    let cube = row(&d, "cube", Some("aic"));
    assert_eq!(cube["cores"], 2);
    assert_eq!(cube["work"], 2 * 16 * 128 * 128 * 128);
    assert_eq!(cube["peak_per_cycle"], 2.0 * 4096.0);
    assert_eq!(cube["min_cycles"], 8192);
    assert_eq!(f(&cube["utilisation"]), r4(8192.0 / total));
    // the two cube cores do the same work
    assert_eq!(cube["busiest_core_utilisation"], cube["utilisation"]);
    let vector = row(&d, "vector", Some("aiv"));
    assert_eq!(vector["cores"], 4);
    // the chip's rates are one, whatever the cores
    assert_eq!(row(&d, "hbm", None)["peak_per_cycle"], 768.0);
    // the nearest bound is the row of the highest utilisation
    let rows = d["roofline"]["rows"].as_array().unwrap();
    let most = rows
        .iter()
        .map(|r| f(&r["utilisation"]))
        .fold(0.0, f64::max);
    assert_eq!(f(&d["roofline"]["nearest"]["utilisation"]), most);
    for r in rows {
        // one core's share at most: a core type's busiest core needs at least the mean
        assert!(
            f(&r["busiest_core_utilisation"]) >= f(&r["utilisation"]),
            "{r}"
        );
    }
    let text = stdout(&npusim(&[
        "run",
        "programs/flash_attention.yaml",
        "--roofline",
    ]));
    assert!(text.contains("\nroofline (launch, "), "{text}");
    assert!(text.contains("busiest core %"), "{text}");
}

#[test]
fn the_page_has_a_roofline_section_when_asked() {
    let dir = crate::scratch("roofline_page");
    let page = |extra: &[&str]| {
        let file = dir.join("p.html");
        let f = file.to_str().unwrap();
        let mut args = vec!["run", "programs/matmul.yaml", "--html", f];
        args.extend_from_slice(extra);
        let o = npusim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read_to_string(&file).unwrap()
    };
    let with = page(&["--roofline"]);
    assert!(with.contains("<section id=\"roofline\">"));
    // the cube and the loads tie: both bars are the nearest
    assert_eq!(with.matches("class=\"bar nearest\"").count(), 2);
    assert!(with.contains("nearest bound: cube = gm-&gt;l1 ("));
    assert!(!page(&[]).contains("id=\"roofline\""));
}

#[test]
fn a_mix_of_vector_ops_is_bounded_at_their_cycles_per_repeat() {
    // The flash attention's vector cores run ops of 1 and 2 cycles a repeat (vexp ...). On the
    // ideal config (no blocks, no banks) each keeps V busy exactly its repeats × cycles per
    // repeat, and the aiv cores move nothing on V, so their V busy cycles together are what
    // the row's work needs at its rates: the minimum is that over the 4 cores, the peak the
    // repeats over it, × 4.
    let d = json_of(
        "run",
        &[
            "programs/flash_attention.yaml",
            "--config",
            crate::IDEAL_CONFIG,
            "--roofline",
        ],
    );
    let busy: u64 = d["launch"]["cores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "aiv")
        .map(|c| c["pipes"]["V"]["busy"].as_u64().unwrap())
        .sum();
    let vector = row(&d, "vector", Some("aiv"));
    assert_eq!(vector["min_cycles"], busy.div_ceil(4));
    let repeats = vector["work"].as_u64().unwrap() as f64;
    assert_eq!(
        f(&vector["peak_per_cycle"]),
        r4(repeats * 4.0 / busy as f64)
    );
    // a mix: below the 4 repeats a cycle of four cores at one cycle a repeat
    assert!(f(&vector["peak_per_cycle"]) < 4.0);
}
