//! The small closed vocabularies shared by configs and programs: pipes, memory spaces, dtypes.

use std::fmt;

/// A pipeline of the core. The order is the fixed arbitration order of the engine and the
/// row order of every report.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum Pipe {
    S = 0,
    V = 1,
    M = 2,
    Mte1 = 3,
    Mte2 = 4,
    Mte3 = 5,
    Fix = 6,
}

impl Pipe {
    pub const ALL: [Pipe; 7] = [
        Pipe::S,
        Pipe::V,
        Pipe::M,
        Pipe::Mte1,
        Pipe::Mte2,
        Pipe::Mte3,
        Pipe::Fix,
    ];
    pub const COUNT: usize = 7;

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name written in YAML (`mte2`).
    pub fn yaml_name(self) -> &'static str {
        match self {
            Pipe::S => "s",
            Pipe::V => "v",
            Pipe::M => "m",
            Pipe::Mte1 => "mte1",
            Pipe::Mte2 => "mte2",
            Pipe::Mte3 => "mte3",
            Pipe::Fix => "fix",
        }
    }

    /// The name used in reports (`MTE2`).
    pub fn report_name(self) -> &'static str {
        match self {
            Pipe::S => "S",
            Pipe::V => "V",
            Pipe::M => "M",
            Pipe::Mte1 => "MTE1",
            Pipe::Mte2 => "MTE2",
            Pipe::Mte3 => "MTE3",
            Pipe::Fix => "FIX",
        }
    }

    /// The CCE name (`PIPE_MTE2`).
    pub fn cce_name(self) -> &'static str {
        match self {
            Pipe::S => "PIPE_S",
            Pipe::V => "PIPE_V",
            Pipe::M => "PIPE_M",
            Pipe::Mte1 => "PIPE_MTE1",
            Pipe::Mte2 => "PIPE_MTE2",
            Pipe::Mte3 => "PIPE_MTE3",
            Pipe::Fix => "PIPE_FIX",
        }
    }

    /// Accepts the YAML name, the report name and the CCE name.
    pub fn parse(s: &str) -> Option<Pipe> {
        let t = s.strip_prefix("PIPE_").unwrap_or(s);
        Pipe::ALL
            .into_iter()
            .find(|p| p.yaml_name() == t || p.report_name() == t)
    }

    pub fn yaml_names() -> Vec<&'static str> {
        Pipe::ALL.iter().map(|p| p.yaml_name()).collect()
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.report_name())
    }
}

/// A memory space: global memory or one of the on-chip scopes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum Space {
    Gm = 0,
    Ub = 1,
    L1 = 2,
    L0a = 3,
    L0b = 4,
    L0c = 5,
    Bt = 6,
    Fp = 7,
}

impl Space {
    pub const ALL: [Space; 8] = [
        Space::Gm,
        Space::Ub,
        Space::L1,
        Space::L0a,
        Space::L0b,
        Space::L0c,
        Space::Bt,
        Space::Fp,
    ];
    /// The on-chip scopes, in planning and report order.
    pub const ON_CHIP: [Space; 7] = [
        Space::Ub,
        Space::L1,
        Space::L0a,
        Space::L0b,
        Space::L0c,
        Space::Bt,
        Space::Fp,
    ];
    pub const COUNT: usize = 8;

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name written in YAML (`l0a`).
    pub fn yaml_name(self) -> &'static str {
        match self {
            Space::Gm => "gm",
            Space::Ub => "ub",
            Space::L1 => "l1",
            Space::L0a => "l0a",
            Space::L0b => "l0b",
            Space::L0c => "l0c",
            Space::Bt => "bt",
            Space::Fp => "fp",
        }
    }

    /// The name used in reports (`L0A`).
    pub fn report_name(self) -> &'static str {
        match self {
            Space::Gm => "GM",
            Space::Ub => "UB",
            Space::L1 => "L1",
            Space::L0a => "L0A",
            Space::L0b => "L0B",
            Space::L0c => "L0C",
            Space::Bt => "BT",
            Space::Fp => "FP",
        }
    }

    /// The name HIVM prints in its overflow diagnostics (`cbuf overflow`).
    pub fn hivm_name(self) -> &'static str {
        match self {
            Space::L1 => "cbuf",
            Space::L0c => "cc",
            other => other.yaml_name(),
        }
    }

    pub fn parse(s: &str) -> Option<Space> {
        Space::ALL
            .into_iter()
            .find(|p| p.yaml_name() == s || p.report_name() == s)
    }

    pub fn yaml_names() -> Vec<&'static str> {
        Space::ALL.iter().map(|p| p.yaml_name()).collect()
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.report_name())
    }
}

/// An element type. `I1` is one bit.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Dtype {
    I1,
    I8,
    U8,
    I16,
    U16,
    F16,
    Bf16,
    I32,
    U32,
    F32,
    I64,
    U64,
}

impl Dtype {
    pub const ALL: [Dtype; 12] = [
        Dtype::I1,
        Dtype::I8,
        Dtype::U8,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::Bf16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::I64,
        Dtype::U64,
    ];

    pub fn bits(self) -> u64 {
        match self {
            Dtype::I1 => 1,
            Dtype::I8 | Dtype::U8 => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::Bf16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// Bytes of `elements` elements: ceil(elements × bits / 8).
    pub fn bytes_for(self, elements: u64) -> u64 {
        (elements * self.bits()).div_ceil(8)
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::I1 => "i1",
            Dtype::I8 => "i8",
            Dtype::U8 => "u8",
            Dtype::I16 => "i16",
            Dtype::U16 => "u16",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::I32 => "i32",
            Dtype::U32 => "u32",
            Dtype::F32 => "f32",
            Dtype::I64 => "i64",
            Dtype::U64 => "u64",
        }
    }

    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    pub fn names() -> Vec<&'static str> {
        Dtype::ALL.iter().map(|d| d.name()).collect()
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Vector ops by form.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum VecOp {
    // binary
    Vadd,
    Vsub,
    Vmul,
    Vdiv,
    Vmax,
    Vmin,
    Vand,
    Vor,
    Vxor,
    // unary
    Vabs,
    Vexp,
    Vln,
    Vsqrt,
    Vrsqrt,
    Vrec,
    Vrelu,
    Vnot,
    Vcast,
    Vcopy,
    Vdup,
    // with `scalar`
    Vadds,
    Vmuls,
    Vmaxs,
    Vmins,
    // compare and select
    Vcmp,
    Vsel,
    // broadcast, reductions, layout
    Vbrc,
    VreduceSum,
    VreduceMax,
    VreduceMin,
    Vtranspose,
    Vdeinterleave,
}

/// The operand shape an op family expects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VecForm {
    Binary,
    Unary,
    WithScalar,
    Compare,
    Select,
    Broadcast,
    Reduce,
    Transpose,
    Deinterleave,
}

impl VecOp {
    /// How many vector ops there are: the length of per-op tables such as the config's costs.
    pub const COUNT: usize = 32;

    pub const ALL: [VecOp; 32] = [
        VecOp::Vadd,
        VecOp::Vsub,
        VecOp::Vmul,
        VecOp::Vdiv,
        VecOp::Vmax,
        VecOp::Vmin,
        VecOp::Vand,
        VecOp::Vor,
        VecOp::Vxor,
        VecOp::Vabs,
        VecOp::Vexp,
        VecOp::Vln,
        VecOp::Vsqrt,
        VecOp::Vrsqrt,
        VecOp::Vrec,
        VecOp::Vrelu,
        VecOp::Vnot,
        VecOp::Vcast,
        VecOp::Vcopy,
        VecOp::Vdup,
        VecOp::Vadds,
        VecOp::Vmuls,
        VecOp::Vmaxs,
        VecOp::Vmins,
        VecOp::Vcmp,
        VecOp::Vsel,
        VecOp::Vbrc,
        VecOp::VreduceSum,
        VecOp::VreduceMax,
        VecOp::VreduceMin,
        VecOp::Vtranspose,
        VecOp::Vdeinterleave,
    ];

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            VecOp::Vadd => "vadd",
            VecOp::Vsub => "vsub",
            VecOp::Vmul => "vmul",
            VecOp::Vdiv => "vdiv",
            VecOp::Vmax => "vmax",
            VecOp::Vmin => "vmin",
            VecOp::Vand => "vand",
            VecOp::Vor => "vor",
            VecOp::Vxor => "vxor",
            VecOp::Vabs => "vabs",
            VecOp::Vexp => "vexp",
            VecOp::Vln => "vln",
            VecOp::Vsqrt => "vsqrt",
            VecOp::Vrsqrt => "vrsqrt",
            VecOp::Vrec => "vrec",
            VecOp::Vrelu => "vrelu",
            VecOp::Vnot => "vnot",
            VecOp::Vcast => "vcast",
            VecOp::Vcopy => "vcopy",
            VecOp::Vdup => "vdup",
            VecOp::Vadds => "vadds",
            VecOp::Vmuls => "vmuls",
            VecOp::Vmaxs => "vmaxs",
            VecOp::Vmins => "vmins",
            VecOp::Vcmp => "vcmp",
            VecOp::Vsel => "vsel",
            VecOp::Vbrc => "vbrc",
            VecOp::VreduceSum => "vreduce_sum",
            VecOp::VreduceMax => "vreduce_max",
            VecOp::VreduceMin => "vreduce_min",
            VecOp::Vtranspose => "vtranspose",
            VecOp::Vdeinterleave => "vdeinterleave",
        }
    }

    pub fn parse(s: &str) -> Option<VecOp> {
        VecOp::ALL.into_iter().find(|o| o.name() == s)
    }

    pub fn form(self) -> VecForm {
        use VecOp::*;
        match self {
            Vadd | Vsub | Vmul | Vdiv | Vmax | Vmin | Vand | Vor | Vxor => VecForm::Binary,
            Vabs | Vexp | Vln | Vsqrt | Vrsqrt | Vrec | Vrelu | Vnot | Vcast | Vcopy | Vdup => {
                VecForm::Unary
            }
            Vadds | Vmuls | Vmaxs | Vmins => VecForm::WithScalar,
            Vcmp => VecForm::Compare,
            Vsel => VecForm::Select,
            Vbrc => VecForm::Broadcast,
            VreduceSum | VreduceMax | VreduceMin => VecForm::Reduce,
            Vtranspose => VecForm::Transpose,
            Vdeinterleave => VecForm::Deinterleave,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_names_round_trip() {
        for p in Pipe::ALL {
            assert_eq!(Pipe::parse(p.yaml_name()), Some(p));
            assert_eq!(Pipe::parse(p.report_name()), Some(p));
            assert_eq!(Pipe::parse(p.cce_name()), Some(p));
        }
        assert_eq!(Pipe::parse("PIPE_ALL"), None);
    }

    #[test]
    fn hivm_scope_names() {
        assert_eq!(Space::Ub.hivm_name(), "ub");
        assert_eq!(Space::L1.hivm_name(), "cbuf");
        assert_eq!(Space::L0c.hivm_name(), "cc");
        assert_eq!(Space::L0a.hivm_name(), "l0a");
    }

    #[test]
    fn vector_op_names_and_indices_round_trip() {
        for (i, op) in VecOp::ALL.into_iter().enumerate() {
            assert_eq!(VecOp::parse(op.name()), Some(op));
            assert_eq!(op.index(), i);
        }
        assert_eq!(VecOp::parse("vfoo"), None);
    }

    #[test]
    fn bytes_round_up_bits() {
        assert_eq!(Dtype::I1.bytes_for(9), 2);
        assert_eq!(Dtype::F16.bytes_for(16384), 32768);
        assert_eq!(Dtype::F32.bytes_for(3), 12);
    }
}
