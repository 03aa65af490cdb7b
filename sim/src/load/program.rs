//! Program loading (docs/programs.md): params, gm tensors, blocks with their declarations, control
//! ops, and the whole-program checks. Leaf ops and operands are in [`super::ops`]; the shared
//! loader state and name and expression helpers in [`super::loader`].
//!
//! Declarations of a block are processed before its ops and inner blocks, so checking a new
//! name against the visible scope chain is enough to forbid shadowing everywhere.

use super::reader::{index, join, show, suggest, Fields, Reader};
use crate::config::Config;
use crate::expr::Expr;
use crate::ids::{BufferId, CoreId, OpId, TensorId, VarId, ViewId};
use crate::limits;
use crate::program::{
    Block, Buffer, ForLoop, Kernel, Launch, Loc, Op, OpKind, Program, Ref, SyncMode, Tensor, Var,
    View, ViewKind,
};
use crate::types::{Pipe, Space};
use crate::written::Written;
use crate::yaml::{Node, Value};

use super::loader::{Ctx, Entity, Grid, Loader, Scopes, VarFacts, OP_SIBLINGS};

pub(crate) fn program(
    r: &mut Reader,
    root: &Node,
    config: &Config,
    overrides: &[(String, i64)],
    blocks_override: Option<u32>,
) -> Option<Program> {
    let f = r.map(
        root,
        "",
        "a kernel program",
        &["kernel", "body"],
        &["core", "sync", "params", "launch", "gm", "buffers", "views"],
    )?;
    build(r, &f, None, config, overrides, blocks_override)
}

/// Where the op of list item `item` (its key `key`, its value `value`) is written, and its
/// text, appended to `texts`: `vexp { ins: [xb], out: yb }`, the key alone for an op without
/// fields (`use:`).
fn op_loc(texts: &mut String, item: &Node, key: &str, value: &Node) -> Loc {
    // one buffer for every op, no formatting machinery: a generated program has a million ops
    let start = texts.len();
    texts.push_str(key);
    if !matches!(value.value, Value::Null) {
        texts.push(' ');
        crate::yaml::write_flow(value, texts, start, Loc::TEXT_MAX);
    }
    Loc {
        line: item.line,
        column: item.column,
        text: (start as u32, texts.len() as u32),
        inserted: None,
    }
}

/// Refuses a launch whose engine state ([`crate::engine::launch_state_bytes`]) is above
/// [`limits::MAX_LAUNCH_STATE_BYTES`], before anything is allocated for it, naming the keys
/// that make it large: the cores (`launch.blocks`, `chip.aiv_per_aic`) and what each core
/// holds (`queue_depth`, `sync.event_ids`, `cross_core.flag_ids`).
pub(crate) fn launch_state(r: &mut Reader, parts: &[&Program], config: &Config, flag: bool) {
    let Some(first) = parts.first() else { return };
    let blocks = u64::from(first.launch.blocks);
    let per_block = if parts.len() > 1 {
        1 + u64::from(crate::launch::aiv_per_aic(config))
    } else {
        1
    };
    let cores = blocks * per_block;
    let bytes = crate::engine::launch_state_bytes(config, cores);
    if bytes <= limits::MAX_LAUNCH_STATE_BYTES {
        return;
    }
    let per_core = bytes / cores.max(1);
    let mib = |b: u64| b.div_ceil(1 << 20);
    let shape = if per_block > 1 {
        format!(
            "{blocks} blocks of {per_block} cores (aic and chip.aiv_per_aic {} aiv)",
            per_block - 1
        )
    } else {
        format!("{blocks} blocks")
    };
    let xids = config.cross_core.map_or(String::new(), |x| {
        format!(", cross_core.flag_ids {}", x.flag_ids)
    });
    r.error_hint(
        if flag { "--blocks" } else { "launch.blocks" },
        format!(
            "the launch needs about {} MiB of engine state, above the budget of {} MiB: {cores} cores ({shape}) of {} KiB each (queue_depth {}, sync.event_ids {}{xids} of config {})",
            mib(bytes),
            mib(limits::MAX_LAUNCH_STATE_BYTES),
            per_core.div_ceil(1024),
            config.queue_depth,
            config.sync.event_ids,
            config.name,
        ),
        Some("launch fewer blocks (launch.blocks or --blocks), or lower those config keys".into()),
    );
}

/// Whether `root` is a mixed kernel: it has an `aic:` or an `aiv:` key.
pub(crate) fn is_mixed(root: &Node) -> bool {
    match &root.value {
        Value::Map(entries) => entries.iter().any(|(k, _)| k == "aic" || k == "aiv"),
        _ => false,
    }
}

/// The two parts of a mixed kernel (docs/programs.md, "Mixed kernels"): each a program of its
/// core type, built from the shared top level (kernel, sync, params, launch, gm) and the part's
/// buffers, views and body. The shared top level is read once per part, so a problem in it
/// is reported by both builds: the second build's copies of the first's are dropped.
pub(crate) fn kernel(
    r: &mut Reader,
    root: &Node,
    config: &Config,
    overrides: &[(String, i64)],
    blocks_override: Option<u32>,
) -> Option<Kernel> {
    if !is_mixed(root) {
        let p = program(r, root, config, overrides, blocks_override)?;
        launch_state(r, &[&p], config, blocks_override.is_some());
        return Some(Kernel::single(p));
    }
    let f = r.map(
        root,
        "",
        "a mixed kernel",
        &["kernel"],
        &[
            "sync", "params", "launch", "gm", "aic", "aiv", "core", "body", "buffers", "views",
        ],
    )?;
    for key in ["core", "body", "buffers", "views"] {
        if f.has(key) {
            let hint = if key == "core" {
                "each part runs on its own core type: drop core:"
            } else {
                "a mixed kernel's buffers:, views: and body: go under aic: and aiv:"
            };
            r.error_hint(
                key,
                format!("{key}: beside aic:/aiv: in a mixed kernel"),
                Some(hint.into()),
            );
        }
    }
    let present = if f.has("aic") { "aic" } else { "aiv" };
    for (key, other) in [("aic", "aiv"), ("aiv", "aic")] {
        if !f.has(key) {
            r.error_hint(
                other,
                format!("a mixed kernel has {other}: but no {key}: part"),
                Some("a mixed kernel has both an aic: (cube) and an aiv: (vector) part; a single-type program has core: and body:".into()),
            );
        }
    }
    let split = config.chip.is_some_and(|c| c.aiv_per_aic > 0)
        && config.core_named("aic").is_some()
        && config.core_named("aiv").is_some();
    if !split {
        r.error_hint(
            present,
            format!(
                "a mixed kernel needs a split chip, but config {} is not one",
                config.name
            ),
            Some("the config needs core types aic and aiv and chip: { aic, aiv_per_aic } with aiv_per_aic of 1 or more".into()),
        );
    }
    let mut parts = Vec::new();
    for name in ["aic", "aiv"] {
        let part = f.get(name).and_then(|n| {
            r.map(
                n,
                name,
                &format!("the {name} part"),
                &["body"],
                &["buffers", "views"],
            )
        });
        let spec = Part {
            name,
            core: config.core_named(name),
            fields: part,
        };
        let mut sub = Reader::new(r.file);
        // a part is read as its kernel is (`npusim opt` reads a MIX function's parts plan-only)
        sub.plan_only = r.plan_only;
        let built = build(
            &mut sub,
            &f,
            Some(&spec),
            config,
            overrides,
            blocks_override,
        );
        for d in sub.diags {
            let own = d.path == name || d.path.starts_with(&format!("{name}."));
            if own || !r.diags.contains(&d) {
                r.diags.push(d);
            }
        }
        parts.push(built);
    }
    let parts: Option<Vec<Program>> = parts.into_iter().collect();
    let parts = parts?;
    let refs: Vec<&Program> = parts.iter().collect();
    launch_state(r, &refs, config, blocks_override.is_some());
    Some(Kernel {
        parts,
        findings: Vec::new(),
    })
}

/// One part of a mixed kernel: its name (`aic`, `aiv`, the prefix of its paths), its core
/// type, and its fields (`None` when missing or not a mapping, reported already).
struct Part<'n> {
    name: &'static str,
    core: Option<CoreId>,
    fields: Option<Fields<'n>>,
}

/// A program from the top-level fields `f`: of a single-type program (`part` is `None`), or
/// with `part`'s core type, buffers, views and body.
fn build(
    r: &mut Reader,
    f: &Fields,
    part: Option<&Part>,
    config: &Config,
    overrides: &[(String, i64)],
    blocks_override: Option<u32>,
) -> Option<Program> {
    // where the buffers, views and body are, and the prefix of their paths
    let (own, prefix) = match part {
        Some(p) => (p.fields.as_ref(), p.name),
        None => (Some(f), ""),
    };
    let get = |key: &str| own.and_then(|o| o.get(key));
    let mut l = Loader {
        r,
        config,
        core: None,
        core_id: None,
        sync: SyncMode::Auto,
        params: Vec::new(),
        tensors: Vec::new(),
        buffers: Vec::new(),
        views: Vec::new(),
        vars: Vec::new(),
        ranges: Vec::new(),
        facts: Vec::new(),
        enclosing: Vec::new(),
        certain: true,
        ops: Vec::new(),
        texts: String::new(),
        scopes: {
            let mut s = Scopes::default();
            s.push();
            s
        },
        written: Written::new(0),
        touched: Vec::new(),
        mmad_l1_at: None,
        launch_names: false,
        mixed: part.is_some(),
    };
    // big generated programs are mostly flat: sizing the two big vectors once saves copying
    // and faulting in tens of megabytes as they double
    if let Some(crate::yaml::Value::Seq(items)) = get("body").map(|n| &n.value) {
        l.ops.reserve(items.len());
    }
    if let Some(crate::yaml::Value::Map(items)) = get("buffers").map(|n| &n.value) {
        l.buffers.reserve(items.len());
    }
    let kernel = f
        .get("kernel")
        .and_then(|n| l.r.string(n, "kernel", "a kernel name"))
        .map(str::to_string);
    if let Some(k) = &kernel {
        l.r.name_ok(k, "kernel");
    }
    match part {
        Some(p) => {
            l.core_id = p.core;
            l.core = p.core.map(|c| config.core(c));
        }
        None => l.core(f),
    }
    if let Some(n) = f.get("sync") {
        match l.r.string(n, "sync", "auto or manual") {
            Some("auto") => l.sync = SyncMode::Auto,
            Some("manual") => l.sync = SyncMode::Manual,
            Some(other) => {
                let hint = suggest(other, &["auto", "manual"]);
                l.r.error_hint("sync", format!("unknown sync mode \"{other}\""), hint);
            }
            None => {}
        }
    }
    // with a `launch`, its variables come first: every expression may read them (a program
    // without one keeps the names for itself)
    let launch_vars = f.get("launch").map(|_| {
        l.launch_names = true;
        (l.launch_var("block"), l.launch_var("subblock"))
    });
    l.params(f.get("params"), overrides);
    let blocks = l.launch(f.get("launch"), blocks_override, launch_vars);
    if let Some(n) = f.get("gm") {
        l.tensors(n);
    }
    let top = Ctx {
        parent: None,
        loop_parent: None,
    };
    l.scopes.push();
    let mut body = Block::default();
    if let Some(n) = get("buffers") {
        body.buffers = l.buffers(n, &join(prefix, "buffers"), top);
    }
    if let Some(n) = get("views") {
        body.views = l.views(n, &join(prefix, "views"), top);
    }
    if let Some(n) = get("body") {
        let path = join(prefix, "body");
        let inner = match n.value {
            // `body: { buffers:, views:, body: [...] }`
            Value::Map(_) => l.block_map(n, &path, top),
            _ => l.ops_list(n, &path, top),
        };
        body.buffers.extend(inner.buffers);
        body.views.extend(inner.views);
        body.ops = inner.ops;
    }
    l.scopes.pop();
    l.whole_program_checks(prefix);
    Some(Program {
        kernel: kernel?,
        file: l.r.file.to_string(),
        texts: l.texts.into(),
        core: l.core_id?,
        sync: l.sync,
        params: l.params,
        launch: Launch {
            blocks: blocks?,
            block: launch_vars.map(|v| v.0),
            subblock: launch_vars.map(|v| v.1),
        },
        tensors: l.tensors,
        buffers: l.buffers,
        views: l.views,
        vars: l.vars,
        ops: l.ops,
        body,
    })
}

impl<'a> Loader<'a, '_> {
    fn core(&mut self, f: &Fields) {
        let names: Vec<&str> = self.config.cores.iter().map(|c| c.name.as_str()).collect();
        match f.get("core") {
            Some(n) => {
                let Some(name) = self.r.string(n, "core", "a core name") else {
                    return;
                };
                match self.config.core_named(name) {
                    Some(id) => {
                        self.core = Some(self.config.core(id));
                        self.core_id = Some(id);
                    }
                    None => {
                        let hint = suggest(name, &names);
                        self.r.error_hint(
                            "core",
                            format!("unknown core \"{name}\" in config {}", self.config.name),
                            hint,
                        );
                    }
                }
            }
            None if self.config.cores.len() == 1 => {
                self.core = Some(&self.config.cores[0]);
                self.core_id = Some(CoreId::new(0));
            }
            None => self.r.error_hint(
                "",
                "missing required key \"core\" in a kernel program",
                Some(format!(
                    "config {} has several core types ({}); name one with core:",
                    self.config.name,
                    names.join(", ")
                )),
            ),
        }
    }

    // ----- the launch ---------------------------------------------------------------------

    /// Declares the launch variable `name` (`block` or `subblock`); its range is set by
    /// [`Loader::launch`].
    fn launch_var(&mut self, name: &str) -> VarId {
        let id = VarId::new(self.vars.len());
        self.vars.push(Var {
            name: name.to_string(),
            loop_op: None,
        });
        self.ranges.push(Some((0, 0)));
        self.declare_unchecked(name, Entity::Var(id), "launch");
        id
    }

    /// `launch: { blocks }` (an integer or an expression over params, at least 1) or
    /// `--blocks`; with a `launch` key (`vars`), declared as the constant `blocks`, and the
    /// ranges of `block` and `subblock` set. With a `chip` section, the blocks must fit the chip's cores of the
    /// program's type.
    fn launch(
        &mut self,
        node: Option<&Node>,
        over: Option<u32>,
        vars: Option<(VarId, VarId)>,
    ) -> Option<u32> {
        let mut path = "launch".to_string();
        let written = match node {
            None => Some(1),
            Some(n) => {
                let g = self.r.map(n, "launch", "the launch", &["blocks"], &[])?;
                path = g.path("blocks");
                let b = g.get("blocks")?;
                match &b.value {
                    Value::Int(i) => Some(*i),
                    Value::Str(s) => self.expr_text(s, &path, false).and_then(|e| e.as_const()),
                    _ => {
                        self.r.error(
                            &path,
                            format!(
                                "expected an integer or an expression over params, found {}",
                                show(b)
                            ),
                        );
                        None
                    }
                }
            }
        };
        let value = match (over, written) {
            (Some(v), _) => i64::from(v),
            (None, Some(v)) => v,
            (None, None) => {
                if vars.is_some() {
                    self.declare_unchecked("blocks", Entity::Invalid, &path);
                }
                return None;
            }
        };
        if over.is_some() {
            path = "--blocks".to_string();
        }
        let core = self.core;
        let is_aiv = core.is_some_and(|c| c.name == "aiv");
        // blocks per AI core: a single-type aiv launch runs one block per vector core, a mixed
        // kernel one per AI core
        let per_aic = match self.config.chip {
            Some(chip) if is_aiv && !self.mixed => chip.aiv_per_aic.max(1),
            _ => 1,
        };
        // the values of `subblock`: a vector core's index in its AI core
        let subblocks = match self.config.chip {
            Some(chip) if is_aiv => chip.aiv_per_aic.max(1),
            _ => 1,
        };
        let chip_most = self
            .config
            .chip
            .map(|chip| i64::from(chip.aic) * i64::from(per_aic));
        let most = chip_most
            .unwrap_or(i64::from(limits::MAX_BLOCKS))
            .min(i64::from(limits::MAX_BLOCKS));
        if !(1..=most).contains(&value) {
            // the message states the bound checked: the chip's cores, or npusim's own limit
            // where that is lower
            let hint = match self.config.chip {
                Some(chip) if chip_most == Some(most) => format!(
                    "config {} has {} AI cores{}: at most {most} blocks of {}",
                    self.config.name,
                    chip.aic,
                    if per_aic > 1 {
                        format!(" of {per_aic} vector cores")
                    } else {
                        String::new()
                    },
                    if self.mixed {
                        "a mixed kernel"
                    } else {
                        "this core type"
                    }
                ),
                _ => format!(
                    "npusim runs at most {} blocks (a launch of more cores than any chip has \
                     is a typo)",
                    limits::MAX_BLOCKS
                ),
            };
            self.r.error_hint(
                &path,
                format!("{value} blocks is out of range: a launch has 1 to {most} blocks"),
                Some(hint),
            );
            if vars.is_some() {
                // known but broken: no second error where the program reads it
                self.declare_unchecked("blocks", Entity::Invalid, &path);
            }
            return None;
        }
        if let Some((block, subblock)) = vars {
            self.declare_unchecked("blocks", Entity::Param(value), &path);
            self.ranges[block.index()] = Some((0, value - 1));
            self.ranges[subblock.index()] = Some((0, i64::from(subblocks) - 1));
        }
        Some(value as u32)
    }

    // ----- params and tensors ------------------------------------------------------------

    fn params(&mut self, node: Option<&Node>, overrides: &[(String, i64)]) {
        let entries = match node {
            Some(n) => self.r.entries(n, "params", "params").unwrap_or(&[]),
            None => &[],
        };
        for (name, n) in entries {
            let path = join("params", name);
            let over = overrides
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| *v);
            let value = match (over, &n.value) {
                (Some(v), Value::Int(_) | Value::Str(_)) => Some(v),
                (None, Value::Int(i)) => Some(*i),
                (None, Value::Str(s)) => self.expr_text(s, &path, false).and_then(|e| e.as_const()),
                (_, Value::TooLarge(_)) => {
                    self.r.too_large(n, &path);
                    None
                }
                (_, _) => {
                    let other = n;
                    self.r.error(
                        &path,
                        format!(
                            "expected an integer or an expression over earlier params, found {}",
                            show(other)
                        ),
                    );
                    None
                }
            };
            let entity = value.map_or(Entity::Invalid, Entity::Param);
            if self.declare(name, entity, &path) {
                if let Some(v) = value {
                    self.params.push((name.clone(), v));
                }
            }
        }
        let declared: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        for (k, v) in overrides {
            if !declared.contains(&k.as_str()) {
                let hint = suggest(k, &declared);
                self.r.error_hint(
                    "params",
                    format!("--param {k}={v}: the program has no param \"{k}\""),
                    hint.or_else(|| Some("the program declares no params".into())),
                );
            }
        }
    }

    fn tensors(&mut self, node: &Node) {
        let entries = self.r.entries(node, "gm", "gm tensors").unwrap_or(&[]);
        for (name, n) in entries {
            let path = join("gm", name);
            let t = self.tensor(name, n, &path);
            let entity = match t {
                Some(t) => {
                    self.tensors.push(t);
                    Entity::Tensor(TensorId::new(self.tensors.len() - 1))
                }
                None => Entity::Invalid,
            };
            if !self.declare(name, entity, &path) && matches!(entity, Entity::Tensor(_)) {
                self.tensors.pop();
            }
        }
        self.gm_layout();
    }

    /// Under a memory system (`memory` in the config) the gm tensors are laid out in
    /// declaration order, each from a line (docs/timing.md, "The gm memory system"), and the
    /// engine keeps state per line: a layout beyond [`limits::MAX_GM_LINES`] lines is refused
    /// here, at the first tensor that passes it, so that `check` refuses what `run` would (the
    /// engine lays the tensors out the same way and refuses the same layout).
    fn gm_layout(&mut self) {
        let Some(m) = self.config.memory else { return };
        let line = m.line_bytes.max(1);
        let mut lines = 0u64;
        for t in &self.tensors {
            lines = lines.saturating_add(t.bytes.div_ceil(line));
            if lines > limits::MAX_GM_LINES {
                let message = format!(
                    "the gm tensors up to {} take {lines} lines of {line} bytes, more than the \
                     memory system models ({} lines)",
                    t.name,
                    limits::show(limits::MAX_GM_LINES)
                );
                let hint = format!(
                    "config {} lays gm out in L2 lines (its `memory` section); shrink the \
                     tensors to {} bytes in all, or use a config without `memory`",
                    self.config.name,
                    limits::MAX_GM_LINES.saturating_mul(line)
                );
                let path = t.path.clone();
                self.r.error_hint(&path, message, Some(hint));
                return;
            }
        }
    }

    fn tensor(&mut self, name: &str, node: &Node, path: &str) -> Option<Tensor> {
        let f = self.r.map(
            node,
            path,
            &format!("gm tensor {name}"),
            &["shape", "dtype"],
            &[],
        )?;
        let shape = f.get("shape").and_then(|n| self.shape(n, &f.path("shape")));
        let dtype = f.get("dtype").and_then(|n| self.dtype(n, &f.path("dtype")));
        let (shape, elements) = shape?;
        let dtype = dtype?;
        Some(Tensor {
            name: name.to_string(),
            bytes: dtype.bytes_for(elements),
            shape,
            dtype,
            elements,
            path: path.to_string(),
        })
    }

    // ----- buffers and views -------------------------------------------------------------

    pub fn buffers(&mut self, node: &Node, path: &str, ctx: Ctx) -> Vec<BufferId> {
        let entries = self.r.entries(node, path, "buffers").unwrap_or(&[]);
        let mut ids = Vec::new();
        let mut shares = Vec::new();
        for (name, n) in entries {
            let p = join(path, name);
            let entity = match self.buffer(name, n, &p, ctx) {
                Some((b, share)) => {
                    let id = BufferId::new(self.buffers.len());
                    self.buffers.push(b);
                    if let Some(s) = share {
                        shares.push((id, s));
                    }
                    Entity::Buffer(id)
                }
                None => Entity::Invalid,
            };
            if self.declare(name, entity, &p) {
                if let Entity::Buffer(id) = entity {
                    ids.push(id);
                }
            } else if let Entity::Buffer(id) = entity {
                // keep the table dense: an undeclared buffer is never referenced
                self.buffers.truncate(id.index());
                shares.retain(|(b, _)| *b != id);
            }
        }
        // `share` may name a buffer later in the same block, so resolve after declaring all
        for (id, (target, tpath)) in shares {
            self.resolve_share(id, &target, &tpath);
        }
        ids
    }

    fn resolve_share(&mut self, id: BufferId, target: &str, path: &str) {
        let other = match self.lookup(target).map(|n| n.entity) {
            Some(Entity::Buffer(o)) => o,
            Some(Entity::Invalid) => return,
            Some(e) => {
                self.r.error(
                    path,
                    format!("share: \"{target}\" is {}, not a buffer", e.kind()),
                );
                return;
            }
            None => {
                let cands = self.names_where(|e| matches!(e, Entity::Buffer(_)));
                let hint = suggest(target, &cands);
                self.r
                    .error_hint(path, format!("unknown buffer \"{target}\""), hint);
                return;
            }
        };
        let (me, them) = (&self.buffers[id.index()], &self.buffers[other.index()]);
        if me.scope != them.scope {
            let msg = format!(
                "share: {} is in {} but {} is in {}; shared buffers must be in the same scope",
                me.name,
                me.scope.yaml_name(),
                them.name,
                them.scope.yaml_name()
            );
            self.r.error(path, msg);
            return;
        }
        if them.unique {
            let msg = format!(
                "share: {} is unique: true and never shares memory",
                them.name
            );
            self.r.error(path, msg);
            return;
        }
        self.buffers[id.index()].share = Some(other);
    }

    #[allow(clippy::type_complexity)]
    fn buffer(
        &mut self,
        name: &str,
        node: &Node,
        path: &str,
        ctx: Ctx,
    ) -> Option<(Buffer, Option<(String, String)>)> {
        let f = self.r.map(
            node,
            path,
            &format!("buffer {name}"),
            &["scope", "shape", "dtype"],
            &["multi", "inplace", "unique", "share", "preload", "at"],
        )?;
        let before = self.r.count();
        let scope = f.get("scope").and_then(|n| self.scope(n, &f.path("scope")));
        let shape = f
            .get("shape")
            .and_then(|n| self.buffer_shape(n, &f.path("shape")));
        let dtype = f.get("dtype").and_then(|n| self.dtype(n, &f.path("dtype")));
        let multi = match f.get("multi") {
            Some(n) => {
                let max = crate::limits::MAX_MULTI;
                let m = self.r.u32(n, &f.path("multi"), true);
                match m {
                    Some(m) if m > max => {
                        self.r.error_hint(
                            &f.path("multi"),
                            format!("multi: {m} is more slots than npusim plans (at most {max})"),
                            Some("hardware multi-buffers have 2 or 3 slots".into()),
                        );
                        None
                    }
                    m => m,
                }
            }
            None => Some(1),
        };
        let flag = |l: &mut Self, key: &str, default: bool| match f.get(key) {
            Some(n) => l.r.boolean(n, &f.path(key)).unwrap_or(default),
            None => default,
        };
        let inplace = flag(self, "inplace", true);
        let unique = flag(self, "unique", false);
        let preload = flag(self, "preload", false);
        let share = f.get("share").and_then(|n| {
            let s = self.r.string(n, &f.path("share"), "a buffer name")?;
            Some((s.to_string(), f.path("share")))
        });
        if share.is_some() && unique {
            self.r.error_hint(
                &f.path("share"),
                format!("buffer {name} is unique: true and also shares another buffer's memory"),
                Some("drop unique: true or share:".into()),
            );
        }
        if preload && ctx.loop_parent.is_none() {
            self.r.error_hint(
                &f.path("preload"),
                format!("buffer {name} has preload: true but is not declared inside a loop"),
                Some("preload keeps a buffer live for its whole enclosing loop; declare it in the loop's buffers:".into()),
            );
        }
        let (scope, (shape, elements), dtype, multi) = (scope?, shape?, dtype?, multi?);
        let bytes = dtype.bytes_for(elements);
        let at = match f.get("at") {
            Some(n) => self.at(n, &f.path("at"), scope, bytes, multi),
            None => Some(None),
        };
        (self.r.count() == before).then_some(())?;
        Some((
            Buffer {
                name: name.to_string(),
                scope,
                shape,
                dtype,
                elements,
                bytes,
                multi,
                inplace,
                unique,
                share: None,
                preload,
                at: at?,
                path: path.to_string(),
                declared_in: ctx.parent,
                loop_parent: ctx.loop_parent,
            },
            share,
        ))
    }

    fn scope(&mut self, node: &Node, path: &str) -> Option<Space> {
        let s = self.r.string(node, path, "a scope name")?;
        let core_scopes: Vec<&str> = match self.core {
            Some(c) => c.scopes.iter().map(|s| s.space.yaml_name()).collect(),
            None => Space::ON_CHIP.iter().map(|s| s.yaml_name()).collect(),
        };
        match Space::parse(s) {
            None => {
                let hint = suggest(s, &core_scopes);
                self.r
                    .error_hint(path, format!("unknown scope \"{s}\""), hint);
                None
            }
            Some(Space::Gm) => {
                self.r.error_hint(
                    path,
                    "gm is not an on-chip scope",
                    Some("declare global-memory tensors under gm:".into()),
                );
                None
            }
            Some(sp) => match self.core {
                Some(c) if c.scope(sp).is_none() => {
                    self.r.error_hint(
                        path,
                        format!("scope {} is not on core {}", sp.yaml_name(), c.name),
                        Some(format!(
                            "core {} has scopes: {}",
                            c.name,
                            core_scopes.join(", ")
                        )),
                    );
                    None
                }
                _ => Some(sp),
            },
        }
    }

    fn at(
        &mut self,
        node: &Node,
        path: &str,
        scope: Space,
        bytes: u64,
        multi: u32,
    ) -> Option<Option<Vec<u64>>> {
        let items: Vec<(String, &Node)> = match &node.value {
            Value::Seq(s) => s
                .iter()
                .enumerate()
                .map(|(i, n)| (index(path, i), n))
                .collect(),
            _ => vec![(path.to_string(), node)],
        };
        if items.len() != multi as usize {
            self.r.error_hint(
                path,
                format!(
                    "at: gives {} offset{} but the buffer has {multi} slot{}",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" },
                    if multi == 1 { "" } else { "s" }
                ),
                Some("give one byte offset per slot: at: [o0, o1, ...]".into()),
            );
            return None;
        }
        let sc = self.core.and_then(|c| c.scope(scope)).copied();
        let mut out = Vec::new();
        let mut ok = true;
        for (p, n) in items {
            let Some(v) = self.const_int(n, &p) else {
                ok = false;
                continue;
            };
            if v < 0 {
                self.r.error(&p, format!("at: offset {v} is negative"));
                ok = false;
                continue;
            }
            let v = v as u64;
            if let Some(sc) = sc {
                if !v.is_multiple_of(sc.align) {
                    self.r.error_hint(
                        &p,
                        format!(
                            "at: offset {v} is not a multiple of the {} alignment {}",
                            scope.yaml_name(),
                            sc.align
                        ),
                        Some(format!(
                            "use {} or {}",
                            v / sc.align * sc.align,
                            (v / sc.align + 1) * sc.align
                        )),
                    );
                    ok = false;
                }
                if v.saturating_add(bytes) > sc.bytes {
                    self.r.error(
                        &p,
                        format!(
                            "at: a slot of {bytes} bytes at offset {v} ends past the {} capacity {}",
                            scope.yaml_name(),
                            sc.bytes
                        ),
                    );
                    ok = false;
                }
            }
            out.push(v);
        }
        ok.then_some(Some(out))
    }

    pub fn views(&mut self, node: &Node, path: &str, ctx: Ctx) -> Vec<ViewId> {
        let entries = self.r.entries(node, path, "views").unwrap_or(&[]);
        let mut ids = Vec::new();
        for (name, n) in entries {
            let p = join(path, name);
            let entity = match self.view(name, n, &p, ctx) {
                Some(v) => {
                    self.views.push(v);
                    Entity::View(ViewId::new(self.views.len() - 1))
                }
                None => Entity::Invalid,
            };
            if self.declare(name, entity, &p) {
                if let Entity::View(id) = entity {
                    ids.push(id);
                }
            } else if let Entity::View(id) = entity {
                self.views.truncate(id.index());
            }
        }
        ids
    }

    fn view(&mut self, name: &str, node: &Node, path: &str, ctx: Ctx) -> Option<View> {
        let f = self.r.map(
            node,
            path,
            &format!("view {name}"),
            &[],
            &["of", "offset", "shape", "select"],
        )?;
        if f.has("select") {
            if let Some((k, _)) = f.entries.iter().find(|(k, _)| k != "select") {
                self.r.error_hint(
                    &f.path(k),
                    format!("view {name} mixes select: with {k}:"),
                    Some("a view is either { of, offset, shape } or { select: [A, B] }".into()),
                );
                return None;
            }
            return self.select_view(name, f.get("select")?, &f.path("select"), path, ctx);
        }
        let mut missing = false;
        for k in ["of", "shape"] {
            if !f.has(k) {
                self.r.error_hint(
                    path,
                    format!("missing required key \"{k}\" in view {name}"),
                    Some("a view is either { of, offset, shape } or { select: [A, B] }".into()),
                );
                missing = true;
            }
        }
        if missing {
            return None;
        }
        let of_path = f.path("of");
        let of_name = self
            .r
            .string(f.get("of")?, &of_path, "a buffer or view name")?;
        let of = match self.lookup(of_name).map(|n| n.entity) {
            Some(Entity::Buffer(b)) => Some(Ref::Buffer(b)),
            Some(Entity::View(v))
                if matches!(self.views[v.index()].kind, ViewKind::Window { .. }) =>
            {
                Some(Ref::View(v))
            }
            Some(Entity::View(_)) => {
                self.r.error(
                    &of_path,
                    format!("view {name}: \"{of_name}\" is a select; a window must be of a buffer or another window"),
                );
                None
            }
            Some(Entity::Invalid) => None,
            Some(e) => {
                self.r.error_hint(
                    &of_path,
                    format!(
                        "view {name}: \"{of_name}\" is {}, not an on-chip buffer",
                        e.kind()
                    ),
                    Some(
                        "views alias on-chip buffers; index gm tensors directly in operands".into(),
                    ),
                );
                None
            }
            None => {
                let cands = self.names_where(|e| matches!(e, Entity::Buffer(_) | Entity::View(_)));
                let hint = suggest(of_name, &cands);
                self.r
                    .error_hint(&of_path, format!("unknown buffer \"{of_name}\""), hint);
                None
            }
        };
        let offset = match f.get("offset") {
            Some(n) => self.expr(n, &f.path("offset"), true, false),
            None => Some(Expr::Const(0)),
        };
        let shape = f.get("shape").and_then(|n| self.shape(n, &f.path("shape")));
        let (of, offset, (shape, elements)) = (of?, offset?, shape?);
        let (scope, dtype, of_elements) = match of {
            Ref::Buffer(b) => {
                let b = &self.buffers[b.index()];
                (b.scope, b.dtype, b.elements)
            }
            Ref::View(v) => {
                let v = &self.views[v.index()];
                (v.scope, v.dtype, v.shape.iter().product())
            }
            Ref::Tensor(_) => unreachable!("windows are never of tensors"),
        };
        let fits = match offset.bounds(&self.ranges) {
            Some((lo, hi)) => {
                (lo >= 0 && (hi as i128 + elements as i128) <= of_elements as i128)
                    || (!self.refuses(&offset) && elements <= of_elements)
            }
            None => elements <= of_elements,
        };
        if !fits {
            let msg = format!(
                "view {name}: a window of {elements} elements at offset {} does not fit in {of_name} ({of_elements} elements)",
                self.show_expr(&offset)
            );
            self.r.error(path, msg);
            return None;
        }
        Some(View {
            name: name.to_string(),
            kind: ViewKind::Window { of, offset },
            path: path.to_string(),
            declared_in: ctx.parent,
            scope,
            dtype,
            shape,
        })
    }

    fn select_view(
        &mut self,
        name: &str,
        node: &Node,
        spath: &str,
        path: &str,
        ctx: Ctx,
    ) -> Option<View> {
        let items = self.r.seq(node, spath, "buffer names")?;
        if items.len() < 2 {
            self.r.error(
                spath,
                format!(
                    "view {name}: select needs at least two buffers, found {}",
                    items.len()
                ),
            );
            return None;
        }
        let mut of = Vec::new();
        let mut ok = true;
        for (i, n) in items.iter().enumerate() {
            let p = index(spath, i);
            let Some(s) = self.r.string(n, &p, "a buffer name") else {
                ok = false;
                continue;
            };
            match self.lookup(s).map(|n| n.entity) {
                Some(Entity::Buffer(b)) => of.push(b),
                Some(Entity::Invalid) => ok = false,
                Some(e) => {
                    self.r.error(
                        &p,
                        format!("view {name}: \"{s}\" is {}; select takes buffers", e.kind()),
                    );
                    ok = false;
                }
                None => {
                    let cands = self.names_where(|e| matches!(e, Entity::Buffer(_)));
                    let hint = suggest(s, &cands);
                    self.r
                        .error_hint(&p, format!("unknown buffer \"{s}\""), hint);
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        let first = self.buffers[of[0].index()].clone();
        for (i, b) in of.iter().enumerate().skip(1) {
            let b = &self.buffers[b.index()];
            if b.scope != first.scope || b.dtype != first.dtype || b.shape != first.shape {
                let msg = format!(
                    "view {name}: select mixes {} ({} {} {:?}) and {} ({} {} {:?}); they must have the same scope, dtype and shape",
                    first.name,
                    first.scope.yaml_name(),
                    first.dtype,
                    first.shape,
                    b.name,
                    b.scope.yaml_name(),
                    b.dtype,
                    b.shape
                );
                self.r.error(&index(spath, i), msg);
                ok = false;
            }
        }
        ok.then(|| View {
            name: name.to_string(),
            kind: ViewKind::Select { of },
            path: path.to_string(),
            declared_in: ctx.parent,
            scope: first.scope,
            dtype: first.dtype,
            shape: first.shape.clone(),
        })
    }

    // ----- blocks --------------------------------------------------------------------------

    /// A block that opens its own scope: a list of ops, or `{ buffers, views, body }`.
    fn block(&mut self, node: &Node, path: &str, ctx: Ctx) -> Block {
        self.scopes.push();
        let b = match node.value {
            Value::Map(_) => self.block_map(node, path, ctx),
            _ => self.ops_list(node, path, ctx),
        };
        self.scopes.pop();
        b
    }

    /// `{ buffers:, views:, body: }` in the current scope.
    fn block_map(&mut self, node: &Node, path: &str, ctx: Ctx) -> Block {
        let mut b = Block::default();
        let Some(f) = self
            .r
            .map(node, path, "a block", &["body"], &["buffers", "views"])
        else {
            return b;
        };
        if let Some(n) = f.get("buffers") {
            b.buffers = self.buffers(n, &f.path("buffers"), ctx);
        }
        if let Some(n) = f.get("views") {
            b.views = self.views(n, &f.path("views"), ctx);
        }
        if let Some(n) = f.get("body") {
            b.ops = self.ops_list(n, &f.path("body"), ctx).ops;
        }
        b
    }

    fn ops_list(&mut self, node: &Node, path: &str, ctx: Ctx) -> Block {
        let mut b = Block::default();
        let items: &[Node] = match &node.value {
            Value::Seq(s) => s,
            Value::Null => &[],
            _ => {
                let other = node;
                self.r.error_hint(
                    path,
                    format!("expected a list of ops, found {}", show(other)),
                    Some("write each op as a list item: - load: { src: x, dst: xb }".into()),
                );
                return b;
            }
        };
        for (i, item) in items.iter().enumerate() {
            if let Some(id) = self.op(item, &index(path, i), ctx) {
                b.ops.push(id);
            }
        }
        b
    }

    /// One list item. Control ops get their id before their blocks (pre-order); leaf ops only
    /// once they are built, so a rejected op leaves no hole.
    fn op(&mut self, item: &Node, path: &str, ctx: Ctx) -> Option<OpId> {
        let Value::Map(entries) = &item.value else {
            self.r.error_hint(
                path,
                format!("expected an op (a one-key mapping), found {}", show(item)),
                Some("write - OP: { fields }".into()),
            );
            return None;
        };
        let Some((key, value)) = entries
            .iter()
            .find(|(k, _)| !OP_SIBLINGS.contains(&k.as_str()))
        else {
            self.r.error(
                path,
                "this list item has no op: only block keys (buffers, views, body, then, else)",
            );
            return None;
        };
        let siblings: &[&str] = match key.as_str() {
            "for" | "while" => &["buffers", "views", "body"],
            "if" => &["then", "else"],
            _ => &[],
        };
        let known = super::ops::is_op(key);
        for (k, _) in entries {
            // beside an unknown op the sibling keys mean nothing yet: report the op alone
            if known && k != key && !siblings.contains(&k.as_str()) {
                let hint = if siblings.is_empty() {
                    Some(format!(
                        "an op is a one-key mapping; only for/while take buffers:, views:, body: beside them and if takes then:, else: (is \"{k}\" a field of {key}? indent it under {key}:)"
                    ))
                } else {
                    suggest(k, siblings)
                };
                self.r.error_hint(
                    &join(path, k),
                    format!("unknown key \"{k}\" beside op \"{key}\""),
                    hint,
                );
            }
        }
        let opath = join(path, key);
        let id = match key.as_str() {
            "for" => self.for_op(value, entries, path, &opath, ctx),
            "while" => self.while_op(value, entries, path, &opath, ctx),
            "if" => self.if_op(value, entries, path, &opath, ctx),
            _ if known => self.leaf_op(key, value, path, ctx),
            _ => {
                let hint = suggest(key, &super::ops::op_names());
                self.r
                    .error_hint(&opath, format!("unknown op \"{key}\""), hint);
                // it may have meant to write any buffer it names: no "read before first
                // write" errors that only repeat this one
                self.mark_named_buffers(value);
                None
            }
        };
        if let Some(id) = id {
            self.ops[id.index()].loc = op_loc(&mut self.texts, item, key, value);
        }
        id
    }

    /// Counts every buffer named by a string anywhere in `node` (an operand's leading name)
    /// as written.
    fn mark_named_buffers(&mut self, node: &Node) {
        match &node.value {
            Value::Str(text) => {
                let end = text
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(text.len());
                let entity = self.lookup(text[..end].trim()).map(|n| n.entity);
                let roots = match entity {
                    Some(Entity::Buffer(b)) => self.roots(Ref::Buffer(b)),
                    Some(Entity::View(v)) => self.roots(Ref::View(v)),
                    _ => vec![],
                };
                for b in roots {
                    self.written.mark(b);
                }
            }
            Value::Seq(items) => items.iter().for_each(|n| self.mark_named_buffers(n)),
            Value::Map(entries) => entries.iter().for_each(|(_, n)| self.mark_named_buffers(n)),
            _ => {}
        }
    }

    fn push_placeholder(&mut self, path: &str, ctx: Ctx) -> OpId {
        self.ops.push(Op {
            kind: OpKind::Use { operands: vec![] },
            path: path.to_string(),
            loc: Loc::default(),
            pipe: Some(Pipe::S),
            loop_parent: ctx.loop_parent,
            parent: ctx.parent,
        });
        OpId::new(self.ops.len() - 1)
    }

    fn declare_var(
        &mut self,
        name: &str,
        op: OpId,
        range: Option<(i64, i64)>,
        path: &str,
    ) -> VarId {
        let id = VarId::new(self.vars.len());
        self.vars.push(Var {
            name: name.to_string(),
            loop_op: Some(op),
        });
        self.ranges.push(range);
        self.declare(name, Entity::Var(id), path);
        id
    }

    /// The sibling blocks of a loop item, in the scope the caller opened.
    fn loop_block(
        &mut self,
        entries: &[(String, Node)],
        path: &str,
        opath: &str,
        ctx: Ctx,
    ) -> Block {
        let get = |k: &str| entries.iter().find(|(x, _)| x == k).map(|(_, v)| v);
        let mut b = Block::default();
        if let Some(n) = get("buffers") {
            b.buffers = self.buffers(n, &join(opath, "buffers"), ctx);
        }
        if let Some(n) = get("views") {
            b.views = self.views(n, &join(opath, "views"), ctx);
        }
        match get("body") {
            Some(Node {
                value: Value::Map(_),
                ..
            }) => self.r.error_hint(
                &join(opath, "body"),
                "expected a list of ops, found a mapping",
                Some(
                    "a loop's buffers: and views: sit beside for:/while:, not inside body:".into(),
                ),
            ),
            Some(n) => b.ops = self.ops_list(n, &join(opath, "body"), ctx).ops,
            None => self.r.error_hint(
                path,
                format!(
                    "missing required key \"body\" beside {}",
                    opath.rsplit('.').next().unwrap_or("the loop")
                ),
                Some("write body: as a sibling of the loop key in the same list item".into()),
            ),
        }
        b
    }

    fn for_op(
        &mut self,
        value: &Node,
        entries: &[(String, Node)],
        path: &str,
        opath: &str,
        ctx: Ctx,
    ) -> Option<OpId> {
        let header = self.r.map(
            value,
            opath,
            "a for loop",
            &["var", "to"],
            &["from", "step"],
        );
        let mut var_name = None;
        let (mut from, mut to, mut step) = (None, None, None);
        if let Some(f) = &header {
            var_name = f
                .get("var")
                .and_then(|n| self.r.string(n, &f.path("var"), "a loop variable name"))
                .map(str::to_string);
            from = match f.get("from") {
                Some(n) => self.expr(n, &f.path("from"), true, false),
                None => Some(Expr::Const(0)),
            };
            to = f
                .get("to")
                .and_then(|n| self.expr(n, &f.path("to"), true, false));
            step = match f.get("step") {
                Some(n) => self.expr(n, &f.path("step"), true, false),
                None => Some(Expr::Const(1)),
            };
            if let Some(s) = step.as_ref().and_then(Expr::as_const) {
                if s <= 0 {
                    self.r.error_hint(
                        &f.path("step"),
                        format!("for step {s} is not positive: the loop would never end"),
                        Some("loops count upwards; use a positive step".into()),
                    );
                    step = None;
                }
            }
            if let (Some(a), Some(b)) = (
                from.as_ref().and_then(Expr::as_const),
                to.as_ref().and_then(Expr::as_const),
            ) {
                if b < a {
                    self.r.error_hint(
                        &f.path("to"),
                        format!("for runs from {a} to {b}: a negative trip count"),
                        Some("to must be at least from (to == from runs zero times)".into()),
                    );
                    to = None;
                }
            }
            // the trip count where it is known: from the bounds' widest reach, by the step
            if let (Some(fr), Some(t), Some(s)) = (&from, &to, &step) {
                let lo = fr.bounds(&self.ranges).map(|b| b.0);
                let hi = t.bounds(&self.ranges).map(|b| b.1);
                if let (Some(lo), Some(hi), Some(s)) = (lo, hi, s.as_const().filter(|&s| s > 0)) {
                    let trips = (hi as i128 - lo as i128).max(0) / s as i128;
                    if trips > crate::limits::MAX_TRIPS as i128 {
                        self.too_many_trips(&f.path("to"), trips);
                        to = None;
                    }
                }
            }
        }
        let range = match (&from, &to, &step) {
            (Some(f), Some(t), Some(s)) => self.for_range(f, t, s),
            _ => None,
        };
        let id = self.push_placeholder(path, ctx);
        let inner = Ctx {
            parent: Some(id),
            loop_parent: Some(id),
        };
        self.scopes.push();
        let var = var_name
            .as_ref()
            .map(|n| self.declare_var(n, id, range, &join(opath, "var")));
        if let Some(v) = var {
            let grid = match (from.as_ref().and_then(Expr::as_const), step.as_ref()) {
                (_, Some(s)) if s.as_const() == Some(1) => Grid::Every,
                (Some(from), Some(s)) => match s.as_const() {
                    Some(step) if step > 1 => Grid::Step { from, step },
                    _ => Grid::Unknown,
                },
                _ => Grid::Unknown,
            };
            self.note_bounds(v, [&from, &to, &step].into_iter().flatten(), grid);
            self.enclosing.push(v);
        }
        // a loop with no known values may never run its body: nothing in it is refused for
        // a value it may never take
        let certain = self.certain;
        self.certain &= range.is_some();
        let body = self.loop_block(entries, path, opath, inner);
        self.certain = certain;
        if var.is_some() {
            self.enclosing.pop();
        }
        self.scopes.pop();
        if let (Some(var), Some(from), Some(to), Some(step)) = (var, from, to, step) {
            let l = ForLoop {
                var,
                from,
                to,
                step,
                body,
            };
            self.ops[id.index()].kind = OpKind::For(l);
        }
        Some(id)
    }

    fn too_many_trips(&mut self, path: &str, trips: i128) {
        self.r.error_hint(
            path,
            format!(
                "the loop can run {trips} times, more than npusim simulates (at most {})",
                crate::limits::show(crate::limits::MAX_TRIPS as u64)
            ),
            Some("a run stops at --max-instructions anyway; make the loop shorter".into()),
        );
    }

    fn for_range(&self, from: &Expr, to: &Expr, step: &Expr) -> Option<(i64, i64)> {
        Expr::for_range(from, to, step, &self.ranges)
    }

    fn while_op(
        &mut self,
        value: &Node,
        entries: &[(String, Node)],
        path: &str,
        opath: &str,
        ctx: Ctx,
    ) -> Option<OpId> {
        let header = self
            .r
            .map(value, opath, "a while loop", &["trips"], &["var"]);
        let mut trips = None;
        let mut var_name = None;
        if let Some(f) = &header {
            trips = f
                .get("trips")
                .and_then(|n| self.expr(n, &f.path("trips"), true, false));
            if let Some(t) = trips.as_ref().and_then(Expr::as_const) {
                if t < 0 {
                    self.r.error_hint(
                        &f.path("trips"),
                        format!("while trips {t} is negative"),
                        Some("trips is how many times the body runs: 0 or more".into()),
                    );
                    trips = None;
                }
            }
            if let Some((_, hi)) = trips.as_ref().and_then(|t| t.bounds(&self.ranges)) {
                if hi > crate::limits::MAX_TRIPS {
                    self.too_many_trips(&f.path("trips"), hi as i128);
                    trips = None;
                }
            }
            var_name = match f.get("var") {
                Some(n) => self
                    .r
                    .string(n, &f.path("var"), "a loop variable name")
                    .map(|s| (s.to_string(), true)),
                None => Some((format!("while@{path}"), false)),
            };
        }
        let range = trips
            .as_ref()
            .and_then(|t| t.bounds(&self.ranges))
            .and_then(|(_, hi)| (hi >= 1).then_some((0, hi - 1)));
        let id = self.push_placeholder(path, ctx);
        let inner = Ctx {
            parent: Some(id),
            loop_parent: Some(id),
        };
        self.scopes.push();
        let var = var_name.map(|(n, named)| {
            if named {
                self.declare_var(&n, id, range, &join(opath, "var"))
            } else {
                // anonymous: not a name a program can write, so not in the namespace
                let v = VarId::new(self.vars.len());
                self.vars.push(Var {
                    name: n,
                    loop_op: Some(id),
                });
                self.ranges.push(range);
                v
            }
        });
        if let Some(v) = var {
            self.note_bounds(v, trips.iter(), Grid::Every);
            self.enclosing.push(v);
        }
        // a loop with no known values may never run its body: nothing in it is refused for
        // a value it may never take
        let certain = self.certain;
        self.certain &= range.is_some();
        let body = self.loop_block(entries, path, opath, inner);
        self.certain = certain;
        if var.is_some() {
            self.enclosing.pop();
        }
        self.scopes.pop();
        if let (Some(var), Some(trips)) = (var, trips) {
            self.ops[id.index()].kind = OpKind::While { var, trips, body };
        }
        Some(id)
    }

    fn if_op(
        &mut self,
        value: &Node,
        entries: &[(String, Node)],
        path: &str,
        opath: &str,
        ctx: Ctx,
    ) -> Option<OpId> {
        let cond = self.expr(value, opath, true, true);
        let id = self.push_placeholder(path, ctx);
        let inner = Ctx {
            parent: Some(id),
            loop_parent: ctx.loop_parent,
        };
        let get = |k: &str| entries.iter().find(|(x, _)| x == k).map(|(_, v)| v);
        // each branch is checked over the ranges its guard narrows
        let certain = self.certain;
        let branch = |l: &mut Self, holds: bool, key: &str| {
            let narrowed = cond.as_ref().map(|c| {
                let (exact, n) = l.narrow(c, holds);
                l.certain &= exact;
                n
            });
            let b = get(key).map(|n| l.block(n, &join(opath, key), inner));
            if let Some(n) = narrowed {
                n.undo(&mut l.ranges);
            }
            l.certain = certain;
            b
        };
        let then = branch(self, true, "then");
        if then.is_none() {
            self.r.error_hint(
                path,
                "missing required key \"then\" beside if",
                Some(
                    "write then: (and optionally else:) as siblings of if: in the same list item"
                        .into(),
                ),
            );
        }
        let els = branch(self, false, "else");
        if let (Some(cond), Some(then)) = (cond, then) {
            self.ops[id.index()].kind = OpKind::If { cond, then, els };
        }
        Some(id)
    }

    /// Records which variables loop variable `v`'s bounds `exprs` read, directly or through
    /// theirs, and which values it takes in its range.
    fn note_bounds<'e>(&mut self, v: VarId, exprs: impl Iterator<Item = &'e Expr>, grid: Grid) {
        let mut read = Vec::new();
        for e in exprs {
            e.vars(&mut read);
        }
        let mut all = read.clone();
        for r in read {
            all.extend(self.facts.get(r.index()).into_iter().flat_map(|f| &f.read));
        }
        all.sort_unstable();
        all.dedup();
        if self.facts.len() <= v.index() {
            self.facts.resize(v.index() + 1, VarFacts::default());
        }
        self.facts[v.index()] = VarFacts { read: all, grid };
    }

    /// Narrows the ranges by `cond` (true: `holds`) for a branch, and says whether the
    /// narrowed ranges are exactly where the branch runs: the guard is exact
    /// ([`crate::guard::Guard::Exact`]); each narrowed variable's range is trimmed to values its
    /// loop takes (`t` from 0 step 4 under `t < 10` is 0 .. 8, not 0 .. 9); and no enclosing
    /// loop's range was computed from a narrowed variable (`for i from j` inside `if: "j < 2"`
    /// keeps i's range over every j, values the branch never sees).
    fn narrow(&mut self, cond: &Expr, holds: bool) -> (bool, crate::guard::Narrowed) {
        let n = crate::guard::narrow(cond, holds, &mut self.ranges);
        if n.guard == crate::guard::Guard::Never {
            return (false, n);
        }
        let mut exact = n.guard == crate::guard::Guard::Exact;
        let changed: Vec<VarId> = n.changed().collect();
        for narrowed in changed {
            let v = narrowed.index();
            let grid = self.facts.get(v).map_or(Grid::Every, |f| f.grid);
            match (grid, self.ranges[v]) {
                (Grid::Every, _) => {}
                (Grid::Step { from, step }, Some((lo, hi))) => {
                    // the first and last values from + k·step in [lo, hi]
                    let up = (lo as i128 - from as i128).max(0);
                    let lo = from as i128 + (up + step as i128 - 1) / step as i128 * step as i128;
                    let hi = from as i128
                        + (hi as i128 - from as i128).div_euclid(step as i128) * step as i128;
                    if lo > hi {
                        // no value of the loop satisfies the guard: the branch never runs
                        return (false, n);
                    }
                    self.ranges[v] = Some((lo as i64, hi as i64));
                }
                _ => exact = false,
            }
            if self.enclosing.iter().any(|w| {
                self.facts
                    .get(w.index())
                    .is_some_and(|f| f.read.contains(&narrowed))
            }) {
                exact = false;
            }
        }
        (exact, n)
    }

    // ----- whole program -----------------------------------------------------------------

    /// Checks over the whole program; problems of no one place are reported at `at` (the
    /// document, or a mixed kernel's part).
    fn whole_program_checks(&mut self, at: &str) {
        use crate::limits::{show, MAX_BUFFERS, MAX_OPS, MAX_TOTAL_SLOT_BYTES};
        let counts = [
            ("buffers", self.buffers.len(), MAX_BUFFERS),
            ("ops", self.ops.len(), MAX_OPS),
        ];
        for (what, n, max) in counts {
            if n > max {
                self.r.error(
                    at,
                    format!(
                        "the program has {n} {what}, more than npusim plans (at most {})",
                        show(max as u64)
                    ),
                );
            }
        }
        let total = self.buffers.iter().try_fold(0u64, |sum, b| {
            b.bytes
                .checked_mul(b.multi as u64)
                .and_then(|x| sum.checked_add(x))
        });
        if total.is_none_or(|t| t > MAX_TOTAL_SLOT_BYTES) {
            self.r.error_hint(
                at,
                format!(
                    "the program's buffers need more bytes in all than npusim plans (at most {})",
                    show(MAX_TOTAL_SLOT_BYTES)
                ),
                Some("on-chip buffers are kilobytes to megabytes; check the shapes".into()),
            );
        }
        if let Some(at) = self.mmad_l1_at.clone() {
            for i in 0..self.buffers.len() {
                let b = &self.buffers[i];
                if matches!(b.scope, Space::L0a | Space::L0b) {
                    let msg = format!(
                        "buffer {} is in {}, but the program uses mmad_l1 ({at}), which stages through L0A/L0B itself",
                        b.name,
                        b.scope.yaml_name()
                    );
                    let path = join(&b.path, "scope");
                    self.r.error_hint(
                        &path,
                        msg,
                        Some(
                            "use mmad with explicit l0a/l0b buffers, or drop the l0a/l0b buffers"
                                .into(),
                        ),
                    );
                }
            }
        }
        // share cycles: report each cycle once, at its lowest-numbered buffer
        for start in 0..self.buffers.len() {
            let mut chain = vec![start];
            let mut cur = start;
            while let Some(next) = self.buffers[cur].share.map(|b| b.index()) {
                if next == start {
                    if chain.iter().all(|&b| b >= start) {
                        let names: Vec<&str> = chain
                            .iter()
                            .map(|&b| self.buffers[b].name.as_str())
                            .collect();
                        let msg = format!(
                            "share cycle: {} -> {}",
                            names.join(" -> "),
                            self.buffers[start].name
                        );
                        let path = join(&self.buffers[start].path, "share");
                        self.r.error_hint(
                            &path,
                            msg,
                            Some("share must end at a buffer that shares nothing".into()),
                        );
                    }
                    break;
                }
                if chain.contains(&next) {
                    break;
                }
                chain.push(next);
                cur = next;
            }
        }
    }
}
