//! The loader's state while it builds a program, and what every part of loading needs: the
//! scope chain of declared names, expressions, dtypes and pipes. [`super::program`] (blocks,
//! declarations, control ops) and [`super::ops`] (leaf ops and operands) both build on it;
//! neither depends on the other's internals except that blocks call [`Loader::leaf_op`].

use super::reader::{index, show, suggest, Reader};
use crate::config::{Config, CoreConfig};
use crate::expr::{self, Expr, ParseError};
use crate::ids::{BufferId, CoreId, OpId, TensorId, VarId, ViewId};
use crate::program::{Buffer, Op, SyncMode, Tensor, Var, View};
use crate::types::{Dtype, Pipe};
use crate::written::Written;
use crate::yaml::{Node, Value};

/// What a declared name stands for. `Invalid` marks a declaration that failed: uses of it are
/// silently skipped, so one bad declaration does not cascade into many errors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Entity {
    Param(i64),
    Tensor(TensorId),
    Buffer(BufferId),
    View(ViewId),
    Var(VarId),
    Invalid,
}

impl Entity {
    pub fn kind(self) -> &'static str {
        match self {
            Entity::Param(_) => "a param",
            Entity::Tensor(_) => "a gm tensor",
            Entity::Buffer(_) => "a buffer",
            Entity::View(_) => "a view",
            Entity::Var(_) => "a loop variable",
            Entity::Invalid => "an invalid declaration",
        }
    }
}

pub(super) struct Name {
    pub name: String,
    pub entity: Entity,
    pub path: String,
}

/// Where an op or declaration sits.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ctx {
    pub parent: Option<OpId>,
    pub loop_parent: Option<OpId>,
}

/// Notes taken while an expression resolves names, reported after the parse.
#[derive(Default)]
pub(super) struct Note {
    pub misuse: Option<String>,
    pub tainted: bool,
}

pub(super) fn resolve_value(
    scopes: &Scopes,
    name: &str,
    vars: bool,
    note: &mut Note,
) -> Option<Expr> {
    match lookup_in(scopes, name).map(|n| n.entity) {
        Some(Entity::Param(v)) => Some(Expr::Const(v)),
        Some(Entity::Var(id)) if vars => Some(Expr::Var(id)),
        Some(Entity::Var(_)) => {
            note.misuse = Some(if LAUNCH_NAMES.contains(&name) {
                format!(
                    "\"{name}\" differs from core to core, but this value must be constant (params only)"
                )
            } else {
                format!(
                    "\"{name}\" is a loop variable, but this value must be constant (params only)"
                )
            });
            None
        }
        Some(Entity::Invalid) => {
            note.tainted = true;
            // any non-zero value: the result is discarded
            Some(Expr::Const(1))
        }
        Some(e) => {
            note.misuse = Some(format!(
                "\"{name}\" is {}, not a param or loop variable",
                e.kind()
            ));
            None
        }
        None => None,
    }
}

/// The names visible at the point being loaded: the blocks enclosing it, outermost first. Inner
/// blocks cannot shadow outer names, so a name is visible at most once, and one index answers
/// every lookup (a program of 100,000 buffers looks names up 300,000 times).
#[derive(Default)]
pub(super) struct Scopes {
    /// Visible names in declaration order.
    names: Vec<Name>,
    index: std::collections::HashMap<String, usize>,
    /// Where each open block's names start in `names`.
    starts: Vec<usize>,
}

impl Scopes {
    /// Opens a block.
    pub fn push(&mut self) {
        self.starts.push(self.names.len());
    }

    /// Closes the innermost block: its names are no longer visible.
    pub fn pop(&mut self) {
        let start = self.starts.pop().expect("a scope is open");
        for n in self.names.drain(start..) {
            self.index.remove(&n.name);
        }
    }

    pub fn lookup(&self, name: &str) -> Option<&Name> {
        self.index.get(name).map(|&i| &self.names[i])
    }

    /// Adds a name to the innermost block (the caller checked it is not visible yet).
    fn add(&mut self, n: Name) {
        self.index.insert(n.name.clone(), self.names.len());
        self.names.push(n);
    }

    /// Every visible name, outer blocks first, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &Name> {
        self.names.iter()
    }
}

fn lookup_in<'s>(scopes: &'s Scopes, name: &str) -> Option<&'s Name> {
    scopes.lookup(name)
}

const RESERVED: &[&str] = &["min", "max", "true", "false", "all"];
/// The names the launch gives every program (`launch.blocks` and the core's place in it).
pub(super) const LAUNCH_NAMES: &[&str] = &["block", "blocks", "subblock"];
pub(super) const OP_SIBLINGS: &[&str] = &["buffers", "views", "body", "then", "else"];

/// What the loader knows of a loop variable besides its range (a launch variable's and a
/// `while` variable's are the default: they read nothing and take every value).
#[derive(Clone, Default, Debug)]
pub(super) struct VarFacts {
    /// The variables its loop's bounds read, and theirs.
    pub read: Vec<VarId>,
    /// The values it takes in its range.
    pub grid: Grid,
}

/// The values a loop variable takes in its range.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) enum Grid {
    /// Every one (step 1).
    #[default]
    Every,
    /// `from + k·step`, from and step constant.
    Step { from: i64, step: i64 },
    /// Not known (a step other than 1 from a bound that is not constant).
    Unknown,
}

pub(super) struct Loader<'a, 'f> {
    pub r: &'a mut Reader<'f>,
    pub config: &'a Config,
    pub core: Option<&'a CoreConfig>,
    pub core_id: Option<CoreId>,
    pub sync: SyncMode,
    pub params: Vec<(String, i64)>,
    pub tensors: Vec<Tensor>,
    pub buffers: Vec<Buffer>,
    pub views: Vec<View>,
    pub vars: Vec<Var>,
    /// Inclusive value range of each loop variable, where it can be bounded; inside an `if`
    /// branch, narrowed by its guard ([`crate::guard::narrow`]).
    pub ranges: Vec<Option<(i64, i64)>>,
    /// Per loop variable (by [`VarId`]; shorter than `vars` where nothing was recorded): what
    /// says whether a narrowed range is exact.
    pub facts: Vec<VarFacts>,
    /// The variables of the loops around the op being loaded.
    pub enclosing: Vec<VarId>,
    /// Whether every `if` around the op being loaded says exactly where its branch runs in
    /// `ranges` ([`crate::guard::Guard::Exact`]): then an operand out of bounds for some values
    /// in the ranges is out of bounds in an iteration that runs, and is refused; otherwise it is
    /// left to the engine's run-time check (docs/decisions.md, "Guards").
    pub certain: bool,
    pub ops: Vec<Op>,
    /// The ops' one-line texts, one after the other (`Program::texts`).
    pub texts: String,
    pub scopes: Scopes,
    /// The buffers an earlier op has written, in program order.
    pub written: Written,
    /// Per op being parsed: the buffers its operands touch.
    pub touched: Vec<BufferId>,
    pub mmad_l1_at: Option<String>,
    /// The program has a `launch`: `block`, `blocks` and `subblock` are its, not the user's.
    pub launch_names: bool,
    /// The program is one part of a mixed kernel (`aic:` and `aiv:`).
    pub mixed: bool,
}

impl Loader<'_, '_> {
    /// Whether an operand bound `e` that can leave its dimension for some values in the ranges
    /// is refused now, rather than checked by the engine when the op runs: when the branches
    /// around the op say exactly where they run, or when `e` does not depend on the loop at all
    /// (then it is out of bounds whenever the op runs).
    pub fn refuses(&self, e: &Expr) -> bool {
        // a bound of a non-linear expression (`j + min(n - j, t)`: a tail tile) is an interval
        // over-approximation, reached by no iteration perhaps: checked when it runs instead
        (self.certain && e.linear().is_some()) || e.as_const().is_some()
    }

    // ----- names -------------------------------------------------------------------------

    pub fn lookup(&self, name: &str) -> Option<&Name> {
        lookup_in(&self.scopes, name)
    }

    /// Declares `name` in the innermost scope; `false` (and a diagnostic) if it is taken or
    /// not an identifier. On a clash the earlier declaration stays visible, so later uses
    /// still resolve and do not repeat the problem.
    pub fn declare(&mut self, name: &str, entity: Entity, path: &str) -> bool {
        // a hidden character gets its own message, naming it (the one below would show it)
        if !self.r.name_ok(name, path) {
            return false;
        }
        let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            self.r.error_hint(
                path,
                format!("\"{name}\" is not a valid name"),
                Some("names are letters, digits and _, starting with a letter or _".into()),
            );
            return false;
        }
        if self.launch_names && LAUNCH_NAMES.contains(&name) {
            self.r.error_hint(
                path,
                format!("\"{name}\" is the launch's: block, blocks and subblock name a core of the launch"),
                Some("pick another name".into()),
            );
            return false;
        }
        self.declare_unchecked(name, entity, path)
    }

    /// [`Loader::declare`] without the launch-name check: how the launch's own names enter.
    pub fn declare_unchecked(&mut self, name: &str, entity: Entity, path: &str) -> bool {
        if RESERVED.contains(&name) {
            self.r.error_hint(
                path,
                format!("\"{name}\" is a reserved word"),
                Some(format!(
                    "{} are reserved; pick another name",
                    RESERVED.join(", ")
                )),
            );
            return false;
        }
        if let Some(prev) = self.lookup(name) {
            let prev_path = prev.path.clone();
            self.r.error_hint(
                path,
                format!("\"{name}\" is already declared at {prev_path}"),
                Some(
                    "params, gm tensors, buffers, views and loop variables share one namespace \
                     and inner blocks cannot shadow outer names; rename one"
                        .into(),
                ),
            );
            return false;
        }
        self.scopes.add(Name {
            name: name.to_string(),
            entity,
            path: path.to_string(),
        });
        true
    }

    /// Names in scope that `pred` accepts, for did-you-mean hints.
    pub fn names_where(&self, pred: impl Fn(Entity) -> bool) -> Vec<&str> {
        self.scopes
            .iter()
            .filter(|n| pred(n.entity))
            .map(|n| n.name.as_str())
            .collect()
    }

    pub fn var_name(&self, v: VarId) -> String {
        self.vars
            .get(v.index())
            .map_or_else(|| v.to_string(), |x| x.name.clone())
    }

    pub fn show_expr(&self, e: &Expr) -> String {
        let name = |v: VarId| self.var_name(v);
        let text = e.display(&name).to_string();
        text
    }

    // ----- expressions -------------------------------------------------------------------

    /// An integer expression. `vars`: loop variables may appear (else params only);
    /// `boolean`: `true`/`false` are accepted as 1/0.
    pub fn expr(&mut self, node: &Node, path: &str, vars: bool, boolean: bool) -> Option<Expr> {
        match &node.value {
            Value::Int(i) => Some(Expr::Const(*i)),
            Value::Bool(b) if boolean => Some(Expr::Const(*b as i64)),
            Value::Str(s) => self.expr_text(s, path, vars),
            Value::TooLarge(_) => {
                self.r.too_large(node, path);
                None
            }
            _ => {
                let other = node;
                let hint = match &other.value {
                    Value::Float(_) => Some("expressions are integers".to_string()),
                    Value::Bool(_) => Some("write an integer (1 or 0)".to_string()),
                    _ => None,
                };
                self.r.error_hint(
                    path,
                    format!("expected an integer expression, found {}", show(other)),
                    hint,
                );
                None
            }
        }
    }

    /// An expression that stands for a data value the hardware would use (a vector op's
    /// `scalar`). npusim computes addresses, sizes and trip counts but never data, so a
    /// fractional value is refused with a hint that any integer does the same.
    pub fn data_expr(&mut self, node: &Node, path: &str) -> Option<Expr> {
        let fractional = match &node.value {
            Value::Float(_) => true,
            Value::Str(s) => s.trim().parse::<f64>().is_ok_and(|v| v.fract() != 0.0),
            _ => false,
        };
        if fractional {
            self.r.error_hint(
                path,
                format!(
                    "expected an integer expression, found {}: expressions are integers",
                    show(node)
                ),
                Some(
                    "npusim does not compute data values, only addresses, sizes and cycles: \
                     the scalar's value never changes a run, so any integer works (write 1)"
                        .to_string(),
                ),
            );
            return None;
        }
        self.expr(node, path, true, false)
    }

    pub fn expr_text(&mut self, src: &str, path: &str, vars: bool) -> Option<Expr> {
        if !self.simple_enough(src, path) {
            return None;
        }
        let mut note = Note::default();
        let res = {
            let scopes = &self.scopes;
            expr::parse(src, &mut |n| resolve_value(scopes, n, vars, &mut note))
        };
        if note.tainted {
            return None;
        }
        match res {
            Ok(e) => Some(e),
            Err(e) => {
                self.report_expr_error(src, path, e, note, vars);
                None
            }
        }
    }

    /// The expression parser recurses per parenthesis and unary operator; refuse text that
    /// could exhaust the stack, since no real kernel comes near the limit.
    pub fn simple_enough(&mut self, src: &str, path: &str) -> bool {
        let nesting = src
            .chars()
            .filter(|c| matches!(c, '(' | '[' | '-' | '!'))
            .count();
        if nesting > 256 || src.len() > 8192 {
            self.r.error(
                path,
                format!("expression is too complex ({} characters, {nesting} nesting operators; limits 8192 and 256)", src.len()),
            );
            return false;
        }
        true
    }

    pub fn report_expr_error(
        &mut self,
        src: &str,
        path: &str,
        e: ParseError,
        note: Note,
        vars: bool,
    ) {
        match e {
            ParseError::UnknownName { name, .. } => {
                if let Some(m) = note.misuse {
                    self.r.error(path, format!("{m} (in \"{src}\")"));
                } else {
                    let cands = self.names_where(|e| {
                        matches!(e, Entity::Param(_)) || (vars && matches!(e, Entity::Var(_)))
                    });
                    let hint = suggest(&name, &cands);
                    self.r.error_hint(
                        path,
                        format!("unknown name \"{name}\" in expression \"{src}\""),
                        hint,
                    );
                }
            }
            ParseError::Syntax { message, at } => self.r.error(
                path,
                format!(
                    "bad expression \"{src}\": {message} at character {}",
                    at + 1
                ),
            ),
            ParseError::Eval { error, .. } => {
                self.r.error(path, format!("expression \"{src}\": {error}"))
            }
        }
    }

    /// A constant integer over params.
    pub fn const_int(&mut self, node: &Node, path: &str) -> Option<i64> {
        self.expr(node, path, false, false)?.as_const()
    }

    pub fn shape(&mut self, node: &Node, path: &str) -> Option<(Vec<u64>, u64)> {
        self.shape_of(node, path, false)
    }

    /// A buffer's shape: as [`Self::shape`], but a plan-only load (`npusim opt` on lit
    /// tests) also takes a dimension of 0: HIVM plans an empty buffer (0 bytes, placed where
    /// its first fit puts a size of 0). A program's buffers hold at least one element.
    pub fn buffer_shape(&mut self, node: &Node, path: &str) -> Option<(Vec<u64>, u64)> {
        let empty_ok = self.r.plan_only;
        self.shape_of(node, path, empty_ok)
    }

    fn shape_of(&mut self, node: &Node, path: &str, empty_ok: bool) -> Option<(Vec<u64>, u64)> {
        let items = self.r.seq(node, path, "a shape")?;
        let mut dims = Vec::new();
        let mut ok = true;
        for (i, d) in items.iter().enumerate() {
            let p = index(path, i);
            match self.const_int(d, &p) {
                Some(v) if v > 0 => dims.push(v as u64),
                Some(0) if empty_ok => dims.push(0),
                Some(v) => {
                    self.r
                        .error(&p, format!("shape dimension {v} is not positive"));
                    ok = false;
                }
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        let max = crate::limits::MAX_ELEMENTS;
        let elements = dims
            .iter()
            .try_fold(1u64, |a, d| a.checked_mul(*d).filter(|x| *x <= max));
        if elements.is_none() {
            self.r.error_hint(
                path,
                format!(
                    "shape {dims:?} has more elements than npusim handles (at most {})",
                    crate::limits::show(max)
                ),
                Some("split the tensor or buffer".into()),
            );
        }
        Some((dims, elements?))
    }

    pub fn dtype(&mut self, node: &Node, path: &str) -> Option<Dtype> {
        let s = self.r.string(node, path, "a dtype")?;
        let d = Dtype::parse(s);
        if d.is_none() {
            let hint = suggest(s, &Dtype::names());
            self.r
                .error_hint(path, format!("unknown dtype \"{s}\""), hint);
        }
        d
    }

    pub fn pipe(&mut self, node: &Node, path: &str) -> Option<Pipe> {
        let s = self.r.string(node, path, "a pipe name")?;
        let Some(p) = Pipe::parse(s) else {
            let names: Vec<&str> = match self.core {
                Some(c) => c.pipes.iter().map(|p| p.yaml_name()).collect(),
                None => Pipe::yaml_names(),
            };
            let hint = suggest(s, &names);
            self.r
                .error_hint(path, format!("unknown pipe \"{s}\""), hint);
            return None;
        };
        self.core_has_pipe(p, path, &format!("pipe {}", p.yaml_name()))
            .then_some(p)
    }

    /// `true` when the program's core has `pipe` (or the core is unknown).
    pub fn core_has_pipe(&mut self, pipe: Pipe, path: &str, what: &str) -> bool {
        let Some(core) = self.core else {
            return true;
        };
        if core.has_pipe(pipe) {
            return true;
        }
        let have: Vec<&str> = core.pipes.iter().map(|p| p.yaml_name()).collect();
        self.r.error_hint(
            path,
            format!(
                "{what} needs pipe {}, which core {} does not have",
                pipe.yaml_name(),
                core.name
            ),
            Some(format!("core {} has pipes: {}", core.name, have.join(", "))),
        );
        false
    }
}
