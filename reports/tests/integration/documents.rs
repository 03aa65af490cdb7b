//! The run, plan and compare documents of every shipped program, rendered from real runs: the
//! same run renders byte-identical text and JSON every time, every JSON pipe accounts for every
//! cycle, the text names the numbers the JSON holds, every document starts with its `schema`,
//! and every compare entry has one shape: `schema`, `level`, `overflow`, then the keys of a run
//! document. A mixed kernel or a launch runs whole (every part, every core), and every core of
//! its `launch.cores` accounts for every cycle too.

use reports::{compare_json, compare_levels, plan_json, run_json, run_text, Run, RUN_KEYS, SCHEMA};
use serde_json::{json, Value};
use std::path::PathBuf;

fn programs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../programs");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

fn config() -> sim::Config {
    let name = sim::builtin::DEFAULT;
    sim::load_config(sim::builtin::builtin(name).unwrap(), name).unwrap()
}

fn load(path: &PathBuf) -> sim::Kernel {
    let text = std::fs::read_to_string(path).unwrap();
    sim::load_kernel(&text, "p.yaml", &config(), &[], None).unwrap()
}

/// Asserts that every pipe of `pipes` (a run document's `pipes`) accounts for `total` cycles.
fn accounts(pipes: &Value, total: u64, what: &str) {
    for (pipe, p) in pipes.as_object().unwrap() {
        let stalls: u64 = p["stalls"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let sum = p["busy"].as_u64().unwrap()
            + stalls
            + p["starved"].as_u64().unwrap()
            + p["idle"].as_u64().unwrap();
        assert_eq!(sum, total, "{what} {pipe}");
    }
}

#[test]
fn run_documents_are_deterministic_and_account_for_every_cycle() {
    let config = config();
    for path in programs() {
        let kernel = load(&path);
        let opts = pipeline::Options::default();
        let a = pipeline::simulate_kernel(&kernel, &config, &opts).unwrap();
        let b = pipeline::simulate_kernel(&kernel, &config, &opts).unwrap();
        let (ra, rb): (Run, Run) = ((&a).into(), (&b).into());
        assert_eq!(run_text(&config, &ra), run_text(&config, &rb), "{path:?}");
        let json = run_json(&config, &ra);
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            serde_json::to_string(&run_json(&config, &rb)).unwrap()
        );
        let total = json["total_cycles"].as_u64().unwrap();
        assert_eq!(total, a.result.total_cycles);
        accounts(&json["pipes"], total, &format!("{path:?}"));
        let cores = json["launch"]["cores"].as_array().unwrap();
        let slots = sim::launch::slots(&kernel.parts.iter().collect::<Vec<_>>(), &config);
        assert_eq!(cores.len(), slots.len(), "{path:?}");
        for c in cores {
            accounts(&c["pipes"], total, &format!("{path:?} {}", c["name"]));
        }
        // the text states the total and every pipe's busy count (a launch: its summary of
        // each pipe's busy cycles over the cores, whose min and max are cores' counts)
        let text = run_text(&config, &ra);
        assert!(text.contains(&total.to_string()), "{path:?}\n{text}");
        if cores.len() == 1 {
            for p in &a.result.cores[0].pipes {
                assert!(text.contains(&p.busy.to_string()), "{path:?} {}", p.pipe);
            }
        }
        // the plan inside the run document is the plan document, `schema` included
        // (of the first part: a mixed kernel's every part's are in `launch.parts`)
        let first = &a.parts[0];
        assert_eq!(json["plan"], plan_json(&first.program, &first.planned.plan));
        for doc in [&json, &json["plan"]] {
            let first = doc.as_object().unwrap().iter().next();
            assert_eq!(first, Some((&"schema".to_string(), &Value::from(SCHEMA))));
        }
    }
}

#[test]
fn every_compare_entry_that_ran_is_its_run_document_with_level_and_overflow() {
    let config = config();
    for path in programs() {
        let kernel = load(&path);
        let levels =
            pipeline::compare_kernel(&kernel, &config, &[2, 1, 0], &Default::default()).unwrap();
        let views = compare_levels(&levels);
        let list = compare_json(kernel.first(), &config, &views);
        let list = list.as_array().unwrap();
        assert_eq!(list.len(), 3);
        for (doc, level) in list.iter().zip(&levels) {
            let keys: Vec<&str> = doc
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(keys[..3], ["schema", "level", "overflow"], "{path:?}");
            assert_eq!(keys[3..], RUN_KEYS, "{path:?}");
            assert_eq!(doc["schema"], SCHEMA);
            assert_eq!(doc["level"].as_u64(), Some(level.level as u64));
            let pipeline::LevelOutcome::Ran(sim) = &level.outcome else {
                assert!(doc["overflow"].is_string(), "{path:?}");
                continue;
            };
            assert_eq!(doc["overflow"], Value::Null);
            let mut run = doc.clone();
            let m = run.as_object_mut().unwrap();
            m.shift_remove("level");
            m.shift_remove("overflow");
            assert_eq!(run, run_json(&config, &(&**sim).into()), "{path:?}");
            assert_eq!(doc["plan"]["level"].as_u64(), Some(level.level as u64));
        }
    }
}

/// Runs `programs/NAME` as the command line does (every part, every core, the race checker).
fn simulate(name: &str) -> pipeline::Simulation {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../programs")
        .join(name);
    pipeline::simulate_kernel(&load(&path), &config(), &Default::default()).unwrap()
}

/// The text report's header lines, up to the first empty line.
fn header(text: &str) -> Vec<&str> {
    text.lines().take_while(|l| !l.is_empty()).collect()
}

#[test]
fn the_hand_offs_of_sync_auto_are_in_the_header_and_the_run_document() {
    let config = config();

    // programs/matmul_add.yaml: one gm tensor crosses, `ws`, written by the aic part's fixpipe
    // (aic.body[1].for.body[2]: the `for` is the aic body's second op, the fixpipe its third)
    // and read by the aiv part's second load (aiv.body[0].for.body[1]). Its first flag is id 0.
    // Each block (2 blocks) takes tiles t = block, block + 2, ... < 48: 24 tiles, so the cube
    // core writes `ws` 24 times and each vector core reads it 24 times. 24 is more than the 16
    // pending sets a counter holds (the built-in config's cross_core.max_pending), so a reverse
    // flag (the next id, 1) runs back; every tile has its own rows of `ws` (no write overwrites
    // an unread one), so its depth is max_pending, 16.
    let sim = simulate("matmul_add.yaml");
    let run: Run = (&sim).into();
    let doc = run_json(&config, &run);
    assert_eq!(
        doc["cross_sync"],
        json!([{
            "tensor": "ws",
            "producer": { "core": "aic", "ops": ["aic.body[1].for.body[2]"] },
            "consumer": { "core": "aiv", "ops": ["aiv.body[0].for.body[1]"] },
            "flag": 0,
            "reverse": { "flag": 1, "depth": 16 },
            "count": 24
        }])
    );
    let text = run_text(&config, &run);
    let head = header(&text);
    let syncs = head.iter().position(|l| l.starts_with("syncs   ")).unwrap();
    assert_eq!(
        head[syncs + 1],
        "cross   gm.ws aic -> aiv: flag #0 after aic.body[1].for.body[2], wait before \
         aiv.body[0].for.body[1]; reverse flag #1, depth 16; 24 times per core",
        "{text}"
    );
    assert!(head[syncs + 2].starts_with("plan    "), "{text}");

    // programs/flash_attention.yaml: three gm tensors cross, in their declaration order (q, kt,
    // v, o, s, p, ot), each taking a forward flag and then its reverse flag's id:
    // - s (flags 0 and 1), aic -> aiv: written by the fixpipe of S_0 before the loop
    //   (aic.body[4]) and by the loop's fixpipe of S_{j+1} (aic.body[5].for.body[1]), read by
    //   the vector loop's first load (aiv.body[4].for.body[0]);
    // - p (flags 2 and 3), aiv -> aic: written by the vector loop's store
    //   (aiv.body[4].for.body[13]), read by the cube loop's load of P_j
    //   (aic.body[5].for.body[4]) and the last block's (aic.body[7]);
    // - ot (flags 4 and 5), aic -> aiv: written by the loop's fixpipe of O_j
    //   (aic.body[5].for.body[6]) and the last one (aic.body[9]), read by the load of O_{j-1}
    //   under `if: j >= 1` (aiv.body[4].for.body[14].if.then[0]) and the last one (aiv.body[5]).
    // With nkv = 8 kv blocks, each core writes or reads each tensor 8 times (s: 1 + 7 writes;
    // ot: 7 + 1 writes and 7 + 1 reads; p: 7 + 1 reads). Every workspace has two slots, j % 2,
    // so write k + 2 lands where read k reads: each reverse flag has depth 2.
    let sim = simulate("flash_attention.yaml");
    let run: Run = (&sim).into();
    let doc = run_json(&config, &run);
    let list = doc["cross_sync"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str, u64, &Value, u64)> = list
        .iter()
        .map(|h| {
            (
                h["tensor"].as_str().unwrap(),
                h["producer"]["core"].as_str().unwrap(),
                h["consumer"]["core"].as_str().unwrap(),
                h["flag"].as_u64().unwrap(),
                &h["reverse"],
                h["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let reverse = |flag: u64| json!({ "flag": flag, "depth": 2 });
    assert_eq!(
        summary,
        [
            ("s", "aic", "aiv", 0, &reverse(1), 8),
            ("p", "aiv", "aic", 2, &reverse(3), 8),
            ("ot", "aic", "aiv", 4, &reverse(5), 8),
        ]
    );
    let ops = |h: &Value, side: &str| -> Vec<String> {
        h[side]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ops(&list[0], "producer"),
        ["aic.body[4]", "aic.body[5].for.body[1]"]
    );
    assert_eq!(ops(&list[0], "consumer"), ["aiv.body[4].for.body[0]"]);
    assert_eq!(ops(&list[1], "producer"), ["aiv.body[4].for.body[13]"]);
    assert_eq!(
        ops(&list[1], "consumer"),
        ["aic.body[5].for.body[4]", "aic.body[7]"]
    );
    assert_eq!(
        ops(&list[2], "producer"),
        ["aic.body[5].for.body[6]", "aic.body[9]"]
    );
    assert_eq!(
        ops(&list[2], "consumer"),
        ["aiv.body[4].for.body[14].if.then[0]", "aiv.body[5]"]
    );
    let text = run_text(&config, &run);
    let cross: Vec<&str> = header(&text)
        .into_iter()
        .filter(|l| l.starts_with("cross   "))
        .collect();
    assert_eq!(
        cross[..2],
        [
            "cross   gm.s aic -> aiv: flag #0 after aic.body[4] and aic.body[5].for.body[1], \
             wait before aiv.body[4].for.body[0]; reverse flag #1, depth 2; 8 times per core",
            "cross   gm.p aiv -> aic: flag #2 after aiv.body[4].for.body[13], wait before \
             aic.body[5].for.body[4] and aic.body[7]; reverse flag #3, depth 2; 8 times per core",
        ],
        "{text}"
    );
    assert_eq!(cross.len(), 3, "{text}");

    // hand-written cross-core flags (and a single-type kernel): nothing inserted, nothing shown
    for name in ["matmul_add_manual.yaml", "vec_add_blocks.yaml"] {
        let sim = simulate(name);
        let run: Run = (&sim).into();
        assert_eq!(run_json(&config, &run)["cross_sync"], json!([]), "{name}");
        assert!(!run_text(&config, &run).contains("\ncross "), "{name}");
    }
}
