//! The run, plan and compare documents of every shipped program, rendered from real runs: the
//! same run renders byte-identical text and JSON every time, every JSON pipe accounts for every
//! cycle, the text names the numbers the JSON holds, every document starts with its `schema`,
//! and every compare entry has one shape: `schema`, `level`, `overflow`, then the keys of a run
//! document. A mixed kernel or a launch runs whole (every part, every core), and every core of
//! its `launch.cores` accounts for every cycle too.

use reports::{compare_json, compare_levels, plan_json, run_json, run_text, Run, RUN_KEYS, SCHEMA};
use serde_json::Value;
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
            for p in &a.result.pipes {
                assert!(text.contains(&p.busy.to_string()), "{path:?} {}", p.pipe);
            }
        }
        // the plan inside the run document is the plan document, `schema` included
        assert_eq!(json["plan"], plan_json(&a.program, &a.planned.plan));
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
