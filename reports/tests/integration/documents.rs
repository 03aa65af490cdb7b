//! The run, plan and compare documents of every shipped program, rendered from real runs: the
//! same run renders byte-identical text and JSON every time, every JSON pipe accounts for every
//! cycle, the text names the numbers the JSON holds, and every compare entry has the shape of
//! a run document.

use reports::{compare_json, compare_levels, plan_json, run_json, run_text, Run};
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

fn load(path: &PathBuf) -> sim::Program {
    let text = std::fs::read_to_string(path).unwrap();
    sim::load_program(&text, "p.yaml", &config(), &[]).unwrap()
}

#[test]
fn run_documents_are_deterministic_and_account_for_every_cycle() {
    let config = config();
    for path in programs() {
        let program = load(&path);
        let opts = pipeline::Options::default();
        let a = pipeline::simulate(&program, &config, &opts).unwrap();
        let b = pipeline::simulate(&program, &config, &opts).unwrap();
        let (ra, rb): (Run, Run) = ((&a).into(), (&b).into());
        assert_eq!(run_text(&config, &ra), run_text(&config, &rb), "{path:?}");
        let json = run_json(&config, &ra);
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            serde_json::to_string(&run_json(&config, &rb)).unwrap()
        );
        let total = json["total_cycles"].as_u64().unwrap();
        assert_eq!(total, a.result.total_cycles);
        for (pipe, p) in json["pipes"].as_object().unwrap() {
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
            assert_eq!(sum, total, "{path:?} {pipe}");
        }
        // the text states the total and every pipe's busy count
        let text = run_text(&config, &ra);
        assert!(text.contains(&total.to_string()), "{path:?}\n{text}");
        for p in &a.result.pipes {
            assert!(text.contains(&p.busy.to_string()), "{path:?} {}", p.pipe);
        }
        // the plan inside the run document is the plan document
        assert_eq!(json["plan"], plan_json(&a.program, &a.planned.plan));
    }
}

#[test]
fn every_compare_entry_that_ran_is_a_run_document() {
    let config = config();
    for path in programs() {
        let program = load(&path);
        let levels = pipeline::compare(&program, &config, &[2, 1, 0], &Default::default()).unwrap();
        let views = compare_levels(&levels);
        let list = compare_json(&program, &config, &views);
        let list = list.as_array().unwrap();
        assert_eq!(list.len(), 3);
        for (doc, level) in list.iter().zip(&levels) {
            let pipeline::LevelOutcome::Ran(sim) = &level.outcome else {
                continue;
            };
            assert_eq!(doc, &run_json(&config, &(&**sim).into()), "{path:?}");
            assert_eq!(doc["plan"]["level"].as_u64(), Some(level.level as u64));
        }
    }
}
