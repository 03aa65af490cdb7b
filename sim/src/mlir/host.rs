//! The tiling struct of a kernel of dynamic shape, from the host tiling function beside it
//! (docs/mlir.md, "Dynamic shapes"; docs/decisions.md).
//!
//! A kernel the compiler tiles for shapes known only when it runs reads its sizes with
//! `memref.dim` and its tile sizes from the tiling struct, a gm argument the host fills by
//! running the tiling function before the launch. npusim takes the sizes from `--param
//! argN_dimK` and, when the file also holds a host tiling function of the kernel's signature
//! (`scripts/compile-ir` appends it to `after-sync.mlir`), computes the struct from it as the
//! host would; `--param argN_elemK` gives an element by hand and wins.

use super::ast::{Attr, Chunk, FuncArg, Op, OpKind, Type};
use super::lower::{self, Options, SyncOps};

/// Whether `op` is a host tiling function: marked `hacc.host_func_type = <tiling_function>`,
/// or a host function named `..._tiling_function` (the compiler leaves the copy it makes per
/// kernel unmarked).
fn is_tiling_function(op: &Op) -> bool {
    let attr = |name: &str, want: &str| {
        op.attrs.iter().any(|a| {
            a.name == name
                && matches!(&a.value, Some(Attr::Dialect { body, .. }) | Some(Attr::Enum(body)) if body == want)
        })
    };
    let named = matches!(&op.kind, OpKind::Func { name, .. } if name.ends_with("_tiling_function"));
    attr("hacc.host_func_type", "tiling_function") || (named && attr("hacc.function_kind", "HOST"))
}

/// The arguments' types agree, address spaces aside (the host's memrefs have none).
fn same_signature(a: &[FuncArg], b: &[FuncArg]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (&x.ty, &y.ty) {
            (Type::MemRef(p), Type::MemRef(q)) => p.shape == q.shape && p.elem == q.elem,
            (Type::Index | Type::Int { .. }, Type::Index | Type::Int { .. }) => true,
            (p, q) => std::mem::discriminant(p) == std::mem::discriminant(q),
        })
}

/// The params (`argN_elemK`, by the kernel's argument names) the host tiling function in
/// `all` computes for `kernel` from `params` (the sizes, by the kernel's argument names);
/// empty when the kernel's shapes are static or no tiling function matches its signature.
pub fn tiling_params(
    text: &str,
    chunks: &[Chunk],
    all: &[(usize, &Op)],
    kernel: &Op,
    file: &str,
    params: &[(String, i64)],
) -> Vec<(String, i64)> {
    let OpKind::Func { args, .. } = &kernel.kind else {
        return Vec::new();
    };
    let dynamic = args
        .iter()
        .any(|a| matches!(&a.ty, Type::MemRef(m) if m.shape.contains(&super::ast::Dim::Dynamic)));
    if !dynamic {
        return Vec::new();
    }
    let Some((chunk, host, host_args)) = all.iter().find_map(|(c, op)| match &op.kind {
        OpKind::Func { args: h, .. } if is_tiling_function(op) && same_signature(args, h) => {
            Some((*c, *op, h))
        }
        _ => None,
    }) else {
        return Vec::new();
    };
    // the kernel's params, renamed to the host's arguments (the same positions)
    let mut host_params = Vec::new();
    for (k, h) in args.iter().zip(host_args) {
        let (kn, hn) = (
            lower::sanitize(&k.value.name),
            lower::sanitize(&h.value.name),
        );
        for (name, v) in params {
            if *name == kn {
                host_params.push((hn.clone(), *v));
            } else if let Some(rest) = name.strip_prefix(&format!("{kn}_dim")) {
                host_params.push((format!("{hn}_dim{rest}"), *v));
            }
        }
    }
    let opts = Options {
        params: host_params,
        sync: SyncOps::Keep,
        lenient: false,
    };
    let mut out: Vec<(String, i64)> = Vec::new();
    for (i, at, v) in lower::host_stores(text, &chunks[chunk], host, file, &opts) {
        let ([k], Some(a)) = (at.as_slice(), args.get(i)) else {
            continue;
        };
        let name = format!("{}_elem{k}", lower::sanitize(&a.value.name));
        if params.iter().any(|(n, _)| *n == name) {
            continue;
        }
        // a later store to the same element wins, as it would in the host's memory
        out.retain(|(n, _)| *n != name);
        out.push((name, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel that copies `%x` to `%y` in tiles of `%t[0]` elements, and its host tiling
    /// function: the tile is min(size, 256) (bishengir-opt reads this file).
    const KERNEL: &str = include_str!("host_test_kernel.mlir");

    fn config() -> crate::Config {
        crate::load_config(crate::builtin::builtin("ascend910b").unwrap(), "c")
            .expect("the built-in config loads")
    }

    fn params(ps: &[(&str, i64)]) -> Vec<(String, i64)> {
        ps.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    fn computed(ps: &[(&str, i64)]) -> Vec<(String, i64)> {
        let chunks = crate::mlir::parse_file(KERNEL, "k.mlir").expect("parses");
        let all = lower::functions(&chunks);
        let kernel = all
            .iter()
            .find(|(_, op)| matches!(&op.kind, OpKind::Func { name, .. } if name == "k"))
            .expect("the kernel")
            .1;
        tiling_params(KERNEL, &chunks, &all, kernel, "k.mlir", &params(ps))
    }

    #[test]
    fn the_tiling_struct_is_what_the_host_function_stores() {
        // min(1000, 256) = 256; min(100, 256) = 100
        assert_eq!(computed(&[("x_dim0", 1000)]), params(&[("t_elem0", 256)]));
        assert_eq!(computed(&[("x_dim0", 100)]), params(&[("t_elem0", 100)]));
        // given by hand, the element is not computed
        assert_eq!(computed(&[("x_dim0", 1000), ("t_elem0", 64)]), params(&[]));
    }

    #[test]
    fn a_kernel_of_dynamic_shape_loads_with_its_sizes() {
        let k = crate::mlir::load_kernel(
            KERNEL,
            "k.mlir",
            &config(),
            &params(&[("x_dim0", 1000), ("y_dim0", 1000)]),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = &k.parts[0];
        let shapes: Vec<(&str, &[u64])> = p
            .tensors
            .iter()
            .map(|t| (t.name.as_str(), t.shape.as_slice()))
            .collect();
        assert_eq!(shapes, [("x", &[1000][..]), ("y", &[1000]), ("t", &[1])]);
        assert!(
            p.params.contains(&("t_elem0".to_string(), 256)),
            "{:?}",
            p.params
        );
        // a hand-given element wins over the host's
        let k = crate::mlir::load_kernel(
            KERNEL,
            "k.mlir",
            &config(),
            &params(&[("x_dim0", 1000), ("y_dim0", 1000), ("t_elem0", 128)]),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(k.parts[0].params.contains(&("t_elem0".to_string(), 128)));
    }

    #[test]
    fn without_its_sizes_the_error_names_the_params_to_give() {
        let e = crate::mlir::load_kernel(KERNEL, "k.mlir", &config(), &[], None)
            .expect_err("sizes are missing");
        let text = e.to_string();
        for want in ["--param x_dim0=N", "--param y_dim0=N", "--param t_elem0=N"] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }
}
