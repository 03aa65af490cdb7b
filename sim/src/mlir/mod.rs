//! HIVM MLIR in (docs/mlir.md): the reader builds the located tree of [`ast`]; the lowering
//! turns a function into the program model the planner, sync pass and engine read.

pub mod ast;
pub mod lower;
pub mod print;

use crate::config::{Config, CoreConfig};
use crate::diag::{Diagnostic, LoadError};
use crate::program::{Kernel, Loc};
use crate::types::Pipe;
use ast::{Chunk, Op, OpKind};
pub use lower::{Lowered, Options, SyncOps};

/// A function of an MLIR file, loaded.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub kernel: Kernel,
    pub lowered: Lowered,
    /// The config the kernel loaded against: the one given, plus a `mix` core type when the
    /// function uses both the vector and the cube core's memories ([`with_mix_core`]).
    pub config: Config,
    /// Which chunk of the file the function is in.
    pub chunk: usize,
}

/// The functions of `chunks` that `func` selects: the one named `func`, else every function
/// with a body.
pub fn select<'a>(
    chunks: &'a [Chunk],
    func: Option<&str>,
    file: &str,
) -> Result<Vec<(usize, &'a Op)>, LoadError> {
    let all = lower::functions(chunks);
    let Some(name) = func else {
        if all.is_empty() {
            return Err(LoadError {
                diagnostics: vec![Diagnostic::error(
                    file,
                    "",
                    "the file holds no func.func with a body: nothing to simulate",
                )],
            });
        }
        return Ok(all);
    };
    let chosen: Vec<_> = all
        .iter()
        .copied()
        .filter(|(_, op)| matches!(&op.kind, OpKind::Func { name: n, .. } if n == name))
        .collect();
    if chosen.is_empty() {
        let names: Vec<String> = all
            .iter()
            .filter_map(|(_, op)| match &op.kind {
                OpKind::Func { name, .. } => Some(format!("@{name}")),
                _ => None,
            })
            .collect();
        return Err(LoadError {
            diagnostics: vec![Diagnostic::error(file, "", format!("no function @{name} in the file"))
                .with_hint(format!("its functions: {}", names.join(", ")))],
        });
    }
    Ok(chosen)
}

/// Lowers and loads one function of a parsed file (`text` is the whole file).
#[allow(clippy::too_many_arguments)]
pub fn load_function(
    text: &str,
    chunks: &[Chunk],
    chunk: usize,
    func: &Op,
    file: &str,
    config: &Config,
    opts: &Options,
    blocks: Option<u32>,
) -> Result<Loaded, LoadError> {
    let lowered = lower::lower(text, &chunks[chunk], func, file, opts)
        .map_err(|diagnostics| LoadError { diagnostics })?;
    let config = if lowered.core == "mix" && config.core_named("mix").is_none() {
        with_mix_core(config)
    } else {
        config.clone()
    };
    let mut kernel =
        crate::load::load_kernel_tree(&lowered.doc, file, &config, &opts.params, blocks)?;
    for p in &mut kernel.parts {
        retext(p, &lowered);
    }
    Ok(Loaded {
        kernel,
        lowered,
        config,
        chunk,
    })
}

/// Findings name ops by their MLIR text (`hivm.hir.load ins(%arg0 : ...) outs(...)`), not
/// by the YAML the lowering built.
fn retext(p: &mut crate::Program, lowered: &Lowered) {
    let by_pos: std::collections::HashMap<(u32, u32), &str> = lowered
        .texts
        .iter()
        .map(|(pos, t)| ((pos.line, pos.column), t.as_str()))
        .collect();
    let mut texts = String::new();
    for op in &mut p.ops {
        let start = texts.len();
        let old = &p.texts[op.loc.text.0 as usize..op.loc.text.1 as usize];
        match by_pos.get(&(op.loc.line, op.loc.column)) {
            Some(t) => texts.push_str(t),
            None => texts.push_str(old),
        }
        op.loc.text = (start as u32, texts.len() as u32);
    }
    let _ = Loc::TEXT_MAX;
    p.texts = texts.into();
}

/// `config` with one more core type, `mix`: every scope and pipe of its core types. HIVM plans
/// a MIX function (one function touching UB and the cube's memories) before it is split into
/// its AIC and AIV parts; npusim plans it on this core, and runs only split kernels.
pub fn with_mix_core(config: &Config) -> Config {
    let mut c = config.clone();
    let mut mix = CoreConfig {
        name: "mix".into(),
        scopes: Vec::new(),
        pipes: Vec::new(),
    };
    for core in &config.cores {
        for s in &core.scopes {
            if !mix.scopes.iter().any(|m| m.space == s.space) {
                mix.scopes.push(*s);
            }
        }
    }
    for p in Pipe::ALL {
        if config.cores.iter().any(|c| c.pipes.contains(&p)) {
            mix.pipes.push(p);
        }
    }
    c.cores.push(mix);
    c
}
