//! Every built-in config loads and round-trips through `configs --show`; the second shipped chip
//! (the Ascend 910, whose AI core couples cube and vector) runs its example kernel race-free,
//! and a program written for another chip's core types is refused with the ones it has.

use crate::{npusim, stderr, stdout};

#[test]
fn every_built_in_config_loads_and_shows_back() {
    for (name, text) in sim::builtin::BUILTIN {
        let config = sim::load_config(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&config.name, name);
        let o = npusim(&["configs", "--show", name]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o), *text, "{name}");
    }
    let listed = stdout(&npusim(&["configs"]));
    assert!(
        listed.contains("ascend910b (default)  aiv, aic  1800 MHz"),
        "{listed}"
    );
    assert!(
        listed.contains("ascend910             aicore    1000 MHz"),
        "{listed}"
    );
}

#[test]
fn the_coupled_910_core_runs_its_matmul_with_a_vector_epilogue() {
    let o = npusim(&[
        "run",
        "docs/examples/matmul_relu_910.yaml",
        "--config",
        "ascend910",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["config"], "ascend910/aicore");
    assert_eq!(doc["hazards"], serde_json::json!([]));
    // one core holds both units: cube, vector and all three MTEs did work
    for pipe in ["M", "V", "MTE1", "MTE2", "MTE3"] {
        assert!(doc["pipes"][pipe]["busy"].as_u64().unwrap() > 0, "{pipe}");
    }
    // M: 4 L1 tiles x 4 L0 steps of mmad(128, 256, 64) = 16 x (8 x 16 x 2 fractal steps) = 4096
    // fractal cycles ... each mmad is ceil(128/16) x ceil(256/16) x ceil(64 / (32 / 2)) = 8 x 16
    // x 4 = 512 cycles of work, 16 of them: 8192 busy cycles on M
    assert_eq!(doc["pipes"]["M"]["busy"], 8192);
}

#[test]
fn a_program_for_another_chips_cores_names_the_cores_this_one_has() {
    let o = npusim(&["check", "programs/vec_add_db.yaml", "--config", "ascend910"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown core \"aiv\" in config ascend910"),
        "{e}"
    );
    assert!(e.contains("expected one of: aicore"), "{e}");
}

#[test]
fn the_planner_places_buffers_at_the_plan_alignment() {
    // the built-in config with UB planned at 1 KiB instead of 32 B
    let text = sim::builtin::builtin("ascend910b").unwrap().replace(
        "ub:  { bytes: 196608, align: 32 }",
        "ub:  { bytes: 196608, align: 32, plan_align: 1024 }",
    );
    let dir = crate::scratch("plan-align");
    let file = dir.join("coarse.yaml");
    std::fs::write(&file, &text).unwrap();
    let config = file.to_str().unwrap();
    // softmax has two 32-byte buffers: at 32 B they pack next to each other
    let fine = npusim(&["plan", "programs/softmax.yaml", "--format", "json"]);
    let coarse = npusim(&[
        "plan",
        "programs/softmax.yaml",
        "--format",
        "json",
        "--config",
        config,
    ]);
    assert_eq!(coarse.status.code(), Some(0), "{}", stderr(&coarse));
    let offsets = |o: &std::process::Output| -> Vec<u64> {
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["buffers"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|b| b["offsets"].as_array().unwrap().clone())
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    assert!(offsets(&fine).iter().any(|o| o % 1024 != 0));
    assert!(offsets(&coarse).iter().all(|o| o % 1024 == 0));
}

#[test]
fn the_ideal_example_is_the_built_in_config_without_its_refinements() {
    // docs/examples/ascend910b_ideal.yaml promises every number of the built-in config except
    // the four optional refinements; this keeps the two files in step.
    let shipped =
        sim::load_config(sim::builtin::builtin("ascend910b").unwrap(), "ascend910b").unwrap();
    let path = "docs/examples/ascend910b_ideal.yaml";
    let text = std::fs::read_to_string(crate::root().join(path)).unwrap();
    let ideal = sim::load_config(&text, path).unwrap();
    assert!(shipped.vector.block_bytes.is_some() && shipped.vector.ub_banks.is_some());
    assert!(shipped.memory.is_some() && shipped.scalar.gm_latency.is_some());
    let mut stripped = shipped.clone();
    stripped.name = ideal.name.clone();
    stripped.description = ideal.description.clone();
    stripped.vector.block_bytes = None;
    stripped.vector.ub_banks = None;
    stripped.memory = None;
    stripped.scalar.gm_latency = None;
    assert_eq!(stripped, ideal);
}
