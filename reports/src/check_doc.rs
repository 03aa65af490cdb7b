//! The check document (`npusim check --format json`, docs/json.md): whether a program loads and
//! plans, and every problem found, each with its place.

use crate::PlanPart;
use serde_json::{json, Value};
use sim::diag::{Diagnostic, Severity};
use sim::Program;

/// What `npusim check` found, as the check document reads it.
#[derive(Clone, Copy, Debug)]
pub struct Check<'a> {
    /// The program file as named on the command line.
    pub file: &'a str,
    /// The kernel's parts (one for a single-type program), when it loaded; empty otherwise.
    pub parts: &'a [&'a Program],
    /// Every part with its plan, when every part planned.
    pub plan: Option<&'a [PlanPart<'a>]>,
    /// Every problem, in the order the text form shows them: errors, and warnings (the plan's
    /// warnings come last).
    pub problems: &'a [Diagnostic],
}

/// The check document: `schema`, `file`, `ok` (no problem is an error), `kernel`, `ops`,
/// `buffers` (`null` when the program did not load; a mixed kernel's ops and buffers are
/// those of both parts together), `problems` ([`diagnostic_json`] each) and `plan` (the
/// kernel's plan document, [`crate::kernel_plan_json`]; `null` when it did not plan).
pub fn check_json(check: &Check) -> Value {
    let ok = check.problems.iter().all(|d| d.severity != Severity::Error);
    let loaded = !check.parts.is_empty();
    let sum =
        |f: fn(&Program) -> usize| loaded.then(|| check.parts.iter().map(|p| f(p)).sum::<usize>());
    json!({
        "schema": crate::SCHEMA,
        "file": check.file,
        "ok": ok,
        "kernel": check.parts.first().map(|p| p.kernel.as_str()),
        "ops": sum(|p| p.ops.len()),
        "buffers": sum(|p| p.buffers.len()),
        "problems": check.problems.iter().map(diagnostic_json).collect::<Vec<_>>(),
        "plan": match (loaded, check.plan) {
            (true, Some(parts)) => crate::kernel_plan_json(parts),
            _ => Value::Null,
        },
    })
}

/// One problem: `severity` (`error` or `warning`), `file` (`null` for a problem with the
/// command line itself, such as an unknown config name), `line` and `column` (1-based, `null`
/// where unknown), `path` (the YAML path of the node, `null` for none), `message` and `help`
/// (what to do, `null` when there is no hint).
pub fn diagnostic_json(d: &Diagnostic) -> Value {
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    json!({
        "severity": match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        "file": non_empty(&d.file),
        "line": d.line,
        "column": d.column,
        "path": non_empty(&d.path),
        "message": d.message,
        "help": d.hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn a_clean_check_holds_the_plan() {
        let (program, plan) = (program_db(), plan_db());
        let part = PlanPart {
            core: "aiv",
            program: &program,
            plan: &plan,
        };
        let doc = check_json(&Check {
            file: "p.yaml",
            parts: &[&program],
            plan: Some(&[part]),
            problems: &[],
        });
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["schema", "file", "ok", "kernel", "ops", "buffers", "problems", "plan"]
        );
        assert_eq!(doc["schema"], crate::SCHEMA);
        assert_eq!(doc["ok"], true);
        assert_eq!(doc["kernel"], "vec_add_db");
        assert_eq!(doc["ops"], 6);
        assert_eq!(doc["buffers"], 3);
        assert_eq!(doc["problems"], json!([]));
        assert_eq!(doc["plan"], crate::plan_json(&program, &plan));
    }

    #[test]
    fn a_mixed_kernel_counts_both_parts_and_holds_the_kernels_plan() {
        let (program, plan) = (program_db(), plan_db());
        let mut other = program_db();
        other.ops.truncate(2);
        let parts = [
            PlanPart {
                core: "aic",
                program: &other,
                plan: &plan,
            },
            PlanPart {
                core: "aiv",
                program: &program,
                plan: &plan,
            },
        ];
        let doc = check_json(&Check {
            file: "k.yaml",
            parts: &[&other, &program],
            plan: Some(&parts),
            problems: &[],
        });
        assert_eq!(doc["ok"], true);
        assert_eq!(doc["ops"], 2 + 6);
        assert_eq!(doc["buffers"], 3 + 3);
        assert_eq!(doc["plan"], crate::kernel_plan_json(&parts));
        assert_eq!(doc["plan"]["parts"][1]["core"], "aiv");
    }

    #[test]
    fn problems_keep_their_place_and_warnings_do_not_fail() {
        let mut located = Diagnostic::error("p.yaml", "body[0].vadd.out", "unknown buffer \"zbb\"")
            .with_hint("did you mean \"zb\"?");
        located.line = Some(3);
        located.column = Some(30);
        let argument = Diagnostic::error("", "", "unknown config `x`");
        let mut warning = Diagnostic::error("p.yaml", "", "DMA buffers reused");
        warning.severity = Severity::Warning;

        let doc = |problems: &[Diagnostic]| {
            check_json(&Check {
                file: "p.yaml",
                parts: &[],
                plan: None,
                problems,
            })
        };
        let failed = doc(&[located.clone(), argument.clone()]);
        assert_eq!(failed["ok"], false);
        assert_eq!(failed["kernel"], Value::Null);
        assert_eq!(failed["plan"], Value::Null);
        assert_eq!(
            failed["problems"][0],
            json!({"severity": "error", "file": "p.yaml", "line": 3, "column": 30,
                   "path": "body[0].vadd.out", "message": "unknown buffer \"zbb\"",
                   "help": "did you mean \"zb\"?"})
        );
        assert_eq!(
            failed["problems"][1],
            json!({"severity": "error", "file": null, "line": null, "column": null,
                   "path": null, "message": "unknown config `x`", "help": null})
        );
        let keys: Vec<&String> = failed["problems"][0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["severity", "file", "line", "column", "path", "message", "help"]
        );

        let warned = doc(&[warning]);
        assert_eq!(warned["ok"], true);
        assert_eq!(warned["problems"][0]["severity"], "warning");
    }
}
