//! Dense typed `u32` ids. Every entity of a program (buffer, tensor, view, op, loop variable)
//! lives in a `Vec` indexed by its id; analyses keep side tables indexed the same way.

macro_rules! define_id {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub struct $name(pub u32);

        impl $name {
            /// The position of this entity in its table.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of the entity at `index` in its table.
            #[inline]
            pub fn new(index: usize) -> Self {
                debug_assert!(index < u32::MAX as usize);
                Self(index as u32)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

define_id!(
    /// An on-chip buffer declared in a `buffers:` block.
    BufferId,
    "buf"
);
define_id!(
    /// A global-memory tensor declared under `gm:`.
    TensorId,
    "gm"
);
define_id!(
    /// A view (window or `select`) declared in a `views:` block.
    ViewId,
    "view"
);
define_id!(
    /// An op of the program, control ops included, numbered in pre-order.
    OpId,
    "op"
);
define_id!(
    /// A loop variable (the `var` of a `for`; `while` loops get an anonymous one).
    VarId,
    "var"
);
define_id!(
    /// A core type of the chip config (`aiv`, `aic`): an index into `Config::cores`.
    CoreId,
    "core"
);
