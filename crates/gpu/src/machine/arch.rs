//! The GPU architectures PTX is generated for, and what each of them has.

use std::fmt;

/// The GPU architecture PTX is generated for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Target {
    /// Ampere (A100): `mma.sync`, `ldmatrix`, `cp.async`.
    #[default]
    Sm80,
    /// Hopper (H100), using the sm_80 instruction set plus native fp8 conversions.
    Sm90,
    /// Hopper with its architecture-specific features (`.target sm_90a`): `tl.dot` on
    /// warpgroup MMA (`wgmma.mma_async`) with operands in shared memory. The code runs on
    /// compute capability 9.0 only.
    Sm90a,
}

impl Target {
    /// The `.target` / `-arch` name.
    pub fn arch(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
        }
    }

    /// Compute capability times ten (80, 90).
    pub fn capability(self) -> u32 {
        match self {
            Target::Sm80 => 80,
            Target::Sm90 | Target::Sm90a => 90,
        }
    }

    /// Shared memory a CTA may use (opt-in maximum), in bytes.
    pub fn max_shared_bytes(self) -> u32 {
        match self {
            Target::Sm80 => 163 * 1024,
            Target::Sm90 | Target::Sm90a => 227 * 1024,
        }
    }

    /// The SM clock to assume when a profile cannot measure one (a kernel too short for
    /// `%globaltimer`): the boost clock of the reference part, A100 SXM (1.41 GHz) for
    /// sm_80 and H100 SXM (1.98 GHz) for sm_90.
    pub fn nominal_clock_ghz(self) -> f64 {
        match self {
            Target::Sm80 => 1.41,
            Target::Sm90 | Target::Sm90a => 1.98,
        }
    }

    /// Whether `tl.dot` may use warpgroup MMA (`wgmma`).
    pub fn has_wgmma(self) -> bool {
        self == Target::Sm90a
    }

    pub fn parse(s: &str) -> Option<Target> {
        match s {
            "sm_80" | "sm80" | "80" => Some(Target::Sm80),
            "sm_90" | "sm90" | "90" => Some(Target::Sm90),
            "sm_90a" | "sm90a" | "90a" => Some(Target::Sm90a),
            _ => None,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.arch())
    }
}
