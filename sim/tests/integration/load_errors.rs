//! Every kind of load error (docs/programs.md, load-time checks), one fixture each under `tests/fixtures/bad/`. Each test
//! pins the exact YAML path, the line and column the user is sent to, the words of the message
//! and the hint, and that the fixture reports nothing else (so a fixture cannot drift into
//! testing a different problem).

use sim::{Config, Diagnostic};
use std::path::Path;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bad")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn builtin() -> Config {
    sim::load_config(
        sim::builtin::builtin("ascend910b").unwrap(),
        "<built-in ascend910b>",
    )
    .expect("the built-in config loads")
}

/// The config a program fixture is loaded with: the built-in one, without its `chip` or
/// `cross_core` section for the fixtures about those.
fn config_for(name: &str) -> Config {
    let mut cfg = builtin();
    match name {
        "mixed_needs_split_chip.yaml" => cfg.chip = None,
        "cross_no_cross_core_section.yaml" => cfg.cross_core = None,
        _ => {}
    }
    cfg
}

/// Loads a program fixture as a kernel: a single-type program or a mixed one.
fn program_errors(name: &str, params: &[(&str, i64)]) -> Vec<Diagnostic> {
    let params: Vec<(String, i64)> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    match sim::load_kernel(&fixture(name), name, &config_for(name), &params, None) {
        Ok(_) => panic!("{name} loaded, but it has an error"),
        Err(e) => e.diagnostics,
    }
}

fn config_errors(name: &str) -> Vec<Diagnostic> {
    match sim::load_config(&fixture(name), name) {
        Ok(_) => panic!("{name} loaded, but it has an error"),
        Err(e) => e.diagnostics,
    }
}

/// One expected diagnostic: path, line:column, words of the message, hint words.
struct Want<'a> {
    path: &'a str,
    at: (u32, u32),
    words: &'a [&'a str],
    hint: Option<&'a str>,
}

fn check(diags: &[Diagnostic], file: &str, want: &Want) {
    let all = diags
        .iter()
        .map(|d| format!("  {d} [path {}]", d.path))
        .collect::<Vec<_>>()
        .join("\n");
    let d = diags
        .iter()
        .find(|d| d.path == want.path)
        .unwrap_or_else(|| panic!("no diagnostic at {}; got:\n{all}", want.path));
    assert_eq!(d.file, file);
    assert_eq!(
        (d.line, d.column),
        (Some(want.at.0), Some(want.at.1)),
        "location of {d}"
    );
    for w in want.words {
        assert!(d.message.contains(w), "message lacks {w:?}: {d}");
    }
    match (want.hint, &d.hint) {
        (Some(h), Some(got)) => assert!(got.contains(h), "hint lacks {h:?}: {d}"),
        (Some(h), None) => panic!("no hint, wanted {h:?}: {d}"),
        (None, _) => {}
    }
}

/// The fixture reports exactly these problems.
fn only(name: &str, diags: Vec<Diagnostic>, wants: &[Want]) {
    assert_eq!(
        diags.len(),
        wants.len(),
        "{name}: {:#?}",
        diags.iter().map(|d| d.to_string()).collect::<Vec<_>>()
    );
    for w in wants {
        check(&diags, name, w);
    }
}

fn program_case(name: &str, want: Want) {
    only(name, program_errors(name, &[]), &[want]);
}

fn config_case(name: &str, want: Want) {
    only(name, config_errors(name), &[want]);
}

#[test]
fn yaml_syntax_error_is_one_diagnostic_with_the_parsers_location() {
    program_case(
        "yaml_syntax.yaml",
        Want {
            path: "",
            at: (7, 5),
            words: &["YAML syntax error", "did not find expected ',' or '}'"],
            hint: None,
        },
    );
}

#[test]
fn unknown_key() {
    program_case(
        "unknown_key.yaml",
        Want {
            path: "body[0].for.buffers.xb.multy",
            at: (9, 57),
            words: &["unknown key \"multy\"", "buffer xb"],
            hint: Some("did you mean \"multi\"?"),
        },
    );
}

#[test]
fn missing_key_names_the_parent() {
    program_case(
        "missing_key.yaml",
        Want {
            path: "body[0].for.buffers.xb",
            at: (9, 11),
            words: &["missing required key \"dtype\"", "buffer xb"],
            hint: Some("scope, shape, dtype"),
        },
    );
}

#[test]
fn unknown_buffer_with_did_you_mean() {
    program_case(
        "unknown_buffer.yaml",
        Want {
            path: "body[0].for.body[2].store.src",
            at: (16, 23),
            words: &["unknown buffer \"zbb\""],
            hint: Some("did you mean \"zb\"?"),
        },
    );
}

#[test]
fn unknown_scope() {
    program_case(
        "unknown_scope.yaml",
        Want {
            path: "buffers.xb.scope",
            at: (7, 16),
            words: &["unknown scope \"ubb\""],
            hint: Some("did you mean \"ub\"?"),
        },
    );
}

#[test]
fn scope_not_on_the_programs_core() {
    program_case(
        "scope_not_on_core.yaml",
        Want {
            path: "buffers.xb.scope",
            at: (7, 16),
            words: &["scope l1 is not on core aiv"],
            hint: Some("core aiv has scopes: ub"),
        },
    );
}

#[test]
fn unknown_pipe() {
    program_case(
        "unknown_pipe.yaml",
        Want {
            path: "body[1].set_flag.src",
            at: (11, 22),
            words: &["unknown pipe \"mte4\""],
            hint: Some("did you mean \"mte2\"?"),
        },
    );
}

#[test]
fn unknown_dtype() {
    program_case(
        "unknown_dtype.yaml",
        Want {
            path: "gm.x.dtype",
            at: (5, 29),
            words: &["unknown dtype \"fp16\""],
            hint: Some("did you mean \"f16\"?"),
        },
    );
}

#[test]
fn unknown_op() {
    program_case(
        "unknown_op.yaml",
        Want {
            path: "body[1].vaddd",
            at: (11, 12),
            words: &["unknown op \"vaddd\""],
            hint: Some("did you mean \"vadd\"?"),
        },
    );
}

#[test]
fn unknown_core() {
    program_case(
        "unknown_core.yaml",
        Want {
            path: "core",
            at: (3, 7),
            words: &["unknown core \"aivv\"", "ascend910b"],
            hint: Some("did you mean \"aiv\"?"),
        },
    );
}

#[test]
fn no_path_for_a_move_lists_the_paths_that_exist() {
    program_case(
        "no_path.yaml",
        Want {
            path: "body[1].copy.dst",
            at: (11, 27),
            words: &["no path from l1 to l0c in config ascend910b"],
            hint: Some("paths from l1 go to: l0a (mte1), l0b (mte1), bt (mte1), fp (fix)"),
        },
    );
}

#[test]
fn shape_mismatch_in_an_elementwise_op() {
    program_case(
        "shape_mismatch.yaml",
        Want {
            path: "body[1].vadd.ins[0]",
            at: (11, 19),
            words: &[
                "size mismatch in vadd",
                "\"a\" has 256 elements",
                "\"b\" has 128",
            ],
            hint: Some("broadcast"),
        },
    );
}

#[test]
fn dtype_mismatch_in_a_move() {
    program_case(
        "dtype_mismatch.yaml",
        Want {
            path: "body[0].load",
            at: (9, 11),
            words: &["dtype mismatch in load", "\"x\" is f16", "\"a\" is f32"],
            hint: Some("vcast"),
        },
    );
}

#[test]
fn slice_out_of_bounds() {
    program_case(
        "slice_out_of_bounds.yaml",
        Want {
            path: "body[0].for.body[0].load.src",
            at: (12, 22),
            words: &[
                "slice end 320",
                "out of bounds",
                "dimension 1 of x (extent 256)",
            ],
            hint: Some("x has shape [4, 256]"),
        },
    );
}

#[test]
fn loop_index_out_of_bounds_by_range_analysis() {
    program_case(
        "index_out_of_bounds.yaml",
        Want {
            path: "body[0].for.body[0].load.src",
            at: (11, 22),
            words: &[
                "index t + 1 (can reach 4)",
                "out of bounds",
                "dimension 0 of x (extent 4)",
            ],
            hint: Some("x has shape [4, 256]"),
        },
    );
}

#[test]
fn mmad_operand_in_the_wrong_scope() {
    program_case(
        "mmad_wrong_scope.yaml",
        Want {
            path: "body[3].mmad.a",
            at: (17, 16),
            words: &["mmad a must be in l0a", "\"a1\" is in l1"],
            hint: None,
        },
    );
}

#[test]
fn mmad_operand_too_small_for_m_n_k() {
    program_case(
        "mmad_too_small.yaml",
        Want {
            path: "body[2].mmad.a",
            at: (15, 16),
            words: &["too small", "256 elements", "m × k = 32 × 16 needs 512"],
            hint: None,
        },
    );
}

#[test]
fn mmad_l1_forbids_l0a_buffers() {
    program_case(
        "mmad_l1_with_l0_buffers.yaml",
        Want {
            path: "buffers.a0.scope",
            at: (10, 16),
            words: &["buffer a0 is in l0a", "mmad_l1 (body[2].mmad_l1)"],
            hint: Some("drop the l0a/l0b buffers"),
        },
    );
}

#[test]
fn vector_operand_outside_ub() {
    program_case(
        "vector_outside_ub.yaml",
        Want {
            path: "body[1].vadd.ins[1]",
            at: (11, 22),
            words: &["vector operand \"x\" is in gm", "ub only"],
            hint: Some("move the data to a ub buffer"),
        },
    );
}

#[test]
fn vector_op_with_the_wrong_number_of_inputs() {
    program_case(
        "vector_input_count.yaml",
        Want {
            path: "body[1].vadd.ins",
            at: (11, 18),
            words: &["vadd takes 2 inputs, found 1"],
            hint: None,
        },
    );
}

#[test]
fn flag_id_outside_event_ids() {
    let name = "flag_id_out_of_range.yaml";
    let words: &[&str] = &[
        "flag id 8 is outside 0..8",
        "event_ids of config ascend910b",
    ];
    only(
        name,
        program_errors(name, &[]),
        &[
            Want {
                path: "body[1].set_flag.id",
                at: (11, 43),
                words,
                hint: Some("use ids 0 to 7"),
            },
            Want {
                path: "body[2].wait_flag.id",
                at: (12, 44),
                words,
                hint: Some("use ids 0 to 7"),
            },
        ],
    );
}

#[test]
fn read_before_first_write_names_buffer_and_op() {
    program_case(
        "read_before_write.yaml",
        Want {
            path: "body[0].for.body[1].vadd.ins[1]",
            at: (15, 27),
            words: &["read before first write", "vadd reads buffer \"yb\""],
            hint: Some("write yb first"),
        },
    );
}

#[test]
fn loop_with_a_negative_trip_count() {
    program_case(
        "bad_trip_count.yaml",
        Want {
            path: "body[0].for.to",
            at: (5, 33),
            words: &["for runs from 8 to 4", "negative trip count"],
            hint: Some("to must be at least from"),
        },
    );
}

#[test]
fn loop_with_a_non_integer_trip_count() {
    program_case(
        "float_trip_count.yaml",
        Want {
            path: "body[0].while.trips",
            at: (5, 21),
            words: &["expected an integer expression, found 2.5"],
            hint: Some("expressions are integers"),
        },
    );
}

#[test]
fn hand_written_sync_in_an_auto_program() {
    program_case(
        "manual_sync_in_auto.yaml",
        Want {
            path: "body[1].barrier",
            at: (10, 14),
            words: &["hand-written barrier", "sync: auto program"],
            hint: Some("sync: auto inserts synchronisation; remove this op or write sync: manual"),
        },
    );
}

#[test]
fn barrier_on_the_scalar_pipe() {
    program_case(
        "barrier_on_scalar.yaml",
        Want {
            path: "body[1].barrier",
            at: (7, 14),
            words: &["barrier: s"],
            hint: Some("S executes in order"),
        },
    );
}

#[test]
fn unknown_param_override() {
    let name = "unknown_param_override.yaml";
    // the program itself is valid
    let text = fixture(name);
    sim::load_program(&text, name, &builtin(), &[("tiles".into(), 4)]).expect("valid program");
    only(
        name,
        program_errors(name, &[("tils", 4)]),
        &[Want {
            path: "params",
            at: (4, 9),
            words: &["--param tils=4", "no param \"tils\""],
            hint: Some("did you mean \"tiles\"?"),
        }],
    );
}

#[test]
fn unknown_name_in_an_expression() {
    program_case(
        "unknown_name_in_expression.yaml",
        Want {
            path: "body[0].for.to",
            at: (6, 24),
            words: &["unknown name \"tilez\""],
            hint: Some("did you mean \"tiles\"?"),
        },
    );
}

#[test]
fn duplicate_name_across_namespaces() {
    program_case(
        "duplicate_name.yaml",
        Want {
            path: "body[0].for.buffers.x",
            at: (9, 10),
            words: &["\"x\" is already declared at gm.x"],
            hint: Some("share one namespace"),
        },
    );
}

#[test]
fn slot_on_a_buffer_that_is_not_multi() {
    program_case(
        "slot_on_non_multi.yaml",
        Want {
            path: "body[0].load.dst",
            at: (9, 26),
            words: &[
                "\"xb@1\"",
                "xb is not a multi-buffer",
                "slot @1 does not exist",
            ],
            hint: Some("multi: N"),
        },
    );
}

#[test]
fn preload_outside_any_loop() {
    program_case(
        "preload_outside_loop.yaml",
        Want {
            path: "buffers.a.preload",
            at: (5, 54),
            words: &["preload: true", "not declared inside a loop"],
            hint: Some("declare it in the loop's buffers:"),
        },
    );
}

#[test]
fn share_cycle() {
    program_case(
        "share_cycle.yaml",
        Want {
            path: "buffers.a.share",
            at: (5, 52),
            words: &["share cycle: a -> b -> a"],
            hint: None,
        },
    );
}

#[test]
fn fixed_address_not_aligned() {
    program_case(
        "at_misaligned.yaml",
        Want {
            path: "buffers.a.at[1]",
            at: (5, 63),
            words: &["offset 520", "not a multiple of the ub alignment 32"],
            hint: Some("use 512 or 544"),
        },
    );
}

#[test]
fn window_view_past_its_buffer() {
    program_case(
        "window_out_of_bounds.yaml",
        Want {
            path: "views.tail",
            at: (7, 9),
            words: &[
                "128 elements at offset 200",
                "does not fit in a (256 elements)",
            ],
            hint: None,
        },
    );
}

#[test]
fn select_of_mismatched_buffers() {
    program_case(
        "select_mismatch.yaml",
        Want {
            path: "views.either.select[1]",
            at: (8, 25),
            words: &["select mixes a", "f32", "same scope, dtype and shape"],
            hint: None,
        },
    );
}

#[test]
fn config_alignment_not_a_power_of_two() {
    config_case(
        "config_align_not_power_of_two.yaml",
        Want {
            path: "cores.aiv.scopes.ub.align",
            at: (11, 36),
            words: &["alignment 48 is not a power of two"],
            hint: Some("use 32 or 64"),
        },
    );
}

#[test]
fn config_path_pipe_missing_from_the_core() {
    config_case(
        "config_path_pipe_missing.yaml",
        Want {
            path: "paths[0].pipe",
            at: (32, 33),
            words: &["path gm -> ub runs on pipe mte1", "core aiv does not have"],
            hint: Some("add mte1 to the pipes of core aiv"),
        },
    );
}

#[test]
fn config_unknown_key_is_not_also_reported_missing() {
    config_case(
        "config_unknown_key.yaml",
        Want {
            path: "cube.fractal_kbytes",
            at: (68, 19),
            words: &["unknown key \"fractal_kbytes\"", "cube"],
            hint: Some("did you mean \"fractal_k_bytes\"?"),
        },
    );
}

#[test]
fn config_core_without_scalar_pipe() {
    config_case(
        "config_no_scalar_pipe.yaml",
        Want {
            path: "cores.aiv.pipes",
            at: (12, 12),
            words: &["core aiv has no scalar pipe s"],
            hint: Some("add s"),
        },
    );
}

#[test]
fn config_zero_where_a_zero_would_divide() {
    config_case(
        "config_zero_bandwidth.yaml",
        Want {
            path: "paths[1].bytes_per_cycle",
            at: (33, 56),
            words: &["0 is out of range", "must be positive"],
            hint: None,
        },
    );
}

#[test]
fn several_problems_are_reported_at_once() {
    let name = "many_problems.yaml";
    only(
        name,
        program_errors(name, &[]),
        &[
            Want {
                path: "body[0].for.stpe",
                at: (9, 33),
                words: &["unknown key \"stpe\""],
                hint: Some("did you mean \"step\"?"),
            },
            Want {
                path: "body[0].for.buffers.xb.dtype",
                at: (11, 43),
                words: &["unknown dtype \"f61\""],
                hint: Some("did you mean \"f16\"?"),
            },
            Want {
                path: "body[0].for.body[1].vexp.out",
                at: (15, 33),
                words: &["unknown buffer \"ybb\""],
                hint: Some("did you mean \"yb\"?"),
            },
            Want {
                path: "body[0].for.body[2].set_flag.id",
                at: (16, 44),
                words: &["flag id 9 is outside 0..8"],
                hint: None,
            },
            Want {
                path: "body[0].for.body[3].store.dst",
                at: (17, 32),
                words: &["slice end 300", "out of bounds"],
                hint: None,
            },
            Want {
                path: "body[1].vfoo",
                at: (18, 11),
                words: &["unknown op \"vfoo\""],
                hint: None,
            },
        ],
    );
}

#[test]
fn cross_set_mode_out_of_range() {
    program_case(
        "cross_mode_out_of_range.yaml",
        Want {
            path: "body[0].cross_set.mode",
            at: (6, 24),
            words: &["cross_set mode 3 is not 0, 1 or 2"],
            hint: Some("1: the vector cores of one AI core"),
        },
    );
}

#[test]
fn cross_set_mode_1_on_the_cube_core() {
    program_case(
        "cross_mode_1_on_cube.yaml",
        Want {
            path: "body[0].cross_set.mode",
            at: (6, 24),
            words: &["mode 1 pairs the vector cores", "core aic is not"],
            hint: Some("use mode 0 or 2"),
        },
    );
}

#[test]
fn cross_set_mode_2_in_a_single_type_program() {
    program_case(
        "cross_mode_2_single_type.yaml",
        Want {
            path: "body[0].cross_set.mode",
            at: (6, 24),
            words: &[
                "mode 2 signals between the aic and aiv parts",
                "core aiv alone",
            ],
            hint: Some("aic: and aiv: parts"),
        },
    );
}

#[test]
fn cross_flag_id_outside_flag_ids() {
    program_case(
        "cross_id_out_of_range.yaml",
        Want {
            path: "body[1].cross_wait.id",
            at: (7, 23),
            words: &[
                "cross-core flag id block + 10 (can reach 11) is outside 0..11",
                "cross_core.flag_ids of config ascend910b",
            ],
            hint: Some("use ids 0 to 10"),
        },
    );
}

#[test]
fn cross_op_without_a_cross_core_section() {
    program_case(
        "cross_no_cross_core_section.yaml",
        Want {
            path: "body[0].cross_set",
            at: (6, 16),
            words: &["cross_set needs cross-core flags", "no cross_core section"],
            hint: Some("add cross_core: { flag_ids, max_pending, latency }"),
        },
    );
}

#[test]
fn mixed_kernel_with_core_beside_its_parts() {
    program_case(
        "mixed_core_beside_parts.yaml",
        Want {
            path: "core",
            at: (3, 7),
            words: &["core: beside aic:/aiv: in a mixed kernel"],
            hint: Some("drop core:"),
        },
    );
}

#[test]
fn mixed_kernel_missing_a_part() {
    program_case(
        "mixed_missing_part.yaml",
        Want {
            path: "aiv",
            at: (5, 3),
            words: &["a mixed kernel has aiv: but no aic: part"],
            hint: Some("both an aic: (cube) and an aiv: (vector) part"),
        },
    );
}

#[test]
fn mixed_kernel_blocks_count_ai_cores() {
    program_case(
        "mixed_blocks_over_ai_cores.yaml",
        Want {
            path: "launch.blocks",
            at: (3, 19),
            words: &["25 blocks is out of range"],
            hint: Some("24 AI cores: at most 24 blocks of a mixed kernel"),
        },
    );
}

#[test]
fn a_launch_owns_block_blocks_and_subblock() {
    program_case(
        "launch_name_declared.yaml",
        Want {
            path: "params.block",
            at: (6, 25),
            words: &["\"block\" is the launch's", "name a core of the launch"],
            hint: Some("pick another name"),
        },
    );
}

#[test]
fn block_is_not_a_constant() {
    program_case(
        "launch_block_in_shape.yaml",
        Want {
            path: "buffers.xb.shape[0]",
            at: (8, 28),
            words: &["\"block\" differs from core to core", "must be constant"],
            hint: None,
        },
    );
}

#[test]
fn mixed_kernel_needs_a_split_chip() {
    program_case(
        "mixed_needs_split_chip.yaml",
        Want {
            path: "aic",
            at: (4, 3),
            words: &["a mixed kernel needs a split chip"],
            hint: Some("chip: { aic, aiv_per_aic }"),
        },
    );
}

#[test]
fn mixed_kernel_part_problem_path_starts_with_the_part() {
    program_case(
        "mixed_part_problem_is_prefixed.yaml",
        Want {
            path: "aiv.buffers.xb.scope",
            at: (10, 18),
            words: &["scope l1 is not on core aiv"],
            hint: Some("core aiv has scopes: ub"),
        },
    );
}

#[test]
fn mixed_kernel_shared_problem_is_reported_once() {
    program_case(
        "mixed_shared_problem_once.yaml",
        Want {
            path: "gm.x.dtype",
            at: (4, 28),
            words: &["unknown dtype \"f23\""],
            hint: None,
        },
    );
}

#[test]
fn every_fixture_is_rejected_with_located_diagnostics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    for name in names {
        let diags = if name.starts_with("config_") {
            config_errors(&name)
        } else if name == "unknown_param_override.yaml" {
            program_errors(&name, &[("tils", 4)])
        } else {
            program_errors(&name, &[])
        };
        assert!(!diags.is_empty(), "{name}");
        for d in diags {
            assert!(d.line.is_some() && d.column.is_some(), "{name}: {d}");
            assert_eq!(d.file, name);
        }
    }
}

/// Deletes, duplicates and swaps bytes of every fixture (a fixed pseudo-random sequence) and
/// loads the result: whatever the text, loading returns, and a rejection is always located.
#[test]
fn mutated_inputs_never_panic() {
    let cfg = builtin();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad");
    let mut texts: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    texts.sort();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    for round in 0..1500 {
        let (name, text) = &texts[round % texts.len()];
        let mut bytes = text.clone().into_bytes();
        for _ in 0..1 + next(3) {
            let i = next(bytes.len());
            match next(4) {
                0 => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, bytes[i]),
                2 => {
                    let j = next(bytes.len());
                    bytes.swap(i, j);
                }
                _ => bytes.insert(i, b"-[:@,]{}0\n "[next(11)]),
            }
        }
        let Ok(mutated) = String::from_utf8(bytes) else {
            continue;
        };
        let result = if name.starts_with("config_") {
            sim::load_config(&mutated, name).map(|_| ())
        } else {
            sim::load_kernel(&mutated, name, &cfg, &[], None).map(|_| ())
        };
        if let Err(e) = result {
            assert!(!e.diagnostics.is_empty());
            for d in &e.diagnostics {
                assert!(d.line.is_some(), "{name} round {round}: {d}\n{mutated}");
            }
        }
    }
}
