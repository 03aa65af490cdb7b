//! `npusim check --format json`: one document on stdout for every outcome (clean, warnings,
//! bad program or config, bad arguments, an overflow), with the problems the text form shows,
//! and the text form's exit codes. And `npusim configs --show`.

use crate::{npusim, root, stderr, stdout};
use serde_json::Value;
use std::process::Output;

const PROBLEM_KEYS: [&str; 7] = [
    "severity", "file", "line", "column", "path", "message", "help",
];

/// Runs `check ARGS --format json`; returns the output and its document, checked for the keys
/// every check document has, in order, and for the promise that stderr says only that it
/// failed.
fn check_json(args: &[&str]) -> (Output, Value) {
    let mut full = vec!["check"];
    full.extend(args);
    full.extend(["--format", "json"]);
    let o = npusim(&full);
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{full:?}: not JSON ({e}):\n{}", stdout(&o)));
    let keys = crate::keys(&doc);
    assert_eq!(
        keys,
        ["schema", "file", "ok", "kernel", "ops", "buffers", "problems", "plan"],
        "{full:?}"
    );
    assert_eq!(doc["schema"], 1);
    for p in doc["problems"].as_array().unwrap() {
        let keys = crate::keys(p);
        assert_eq!(keys, PROBLEM_KEYS, "{full:?}");
        assert!(
            p["severity"] == "error" || p["severity"] == "warning",
            "{p}"
        );
    }
    // ok exactly when the exit code is 0; then stderr is empty, else one summary line
    let code = o.status.code();
    assert_eq!(doc["ok"], code == Some(0), "{full:?}: {code:?}");
    let err = stderr(&o);
    if code == Some(0) {
        assert!(err.is_empty(), "{full:?}: {err}");
    } else {
        assert_eq!(err.lines().count(), 1, "{full:?}: {err}");
        assert!(
            err.ends_with("; see the JSON document\n"),
            "{full:?}: {err}"
        );
    }
    (o, doc)
}

fn problems(doc: &Value) -> &Vec<Value> {
    doc["problems"].as_array().unwrap()
}

#[test]
fn a_clean_program_is_ok_with_its_plan() {
    let (o, doc) = check_json(&["programs/vec_add_db.yaml", "--param", "n=4096"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(doc["file"], "programs/vec_add_db.yaml");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["kernel"], "vec_add_db");
    assert_eq!(doc["ops"], 5);
    assert_eq!(doc["buffers"], 3);
    assert_eq!(doc["problems"], serde_json::json!([]));
    // the plan is the plan document `plan --format json` prints
    let plan = npusim(&[
        "plan",
        "programs/vec_add_db.yaml",
        "--param",
        "n=4096",
        "--format",
        "json",
    ]);
    assert_eq!(
        doc["plan"],
        serde_json::from_slice::<Value>(&plan.stdout).unwrap()
    );
    insta::assert_snapshot!(stdout(&o));

    // text stays the default
    let text = npusim(&["check", "programs/vec_add_db.yaml", "--param", "n=4096"]);
    let explicit = npusim(&[
        "check",
        "programs/vec_add_db.yaml",
        "--param",
        "n=4096",
        "--format",
        "text",
    ]);
    assert_eq!(text.stdout, explicit.stdout);
    assert!(stdout(&text).starts_with("ok: vec_add_db (5 ops, 3 buffers); plan: ub 49152"));
}

#[test]
fn plan_warnings_are_problems_of_severity_warning_and_still_ok() {
    let (o, doc) = check_json(&["programs/vec_add_sb_manual.yaml", "--capacity", "ub=80KiB"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(doc["ok"], true);
    let ps = problems(&doc);
    assert_eq!(ps.len(), 1, "{doc}");
    assert_eq!(ps[0]["severity"], "warning");
    assert_eq!(ps[0]["file"], "programs/vec_add_sb_manual.yaml");
    assert_eq!(ps[0]["message"], doc["plan"]["warnings"][0]);
    // the text form prints the same warning
    let text = npusim(&[
        "check",
        "programs/vec_add_sb_manual.yaml",
        "--capacity",
        "ub=80KiB",
    ]);
    let message = ps[0]["message"].as_str().unwrap();
    assert!(
        stdout(&text).contains(&format!("warning: {message}\n")),
        "{}",
        stdout(&text)
    );
}

#[test]
fn a_bad_program_lists_every_problem_with_its_place() {
    let file = "tests/fixtures/several_problems.yaml";
    let (o, doc) = check_json(&[file]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["kernel"], Value::Null);
    assert_eq!(doc["plan"], Value::Null);
    let found: Vec<(u64, u64, &str, &str, &str)> = problems(&doc)
        .iter()
        .map(|p| {
            assert_eq!(p["file"], file);
            assert_eq!(p["severity"], "error");
            (
                p["line"].as_u64().unwrap(),
                p["column"].as_u64().unwrap(),
                p["path"].as_str().unwrap(),
                p["message"].as_str().unwrap(),
                p["help"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                10,
                39,
                "buffers.xb.dtype",
                "unknown dtype \"f17\"",
                "did you mean \"f16\"?"
            ),
            (
                16,
                29,
                "body[3].vabs.out",
                "unknown buffer \"zbb\"",
                "did you mean \"zb\"?"
            ),
            (17, 11, "body[4].vfoo", "unknown op \"vfoo\"", "-"),
        ]
    );
    assert_eq!(
        stderr(&o),
        format!("error: {file}: 3 problems; see the JSON document\n")
    );
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn an_overflow_is_one_problem_at_the_peak_exit_1() {
    let (o, doc) = check_json(&["tests/fixtures/overflow.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(doc["kernel"], "overflow");
    assert_eq!(doc["plan"], Value::Null);
    let ps = problems(&doc);
    assert_eq!(ps.len(), 1);
    assert!(ps[0]["message"].as_str().unwrap().starts_with(
        // 2 MiB needed (2097152 bits / 8), 192 KiB available (the 910B's UB)
        "ub overflow, requires 2097152 bits while 1572864 bits available! \
             (262144 bytes needed, 196608 available)\n"
    ));
    assert_eq!(ps[0]["path"], "body[1]");
    assert_eq!(
        (ps[0]["line"].as_u64(), ps[0]["column"].as_u64()),
        (Some(17), Some(5))
    );
    assert!(ps[0]["help"].as_str().unwrap().contains("smaller"));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn check_refuses_the_gm_layout_run_refuses() {
    // ascend910b lays gm out in 512-byte lines and models 2^31 of them: x and y, 2^38 f16
    // elements each (2^39 bytes = 2^30 lines), fill it exactly; z (128 bytes, 1 line) makes it
    // 2^31 + 1 = 2147483649. `check` says so at z, as `run` does, both exit 2 (check once ran
    // its plan and said ok; only run's engine refused the layout).
    let file = "tests/fixtures/bad/gm_beyond_memory_model.yaml";
    let (o, doc) = check_json(&[file]);
    assert_eq!(o.status.code(), Some(2));
    let ps = problems(&doc);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(ps[0]["path"], "gm.z");
    assert_eq!(
        (ps[0]["line"].as_u64(), ps[0]["column"].as_u64()),
        (Some(7), Some(6))
    );
    let message = "the gm tensors up to z take 2147483649 lines of 512 bytes, more than the \
                   memory system models (2^31 = 2147483648 lines)";
    assert_eq!(ps[0]["message"], message);
    let text = npusim(&["check", file]);
    let run = npusim(&["run", file]);
    for o in [&text, &run] {
        assert_eq!(o.status.code(), Some(2));
        assert!(stdout(o).is_empty());
        // miette wraps the message (a `│` starts the next line); the words are the same
        let err: String = stderr(o)
            .split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            err.contains(&message.split_whitespace().collect::<Vec<_>>().join(" "))
                && err.contains("╰── gm.z"),
            "{err}"
        );
    }
    assert_eq!(stderr(&text), stderr(&run));
}

#[test]
fn argument_problems_have_no_file() {
    for (args, code, words) in [
        (
            vec!["programs/vec_add_db.yaml", "--config", "ascend310p"],
            2,
            "unknown config `ascend310p`",
        ),
        (
            vec!["programs/vec_add_db.yaml", "--level", "best"],
            2,
            "--level best",
        ),
        (
            vec!["programs/vec_add_db.yaml", "--capacity", "l1=1KiB"],
            2,
            "core aiv has no l1 scope",
        ),
    ] {
        let (o, doc) = check_json(&args);
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let ps = problems(&doc);
        assert_eq!(ps.len(), 1, "{args:?}: {doc}");
        assert_eq!(ps[0]["file"], Value::Null, "{args:?}");
        assert_eq!(ps[0]["line"], Value::Null, "{args:?}");
        assert!(
            ps[0]["message"].as_str().unwrap().contains(words),
            "{args:?}: {doc}"
        );
    }
    // an unreadable file is a problem of that file
    let (o, doc) = check_json(&["tests/fixtures/no_such_program.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        problems(&doc)[0]["file"],
        "tests/fixtures/no_such_program.yaml"
    );
}

/// The command a `tests/fixtures/bad/` fixture is checked with (the rules of `bad_inputs.rs`),
/// or `None` for a fixture that is not a `check`.
fn bad_fixture_args(name: &str) -> Option<Vec<String>> {
    let path = format!("tests/fixtures/bad/{name}");
    let bytes = std::fs::read(root().join(&path)).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    let (first, second) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    let command = if name.ends_with(".args") {
        second.to_string()
    } else if let Some(args) = second.strip_prefix("# args: ") {
        args.to_string()
    } else if first.starts_with("# config: ") {
        format!("check programs/vec_add_db.yaml --config {path}")
    } else if ["# run: ", "# run finding: ", "# run warning: "]
        .iter()
        .any(|m| first.starts_with(m))
    {
        // only a run finds these
        return None;
    } else {
        "check {file}".to_string()
    };
    let args: Vec<String> = command
        .replace("{file}", &path)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    (args[0] == "check").then_some(args)
}

/// Without whitespace and miette's box drawing: what is left of a message after wrapping.
fn squeeze(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '│' | '·' | '×' | '╭' | '╰' | '─'))
        .collect()
}

#[test]
fn every_bad_fixture_gives_a_document_with_the_problems_the_text_shows() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("tests/fixtures/bad"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".args"))
        .collect();
    names.sort();
    let mut checked = 0;
    for name in &names {
        let Some(args) = bad_fixture_args(name) else {
            continue;
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = npusim(&args);
        let err = stderr(&text);
        if err.contains("For more information, try '--help'") {
            // an argument the command line cannot parse: no document, in either format
            let mut json = args.clone();
            json.extend(["--format", "json"]);
            let o = npusim(&json);
            assert_eq!(o.status.code(), Some(2), "{name}");
            assert!(o.stdout.is_empty(), "{name}");
            continue;
        }
        let (o, doc) = check_json(&args[1..]);
        assert_eq!(o.status.code(), text.status.code(), "{name}");
        assert_eq!(doc["ok"], false, "{name}");
        let ps = problems(&doc);
        assert!(!ps.is_empty(), "{name}");
        // as many problems as the text counts, each message and place in the text
        if let Some(n) = err
            .lines()
            .next()
            .and_then(|l| l.split(" rejected: ").nth(1))
            .and_then(|r| r.split(' ').next())
        {
            assert_eq!(ps.len().to_string(), n, "{name}: {doc}\n{err}");
        }
        let squeezed = squeeze(&err);
        for p in ps {
            // the text shows input text escaped (sim::text::shown); JSON holds it as it is
            let message = &sim::text::shown(p["message"].as_str().unwrap()).into_owned();
            assert!(
                squeezed.contains(&squeeze(message)),
                "{name}: {message:?} is not in\n{err}"
            );
            if let (Some(file), Some(line), Some(column)) =
                (p["file"].as_str(), p["line"].as_u64(), p["column"].as_u64())
            {
                let place = format!("{file}:{line}:{column}");
                assert!(err.contains(&place), "{name}: {place} is not in\n{err}");
            }
            if let Some(help) = p["help"].as_str().map(sim::text::shown) {
                assert!(
                    squeezed.contains(&squeeze(&help)),
                    "{name}: {help:?} is not in\n{err}"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} check fixtures");
}

#[test]
fn configs_show_prints_a_built_in_config_that_loads_back() {
    let o = npusim(&["configs", "--show", "ascend910b"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        sim::builtin::builtin("ascend910b").unwrap(),
        "verbatim"
    );
    let dir = crate::scratch("check-cli");
    let mine = dir.join("my.yaml");
    std::fs::write(&mine, &o.stdout).unwrap();
    let mine = mine.to_string_lossy().into_owned();

    let db = "programs/vec_add_db.yaml";
    let (checked, _) = check_json(&[db, "--config", &mine]);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    // the copy runs exactly as the built-in
    let copy = npusim(&["run", db, "--config", &mine, "--format", "json"]);
    let builtin = npusim(&["run", db, "--format", "json"]);
    assert_eq!(copy.status.code(), Some(0), "{}", stderr(&copy));
    assert_eq!(copy.stdout, builtin.stdout);
}

#[test]
fn configs_show_of_an_unknown_name_lists_the_built_in_ones() {
    // one letter more than ascend910b, two more than ascend910: the hint is the nearer one
    let o = npusim(&["configs", "--show", "ascend910bb"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert_eq!(
        stderr(&o),
        "error: configs --show ascend910bb: no built-in config `ascend910bb`; the built-in \
         configs are ascend910b, ascend910 (hint: did you mean `ascend910b`?)\n"
    );
    let o = npusim(&["configs", "--show", "gpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the built-in configs are ascend910b, ascend910"),
        "{}",
        stderr(&o)
    );
}

/// Every JSON or YAML document npusim prints starts with `schema: 1`.
#[test]
fn every_document_starts_with_its_schema() {
    let db = "programs/vec_add_db_manual.yaml";
    let first_key = |bytes: &[u8]| -> (String, Value) {
        let v: Value = serde_json::from_slice(bytes).unwrap();
        let (k, v) = v.as_object().unwrap().iter().next().unwrap();
        (k.clone(), v.clone())
    };
    let schema = ("schema".to_string(), Value::from(1));
    for args in [
        vec!["run", db, "--format", "json"],
        vec!["plan", db, "--format", "json"],
        vec!["check", db, "--format", "json"],
        vec!["check", "tests/fixtures/overflow.yaml", "--format", "json"],
    ] {
        assert_eq!(first_key(&npusim(&args).stdout), schema, "{args:?}");
    }
    let yaml = npusim(&["plan", db, "--format", "yaml"]);
    assert!(
        stdout(&yaml).starts_with("schema: 1\nkernel: "),
        "{}",
        stdout(&yaml)
    );
    let list = npusim(&[
        "compare",
        "tests/fixtures/overflow.yaml",
        "--levels",
        "2",
        "--format",
        "json",
    ]);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    for entry in list.as_array().unwrap() {
        assert_eq!(
            first_key(serde_json::to_string(entry).unwrap().as_bytes()),
            schema
        );
    }
}
