//! Chip configs compiled into the binary. The first one is the default.

/// (name, YAML text) of every built-in config.
pub const BUILTIN: &[(&str, &str)] = &[
    ("ascend910b", include_str!("../../configs/ascend910b.yaml")),
    ("ascend910", include_str!("../../configs/ascend910.yaml")),
];

/// The config used when none is named.
pub const DEFAULT: &str = "ascend910b";

/// The YAML text of a built-in config.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
