//! Chip config loading (docs/config.md). Each section is read independently so that a problem in
//! one does not hide problems in another; the cross-checks (paths against cores) run only on
//! the parts that parsed.

use super::reader::{index, join, suggest, Reader};
use crate::config::{
    ChipConfig, Config, CoreConfig, CrossCoreConfig, CubeConfig, LaunchCost, MemoryConfig,
    PathConfig, ScalarConfig, ScopeConfig, SyncConfig, UbBanks, VecCost, VectorConfig,
};
use crate::limits;
use crate::program::VecOp;
use crate::types::{Pipe, Space};
use crate::yaml::Node;

const TOP_REQUIRED: &[&str] = &[
    "name",
    "clock_mhz",
    "cores",
    "queue_depth",
    "scalar",
    "sync",
    "paths",
    "vector",
    "cube",
];

pub(crate) fn config(r: &mut Reader, root: &Node) -> Option<Config> {
    let f = r.map(
        root,
        "",
        "a chip config",
        TOP_REQUIRED,
        &[
            "description",
            "ub_banks",
            "memory",
            "chip",
            "cross_core",
            "launch_cost",
        ],
    )?;
    let name = f
        .get("name")
        .and_then(|n| r.string(n, "name", "a config name"));
    if name == Some("") {
        r.error("name", "the config name is empty");
    }
    if let Some(n) = name {
        r.name_ok(n, "name");
    }
    let description = match f.get("description") {
        Some(n) => r
            .string(n, "description", "a description")
            .map(str::to_string),
        None => Some(String::new()),
    };
    let clock_mhz = f.get("clock_mhz").and_then(|n| r.u32(n, "clock_mhz", true));
    let cores = f.get("cores").and_then(|n| cores(r, n));
    let queue_depth = f
        .get("queue_depth")
        .and_then(|n| r.int_in(n, "queue_depth", 1, limits::MAX_QUEUE_DEPTH as i64))
        .map(|v| v as u32);
    let scalar = f.get("scalar").and_then(|n| {
        let g = r.map(
            n,
            "scalar",
            "the scalar unit",
            &["issue_cycles", "loop_cycles", "branch_cycles"],
            &["gm_latency"],
        )?;
        let issue = g
            .get("issue_cycles")
            .and_then(|n| r.u32(n, &g.path("issue_cycles"), false));
        let lp = g
            .get("loop_cycles")
            .and_then(|n| r.u32(n, &g.path("loop_cycles"), false));
        let br = g
            .get("branch_cycles")
            .and_then(|n| r.u32(n, &g.path("branch_cycles"), false));
        let gm_latency = match g.get("gm_latency") {
            Some(n) => Some(r.u32(n, &g.path("gm_latency"), false)?),
            None => None,
        };
        Some(ScalarConfig {
            issue_cycles: issue?,
            loop_cycles: lp?,
            branch_cycles: br?,
            gm_latency,
        })
    });
    let sync = f.get("sync").and_then(|n| {
        let g = r.map(n, "sync", "sync", &["event_ids", "flag_latency"], &[])?;
        let ids = g
            .get("event_ids")
            .and_then(|n| r.int_in(n, &g.path("event_ids"), 1, limits::MAX_EVENT_IDS as i64))
            .map(|v| v as u32);
        let lat = g
            .get("flag_latency")
            .and_then(|n| r.u32(n, &g.path("flag_latency"), false));
        Some(SyncConfig {
            event_ids: ids?,
            flag_latency: lat?,
        })
    });
    let paths = f.get("paths").and_then(|n| paths(r, n, cores.as_deref()));
    let mut vector = f.get("vector").and_then(|n| vector(r, n));
    let ub_banks = f.get("ub_banks").map(|n| ub_banks(r, n));
    if let (Some(v), Some(banks)) = (vector.as_mut(), ub_banks) {
        if v.block_bytes.is_none() {
            r.error_hint(
                "ub_banks",
                "ub_banks needs vector.block_bytes: banks are read block by block",
                Some("add block_bytes (32 on Ascend) to vector".into()),
            );
        }
        v.ub_banks = banks;
    }
    let cube = f.get("cube").and_then(|n| {
        let g = r.map(
            n,
            "cube",
            "the cube unit",
            &["fractal_m", "fractal_n", "fractal_k_bytes", "startup"],
            &[],
        )?;
        let m = g
            .get("fractal_m")
            .and_then(|n| r.u32(n, &g.path("fractal_m"), true));
        let nn = g
            .get("fractal_n")
            .and_then(|n| r.u32(n, &g.path("fractal_n"), true));
        let k = g
            .get("fractal_k_bytes")
            .and_then(|n| r.u32(n, &g.path("fractal_k_bytes"), true));
        let s = g
            .get("startup")
            .and_then(|n| r.u32(n, &g.path("startup"), false));
        Some(CubeConfig {
            fractal_m: m?,
            fractal_n: nn?,
            fractal_k_bytes: k?,
            startup: s?,
        })
    });
    let memory = match f.get("memory") {
        Some(n) => Some(memory(r, n)?),
        None => None,
    };
    let chip = f.get("chip").map(|n| chip(r, n, cores.as_deref()));
    let cross_core = f.get("cross_core").map(|n| cross_core(r, n));
    let launch_cost = match f.get("launch_cost") {
        Some(n) => Some(launch_cost(r, n)?),
        None => None,
    };
    Some(Config {
        memory,
        launch_cost,
        chip: chip.flatten(),
        cross_core: cross_core.flatten(),
        name: name?.to_string(),
        description: description?,
        clock_mhz: clock_mhz?,
        cores: cores?,
        queue_depth: queue_depth?,
        scalar: scalar?,
        sync: sync?,
        paths: paths?,
        vector: vector?,
        cube: cube?,
    })
}

/// The optional `launch_cost` section: both keys required, cycles not negative.
fn launch_cost(r: &mut Reader, node: &Node) -> Option<LaunchCost> {
    let keys = ["fixed_cycles", "per_core_cycles"];
    let g = r.map(node, "launch_cost", "the launch cost", &keys, &[])?;
    let mut v = [None; 2];
    for (i, key) in keys.iter().enumerate() {
        v[i] = g
            .get(key)
            .and_then(|n| r.int_in(n, &g.path(key), 0, limits::MAX_SCALAR_CYCLES))
            .map(|x| x as u64);
    }
    Some(LaunchCost {
        fixed_cycles: v[0]?,
        per_core_cycles: v[1]?,
    })
}

/// The optional `chip` section: `aic` AI cores (at least 1), `aiv_per_aic` vector cores each;
/// a split chip (both `aic` and `aiv` core types) needs `aiv_per_aic` >= 1.
fn chip(r: &mut Reader, node: &Node, cores: Option<&[CoreConfig]>) -> Option<ChipConfig> {
    let g = r.map(node, "chip", "the chip", &["aic", "aiv_per_aic"], &[])?;
    let aic = g
        .get("aic")
        .and_then(|n| r.int_in(n, &g.path("aic"), 1, limits::MAX_BLOCKS as i64));
    let per = g
        .get("aiv_per_aic")
        .and_then(|n| r.int_in(n, &g.path("aiv_per_aic"), 0, limits::MAX_AIV_PER_AIC as i64));
    let c = ChipConfig {
        aic: aic? as u32,
        aiv_per_aic: per? as u32,
    };
    let split = cores
        .is_some_and(|cs| cs.iter().any(|c| c.name == "aic") && cs.iter().any(|c| c.name == "aiv"));
    if split && c.aiv_per_aic == 0 {
        r.error_hint(
            &g.path("aiv_per_aic"),
            "a chip with aic and aiv cores has at least one vector core per AI core",
            Some("set aiv_per_aic to the vector cores of one AI core (2 on the 910B)".into()),
        );
        return None;
    }
    Some(c)
}

/// The optional `cross_core` section: `flag_ids` and `max_pending` at least 1, `latency`
/// non-negative.
fn cross_core(r: &mut Reader, node: &Node) -> Option<CrossCoreConfig> {
    let g = r.map(
        node,
        "cross_core",
        "cross-core flags",
        &["flag_ids", "max_pending", "latency"],
        &[],
    )?;
    let ids = g
        .get("flag_ids")
        .and_then(|n| r.int_in(n, &g.path("flag_ids"), 1, limits::MAX_EVENT_IDS as i64));
    let pending = g
        .get("max_pending")
        .and_then(|n| r.int_in(n, &g.path("max_pending"), 1, i32::MAX as i64));
    let latency = g
        .get("latency")
        .and_then(|n| r.u32(n, &g.path("latency"), false));
    Some(CrossCoreConfig {
        flag_ids: ids? as u32,
        max_pending: pending? as u32,
        latency: latency?,
    })
}

/// The optional `memory` section: every key required, sizes and rates positive, latencies
/// non-negative, and the L2 at least one line.
fn memory(r: &mut Reader, node: &Node) -> Option<MemoryConfig> {
    const POSITIVE: [&str; 6] = [
        "line_bytes",
        "l2_bytes",
        "l2_read_bytes_per_cycle",
        "l2_write_bytes_per_cycle",
        "l2_chip_bytes_per_cycle",
        "hbm_bytes_per_cycle",
    ];
    const LATENCIES: [&str; 2] = ["l2_latency", "hbm_read_latency"];
    let keys: Vec<&str> = POSITIVE.iter().chain(&LATENCIES).copied().collect();
    let g = r.map(node, "memory", "the memory system", &keys, &[])?;
    let before = r.count();
    let max = limits::MAX_SCOPE_BYTES as i64;
    let mut v = [0u64; 8];
    for (i, key) in keys.iter().enumerate() {
        let min = if i < POSITIVE.len() { 1 } else { 0 };
        if let Some(x) = g.get(key).and_then(|n| r.int_in(n, &g.path(key), min, max)) {
            v[i] = x as u64;
        }
    }
    let m = MemoryConfig {
        line_bytes: v[0],
        l2_bytes: v[1],
        l2_read_bytes_per_cycle: v[2],
        l2_write_bytes_per_cycle: v[3],
        l2_chip_bytes_per_cycle: v[4],
        hbm_bytes_per_cycle: v[5],
        l2_latency: v[6],
        hbm_read_latency: v[7],
    };
    if r.count() != before {
        return None;
    }
    let one_core = m.l2_read_bytes_per_cycle.max(m.l2_write_bytes_per_cycle);
    if m.l2_chip_bytes_per_cycle < one_core {
        r.error_hint(
            &g.path("l2_chip_bytes_per_cycle"),
            format!(
                "the chip's L2 rate ({} bytes per cycle) is below one core's ({one_core})",
                m.l2_chip_bytes_per_cycle
            ),
            Some(
                "l2_chip_bytes_per_cycle is what every core of a launch shares: make it at \
                 least l2_read_bytes_per_cycle and l2_write_bytes_per_cycle"
                    .into(),
            ),
        );
        return None;
    }
    if m.l2_bytes < m.line_bytes {
        r.error_hint(
            &g.path("l2_bytes"),
            format!(
                "the L2 ({} bytes) is smaller than one line ({} bytes)",
                m.l2_bytes, m.line_bytes
            ),
            Some("the L2 holds whole lines: make l2_bytes at least line_bytes".into()),
        );
        return None;
    }
    Some(m)
}

fn cores(r: &mut Reader, node: &Node) -> Option<Vec<CoreConfig>> {
    let entries = r.entries(node, "cores", "core types")?;
    if entries.is_empty() {
        r.error("cores", "the config declares no core types");
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (name, n) in entries {
        match core(r, name, n) {
            Some(c) => out.push(c),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn core(r: &mut Reader, name: &str, node: &Node) -> Option<CoreConfig> {
    let path = join("cores", name);
    let before = r.count();
    r.name_ok(name, &path);
    let f = r.map(node, &path, "a core type", &["scopes", "pipes"], &[])?;
    let mut scopes = Vec::new();
    if let Some(n) = f.get("scopes") {
        let spath = f.path("scopes");
        for (sname, sn) in r.entries(n, &spath, "scopes").unwrap_or(&[]) {
            let p = join(&spath, sname);
            let space = match Space::parse(sname) {
                Some(Space::Gm) => {
                    r.error_hint(
                        &p,
                        "gm is not an on-chip scope",
                        Some("global memory always exists; list only on-chip scopes".into()),
                    );
                    None
                }
                Some(s) => Some(s),
                None => {
                    let names: Vec<&str> = Space::ON_CHIP.iter().map(|s| s.yaml_name()).collect();
                    let hint = suggest(sname, &names);
                    r.error_hint(&p, format!("unknown scope \"{sname}\""), hint);
                    None
                }
            };
            let Some(g) = r.map(sn, &p, "a scope", &["bytes", "align"], &["plan_align"]) else {
                continue;
            };
            let max = limits::MAX_SCOPE_BYTES as i64;
            let bytes = g
                .get("bytes")
                .and_then(|n| r.int_in(n, &g.path("bytes"), 1, max))
                .map(|v| v as u64);
            // an alignment above the largest scope could only misplace everything
            let align = g
                .get("align")
                .and_then(|n| r.int_in(n, &g.path("align"), 1, max))
                .map(|v| v as u64);
            if let Some(a) = align {
                if !a.is_power_of_two() {
                    let lower = 1u64 << (63 - a.leading_zeros());
                    r.error_hint(
                        &g.path("align"),
                        format!("alignment {a} is not a power of two"),
                        Some(format!("use {lower} or {}", lower * 2)),
                    );
                }
            }
            let plan_align = match g.get("plan_align") {
                None => align,
                Some(n) => {
                    let pa = r.int_in(n, &g.path("plan_align"), 1, max).map(|v| v as u64);
                    match (pa, align) {
                        (Some(pa), _) if !pa.is_power_of_two() => {
                            let lower = 1u64 << (63 - pa.leading_zeros());
                            r.error_hint(
                                &g.path("plan_align"),
                                format!("plan alignment {pa} is not a power of two"),
                                Some(format!("use {lower} or {}", lower * 2)),
                            );
                            None
                        }
                        (Some(pa), Some(a)) if pa < a => {
                            r.error_hint(
                                &g.path("plan_align"),
                                format!(
                                    "plan alignment {pa} is below the scope's alignment {a}: \
                                     planned addresses must satisfy the hardware"
                                ),
                                Some(format!("use {a} or more, or leave plan_align out")),
                            );
                            None
                        }
                        (pa, _) => pa,
                    }
                }
            };
            if let (Some(space), Some(bytes), Some(align), Some(plan_align)) =
                (space, bytes, align, plan_align)
            {
                scopes.push(ScopeConfig {
                    space,
                    bytes,
                    align,
                    plan_align,
                });
            }
        }
    }
    let mut pipes = Vec::new();
    if let Some(n) = f.get("pipes") {
        let ppath = f.path("pipes");
        for (i, pn) in r
            .seq(n, &ppath, "pipe names")
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let p = index(&ppath, i);
            let Some(s) = r.string(pn, &p, "a pipe name") else {
                continue;
            };
            match Pipe::parse(s) {
                Some(pipe) if pipes.contains(&pipe) => {
                    r.error(&p, format!("pipe \"{s}\" is listed twice"));
                }
                Some(pipe) => pipes.push(pipe),
                None => {
                    let hint = suggest(s, &Pipe::yaml_names());
                    r.error_hint(&p, format!("unknown pipe \"{s}\""), hint);
                }
            }
        }
        if r.count() == before && !pipes.contains(&Pipe::S) {
            r.error_hint(
                &ppath,
                format!("core {name} has no scalar pipe s"),
                Some("every core issues its instructions from the scalar unit; add s".into()),
            );
        }
    }
    (r.count() == before).then(|| CoreConfig {
        name: name.to_string(),
        scopes,
        pipes,
    })
}

fn space_name(r: &mut Reader, node: &Node, path: &str) -> Option<Space> {
    let s = r.string(node, path, "a memory space name")?;
    match Space::parse(s) {
        Some(sp) => Some(sp),
        None => {
            let hint = suggest(s, &Space::yaml_names());
            r.error_hint(path, format!("unknown scope \"{s}\""), hint);
            None
        }
    }
}

fn paths(r: &mut Reader, node: &Node, cores: Option<&[CoreConfig]>) -> Option<Vec<PathConfig>> {
    let items = r.seq(node, "paths", "data paths")?;
    let before = r.count();
    let mut out: Vec<PathConfig> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = index("paths", i);
        let Some(f) = r.map(
            item,
            &p,
            "a data path",
            &["from", "to", "pipe", "bytes_per_cycle", "startup"],
            &["read_bytes_per_cycle", "nz_bytes_per_cycle"],
        ) else {
            continue;
        };
        let from = f
            .get("from")
            .and_then(|n| space_name(r, n, &f.path("from")));
        let to = f.get("to").and_then(|n| space_name(r, n, &f.path("to")));
        let pipe = f.get("pipe").and_then(|n| {
            let s = r.string(n, &f.path("pipe"), "a pipe name")?;
            let pipe = Pipe::parse(s);
            if pipe.is_none() {
                let hint = suggest(s, &Pipe::yaml_names());
                r.error_hint(&f.path("pipe"), format!("unknown pipe \"{s}\""), hint);
            }
            pipe
        });
        let bpc = f
            .get("bytes_per_cycle")
            .and_then(|n| r.u32(n, &f.path("bytes_per_cycle"), true));
        let startup = f
            .get("startup")
            .and_then(|n| r.u32(n, &f.path("startup"), false));
        let read = f
            .get("read_bytes_per_cycle")
            .map(|n| r.u32(n, &f.path("read_bytes_per_cycle"), true));
        let nz = f
            .get("nz_bytes_per_cycle")
            .map(|n| r.u32(n, &f.path("nz_bytes_per_cycle"), true));
        let (Some(from), Some(to), Some(pipe), Some(bpc), Some(startup)) =
            (from, to, pipe, bpc, startup)
        else {
            continue;
        };
        // an optional rate that was given but invalid has been reported
        let (Some(read), Some(nz)) = (
            read.map_or(Some(None), |v| v.map(Some)),
            nz.map_or(Some(None), |v| v.map(Some)),
        ) else {
            continue;
        };
        if out.iter().any(|q| q.from == from && q.to == to) {
            r.error(
                &p,
                format!(
                    "a second path from {} to {}",
                    from.yaml_name(),
                    to.yaml_name()
                ),
            );
            continue;
        }
        if let Some(cores) = cores {
            let has = |c: &CoreConfig, s: Space| s == Space::Gm || c.scope(s).is_some();
            let with_scopes: Vec<&CoreConfig> = cores
                .iter()
                .filter(|c| has(c, from) && has(c, to))
                .collect();
            if with_scopes.is_empty() {
                r.error(
                    &p,
                    format!(
                        "no core has both {} and {} for the path {} -> {}",
                        from.yaml_name(),
                        to.yaml_name(),
                        from.yaml_name(),
                        to.yaml_name()
                    ),
                );
            } else if !with_scopes.iter().any(|c| c.has_pipe(pipe)) {
                let names: Vec<&str> = with_scopes.iter().map(|c| c.name.as_str()).collect();
                r.error_hint(
                    &f.path("pipe"),
                    format!(
                        "path {} -> {} runs on pipe {}, which core {} does not have",
                        from.yaml_name(),
                        to.yaml_name(),
                        pipe.yaml_name(),
                        names.join(" or ")
                    ),
                    Some(format!(
                        "add {} to the pipes of core {}, or use one of its pipes",
                        pipe.yaml_name(),
                        names[0]
                    )),
                );
            }
        }
        out.push(PathConfig {
            from,
            to,
            pipe,
            bytes_per_cycle: bpc,
            startup,
            read_bytes_per_cycle: read,
            nz_bytes_per_cycle: nz,
        });
    }
    (r.count() == before).then_some(out)
}

fn vec_cost(r: &mut Reader, node: &Node, path: &str) -> Option<VecCost> {
    let f = r.map(
        node,
        path,
        "a vector cost",
        &["cycles_per_repeat", "startup"],
        &[],
    )?;
    let c = f
        .get("cycles_per_repeat")
        .and_then(|n| r.u32(n, &f.path("cycles_per_repeat"), false));
    let s = f
        .get("startup")
        .and_then(|n| r.u32(n, &f.path("startup"), false));
    Some(VecCost {
        cycles_per_repeat: c?,
        startup: s?,
    })
}

fn vector(r: &mut Reader, node: &Node) -> Option<VectorConfig> {
    let f = r.map(
        node,
        "vector",
        "the vector unit",
        &["repeat_bytes", "default"],
        &["ops", "block_bytes"],
    )?;
    let before = r.count();
    let repeat = f
        .get("repeat_bytes")
        .and_then(|n| r.u32(n, &f.path("repeat_bytes"), true));
    let default = f
        .get("default")
        .and_then(|n| vec_cost(r, n, &f.path("default")));
    let block = f
        .get("block_bytes")
        .and_then(|n| r.u32(n, &f.path("block_bytes"), true));
    if let (Some(rb), Some(b)) = (repeat, block) {
        if rb % b != 0 {
            r.error_hint(
                &f.path("block_bytes"),
                format!("block_bytes {b} does not divide repeat_bytes {rb}"),
                Some(
                    "a repeat is a whole number of blocks (8 blocks of 32 of 256 bytes on Ascend)"
                        .into(),
                ),
            );
        }
    }
    let mut ops = [None; VecOp::COUNT];
    if let Some(n) = f.get("ops") {
        let opath = f.path("ops");
        let names: Vec<&str> = VecOp::ALL.iter().map(|o| o.name()).collect();
        for (name, cn) in r.entries(n, &opath, "vector op costs").unwrap_or(&[]) {
            let p = join(&opath, name);
            let Some(op) = VecOp::parse(name) else {
                let hint = suggest(name, &names);
                r.error_hint(&p, format!("unknown vector op \"{name}\""), hint);
                continue;
            };
            if let Some(c) = vec_cost(r, cn, &p) {
                ops[op.index()] = Some(c);
            }
        }
    }
    (r.count() == before).then_some(())?;
    Some(VectorConfig {
        repeat_bytes: repeat?,
        block_bytes: block,
        ub_banks: None,
        default: default?,
        ops,
    })
}

/// `ub_banks: { groups, row_bytes, bank_bytes }`, each a positive integer. `None` inside when
/// something is wrong (reported).
fn ub_banks(r: &mut Reader, node: &Node) -> Option<UbBanks> {
    let f = r.map(
        node,
        "ub_banks",
        "the UB bank layout",
        &["groups", "row_bytes", "bank_bytes"],
        &[],
    )?;
    let groups = f
        .get("groups")
        .and_then(|n| r.u32(n, &f.path("groups"), true));
    let row = f
        .get("row_bytes")
        .and_then(|n| r.u32(n, &f.path("row_bytes"), true));
    let bank = f
        .get("bank_bytes")
        .and_then(|n| r.u32(n, &f.path("bank_bytes"), true));
    Some(UbBanks {
        groups: groups?,
        row_bytes: row?,
        bank_bytes: bank?,
    })
}
