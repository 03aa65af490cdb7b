//! The plan document (docs/json.md): what `npusim plan` prints and what the snapshot
//! tests store, as YAML, JSON or a readable table.

use crate::table::{Align, Table};
use planner::{BufferPlan, Interval, Plan, ScopePlan};
use serde_json::{json, Map, Value};
use sim::Program;

/// The plan as a JSON value: `schema`, `kernel`, `config`, `level`, `liveness`, `scopes` (in
/// scope order: `capacity`, `required`, `used`, `peak_live`, `mode`), `buffers` (in declaration
/// order: `scope`, `bytes`, `offsets`, `level`) and `warnings`. The same document, `schema`
/// included, is the `plan` of a run document and of a check document.
pub fn plan_json(program: &Program, plan: &Plan) -> Value {
    let mut scopes = Map::new();
    for s in sorted_scopes(plan) {
        scopes.insert(
            s.space.yaml_name().to_string(),
            json!({
                "capacity": s.capacity,
                "required": s.required,
                "used": s.used,
                "peak_live": s.peak_live,
                "mode": s.mode.name(),
            }),
        );
    }
    let mut buffers = Map::new();
    for (key, b) in buffer_rows(program, plan) {
        buffers.insert(
            key,
            json!({
                "scope": b.scope.yaml_name(),
                "bytes": b.bytes,
                "offsets": b.offsets,
                "level": b.placed_by.name(),
            }),
        );
    }
    json!({
        "schema": crate::SCHEMA,
        "kernel": plan.kernel,
        "config": plan.config,
        "level": plan.level,
        "liveness": plan.liveness.name(),
        "scopes": scopes,
        "buffers": buffers,
        "warnings": plan.warnings,
    })
}

/// The plan document as YAML.
pub fn plan_yaml(program: &Program, plan: &Plan) -> String {
    sim::yaml::to_string(&plan_json(program, plan))
}

/// One planned part of a kernel, as the kernel's plan documents read it.
#[derive(Clone, Copy, Debug)]
pub struct PlanPart<'a> {
    /// The name of the part's core type (`aic`, `aiv`): the part's name in a mixed kernel.
    pub core: &'a str,
    pub program: &'a Program,
    pub plan: &'a Plan,
}

/// The plan document of a kernel (docs/json.md): for a single-type kernel (one part) the plan
/// document of [`plan_json`], unchanged; for a mixed kernel `schema`, `kernel`, `level`,
/// `liveness`, then `parts`: one `{core, plan}` per part in kernel order (`aic`, then `aiv`),
/// `plan` being that part's plan document, `schema` included (the shape of the run
/// document's `launch.parts`).
pub fn kernel_plan_json(parts: &[PlanPart]) -> Value {
    match parts {
        [one] => plan_json(one.program, one.plan),
        _ => {
            let first = parts.first().map(|p| p.plan);
            json!({
                "schema": crate::SCHEMA,
                "kernel": first.map(|p| p.kernel.as_str()),
                "level": first.map(|p| p.level),
                "liveness": first.map(|p| p.liveness.name()),
                "parts": parts
                    .iter()
                    .map(|p| json!({ "core": p.core, "plan": plan_json(p.program, p.plan) }))
                    .collect::<Vec<_>>(),
            })
        }
    }
}

/// [`kernel_plan_json`] as YAML.
pub fn kernel_plan_yaml(parts: &[PlanPart]) -> String {
    sim::yaml::to_string(&kernel_plan_json(parts))
}

/// The plan of a kernel as readable tables: for a single-type kernel [`plan_text`]; for a
/// mixed kernel one section per part headed `== aic ==` / `== aiv ==` (the part's
/// [`plan_text`] without the legend), then the legend once.
pub fn kernel_plan_text(parts: &[PlanPart]) -> String {
    if let [one] = parts {
        return plan_text(one.program, one.plan);
    }
    let mut out = String::new();
    for p in parts {
        out.push_str(&format!("== {} ==\n\n", p.core));
        out.push_str(&tables(p.program, p.plan));
        out.push_str(&warnings_lines(p.plan));
        out.push('\n');
    }
    out.push_str(&legend_lines());
    out
}

/// The plan as readable tables: one row per scope, then one row per buffer (grouped by scope,
/// in declaration order), then the warnings.
pub fn plan_text(program: &Program, plan: &Plan) -> String {
    let mut out = tables(program, plan);
    out.push_str(&legend_lines());
    out.push('\n');
    out.push_str(&warnings_lines(plan));
    out
}

/// `warnings: none`, or `warnings:` and one indented line per warning.
fn warnings_lines(plan: &Plan) -> String {
    if plan.warnings.is_empty() {
        return "warnings: none\n".into();
    }
    let mut out = "warnings:\n".to_string();
    for w in &plan.warnings {
        out.push_str(&format!("  {w}\n"));
    }
    out
}

/// The header lines and the scope and buffer tables of [`plan_text`], each followed by a blank
/// line.
fn tables(program: &Program, plan: &Plan) -> String {
    let mut out = String::new();
    out.push_str(&format!("kernel   {}\n", plan.kernel));
    out.push_str(&format!("config   {}\n", plan.config));
    out.push_str(&format!(
        "level    {} (highest reuse level allowed)\n",
        plan.level
    ));
    out.push_str(&format!("liveness {}\n", plan.liveness.name()));
    out.push('\n');

    let mut scopes = Table::new(vec![
        ("scope".into(), Align::Left),
        ("capacity".into(), Align::Right),
        ("required".into(), Align::Right),
        ("used".into(), Align::Right),
        ("used %".into(), Align::Right),
        ("peak live".into(), Align::Right),
        ("mode".into(), Align::Left),
    ]);
    for s in sorted_scopes(plan) {
        scopes.row(vec![
            s.space.report_name().to_string(),
            s.capacity.to_string(),
            s.required.to_string(),
            s.used.to_string(),
            crate::percent(s.used, s.capacity),
            s.peak_live.to_string(),
            s.mode.name().to_string(),
        ]);
    }
    out.push_str(&scopes.render(""));
    out.push('\n');

    let rows = buffer_rows(program, plan);
    if rows.is_empty() {
        out.push_str("no on-chip buffers\n");
    } else {
        let mut buffers = Table::new(vec![
            ("scope".into(), Align::Left),
            ("buffer".into(), Align::Left),
            ("bytes".into(), Align::Right),
            ("offsets".into(), Align::Left),
            ("placed by".into(), Align::Left),
            ("live".into(), Align::Left),
        ]);
        let cells = |key: &String, b: &BufferPlan| {
            vec![
                b.scope.report_name().to_string(),
                key.clone(),
                b.bytes.to_string(),
                b.offsets
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                b.placed_by.name().to_string(),
                live_range(&b.live),
            ]
        };
        for s in sorted_scopes(plan) {
            for (key, b) in rows.iter().filter(|(_, b)| b.scope == s.space) {
                buffers.row(cells(key, b));
            }
        }
        // buffers of a scope the plan has no entry for (not expected; never dropped silently)
        for (key, b) in rows
            .iter()
            .filter(|(_, b)| plan.scopes.iter().all(|s| s.space != b.scope))
        {
            buffers.row(cells(key, b));
        }
        out.push_str(&buffers.render(""));
    }
    out.push('\n');
    out
}

fn legend_lines() -> String {
    [
        "capacity   bytes the scope holds",
        "required   bytes the scope needs without reuse (every buffer slot, aligned, added up)",
        "used       the end of the highest planned slot",
        "peak live  the most bytes live at one position (every slot of every live buffer)",
        "bytes      one slot of the buffer, rounded up to the scope alignment",
        "offsets    byte offset of each slot; slot k serves loop iterations i with i % slots = k",
        "placed by  sequential: running sum, no reuse; fixed: `at:` in the program;",
        "           inplace: takes the address of an input that dies at the op writing it;",
        "           2, 1, 0: the reuse planner, under that level's rule: 2 shares bytes only",
        "           within a pipeline class, 1 also takes a multi-buffer's slots (upgrading a",
        "           single buffer), 0 shares by lifetime alone (a buffer on bytes nobody else",
        "           held shows the highest level tried)",
        "live       positions (program order, loops and ifs add begin/end) where it is live",
        "           (`npusim plan --explain BUFFER` says why a buffer got its address)",
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

/// `3..12`, `3..5, 8..9`, or `-` for a buffer never live.
pub(crate) fn live_range(live: &[Interval]) -> String {
    if live.is_empty() {
        return "-".into();
    }
    live.iter()
        .map(|i| format!("{}..{}", i.first, i.last))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sorted_scopes(plan: &Plan) -> Vec<&ScopePlan> {
    let mut v: Vec<&ScopePlan> = plan.scopes.iter().collect();
    v.sort_by_key(|s| s.space);
    v
}

/// Every planned buffer with the key it is reported under, in declaration order. The key is the
/// buffer's name, or its declaration path when two buffers of the program share a name.
pub(crate) fn buffer_rows<'a>(program: &Program, plan: &'a Plan) -> Vec<(String, &'a BufferPlan)> {
    let name_of = |b: &BufferPlan| -> (String, String) {
        match program.buffers.get(b.buffer.index()) {
            Some(buf) => (buf.name.clone(), buf.path.clone()),
            None => (b.buffer.to_string(), b.buffer.to_string()),
        }
    };
    let mut rows: Vec<&BufferPlan> = plan.buffers.iter().collect();
    rows.sort_by_key(|b| b.buffer);
    let names: Vec<(String, String)> = rows.iter().map(|b| name_of(b)).collect();
    rows.iter()
        .zip(&names)
        .map(|(b, (name, path))| {
            let shared = names.iter().filter(|(n, _)| n == name).count() > 1;
            let key = if shared { path.clone() } else { name.clone() };
            (key, *b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn json_keeps_document_order() {
        let (program, plan) = (program_db(), plan_db());
        let doc = plan_json(&program, &plan);
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["schema", "kernel", "config", "level", "liveness", "scopes", "buffers", "warnings"]
        );
        assert_eq!(doc["schema"], crate::SCHEMA);
        let bufs: Vec<&String> = doc["buffers"].as_object().unwrap().keys().collect();
        assert_eq!(bufs, ["xb", "yb", "zb"]);
        assert_eq!(doc["buffers"]["yb"]["offsets"], json!([32768, 131072]));
        assert_eq!(doc["scopes"]["ub"]["mode"], "sequential");
    }

    #[test]
    fn yaml_document() {
        let (program, plan) = (program_db(), plan_db());
        insta::assert_snapshot!(plan_yaml(&program, &plan));
    }

    #[test]
    fn text_document() {
        let (program, plan) = (program_db(), plan_db());
        insta::assert_snapshot!(plan_text(&program, &plan));
    }

    #[test]
    fn a_single_part_kernel_prints_the_plan_document_unchanged() {
        let (program, plan) = (program_db(), plan_db());
        let one = [PlanPart {
            core: "aiv",
            program: &program,
            plan: &plan,
        }];
        assert_eq!(kernel_plan_json(&one), plan_json(&program, &plan));
        assert_eq!(kernel_plan_yaml(&one), plan_yaml(&program, &plan));
        assert_eq!(kernel_plan_text(&one), plan_text(&program, &plan));
    }

    #[test]
    fn a_mixed_kernel_lists_its_parts() {
        // two parts; the second with a warning and its own level, as a plan of another core
        let (program, plan) = (program_db(), plan_db());
        let mut other = plan_db();
        other.config = "ascend910b/aic".into();
        other.warnings = vec!["DMA buffers reused".into()];
        let parts = [
            PlanPart {
                core: "aic",
                program: &program,
                plan: &other,
            },
            PlanPart {
                core: "aiv",
                program: &program,
                plan: &plan,
            },
        ];
        let doc = kernel_plan_json(&parts);
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["schema", "kernel", "level", "liveness", "parts"]);
        assert_eq!(doc["schema"], crate::SCHEMA);
        assert_eq!(doc["kernel"], "vec_add_db");
        assert_eq!(doc["level"], plan.level);
        assert_eq!(doc["liveness"], "precise");
        assert_eq!(
            doc["parts"],
            json!([
                { "core": "aic", "plan": plan_json(&program, &other) },
                { "core": "aiv", "plan": plan_json(&program, &plan) },
            ])
        );
        assert_eq!(doc["parts"][0]["plan"]["config"], "ascend910b/aic");

        let text = kernel_plan_text(&parts);
        let aic = text.find("== aic ==\n").expect("an aic section");
        let aiv = text.find("== aiv ==\n").expect("an aiv section");
        assert!(aic == 0 && aic < aiv, "{text}");
        // each section its own warnings; the legend once, at the end
        assert!(
            text[..aiv].contains("warnings:\n  DMA buffers reused\n"),
            "{text}"
        );
        assert!(text[aiv..].contains("warnings: none\n"), "{text}");
        assert_eq!(text.matches("capacity   bytes the scope holds").count(), 1);
        assert!(text.ends_with(&legend_lines()), "{text}");
    }

    #[test]
    fn duplicate_names_are_keyed_by_path() {
        let mut program = program_db();
        program.buffers[2].name = "xb".into();
        let plan = plan_db();
        let doc = plan_json(&program, &plan);
        let bufs: Vec<&String> = doc["buffers"].as_object().unwrap().keys().collect();
        assert_eq!(
            bufs,
            ["body[0].for.buffers.xb", "yb", "body[0].for.buffers.zb"]
        );
    }
}
