//! `ProfileMeta`: what the compiler writes beside the PTX of an instrumented kernel, so
//! the host can name what the buffer's numbers mean — regions and their source lines,
//! the buffer's shape, the launch grid, and the target's probe cost for replay.
//!
//! Serialized as JSON (see the crate README for an example). Parsing validates it:
//! every later step may trust a `ProfileMeta` it got from [`ProfileMeta::from_json`] or
//! that passed [`ProfileMeta::validate`].

use crate::format::{self, Granularity, Layout, FORMAT_VERSION, MAX_REGION_ID, MAX_WARPS_PER_CTA};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Where a region's probes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum RegionKind {
    /// A user's `pl.scope` / `pl.enter_scope` ... `pl.exit_scope`.
    Scope,
    /// The whole kernel (`--regions kernel`).
    Kernel,
    /// One iteration of a loop body (`--regions loops`).
    Loop,
    /// One `tl.dot` (`--regions dots`).
    Dot,
    /// One global load (`--regions loads`).
    Load,
}

impl RegionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RegionKind::Scope => "scope",
            RegionKind::Kernel => "kernel",
            RegionKind::Loop => "loop",
            RegionKind::Dot => "dot",
            RegionKind::Load => "load",
        }
    }
}

/// A source position (1-based line and column), as the tile IR's `Loc` carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceLoc {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// One profiled region: the id its records carry and what to call it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub id: u32,
    pub name: String,
    pub kind: RegionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loc: Option<SourceLoc>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_globaltimer_resolution_ns() -> u64 {
    // `%globaltimer` ticks every microsecond on current NVIDIA GPUs unless a profiler
    // asks for more; assume that unless the target says better (the emulator: 1).
    1000
}

/// The compiler's description of one instrumented kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileMeta {
    /// The buffer format the lowering followed ([`FORMAT_VERSION`]).
    pub format_version: u32,
    pub kernel: String,
    /// `sm_80`, `sm_90a`, `emu`, ...
    pub target: String,
    /// CTAs in x, y, z.
    pub grid: [u32; 3],
    /// The warps the kernel's layouts describe (`num_warps`); in a warp-specialized kernel,
    /// its consumer warps.
    pub warps_per_cta: u32,
    /// A warp-specialized kernel's producer warps, numbered after the `warps_per_cta`
    /// others and grouped apart from them (see `format`); 0 (and absent from the JSON)
    /// for every other kernel.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub producer_warps: u32,
    pub granularity: Granularity,
    /// Must equal `granularity.groups_with_producers(warps_per_cta, producer_warps)`;
    /// stated so the runtime and tools need not recompute it.
    pub groups_per_cta: u32,
    /// Ring capacity in records per group (a power of two).
    pub capacity: u32,
    /// Cycles one record adds to its group's timeline on this target: what replay
    /// subtracts per earlier record.
    pub record_cost_cycles: f64,
    /// Clock rate to use when the globaltimer pair cannot give a measured one.
    pub nominal_clock_ghz: f64,
    /// Tick of `%globaltimer`: a span is trusted for the clock rate only when it is
    /// long against this (see `clock`).
    #[serde(default = "default_globaltimer_resolution_ns")]
    pub globaltimer_resolution_ns: u64,
    pub regions: Vec<Region>,
}

/// A meta that cannot describe a real launch.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetaError {
    #[error("profile meta is not valid JSON for a ProfileMeta: {0}")]
    Json(String),
    #[error("profile meta follows buffer format version {found}; this build reads version {FORMAT_VERSION}")]
    Version { found: u32 },
    #[error("profile meta: grid {0:?} has a zero dimension or more than 2^32 - 1 CTAs")]
    Grid([u32; 3]),
    #[error("profile meta: {0} warps per CTA (must be 1..={MAX_WARPS_PER_CTA})")]
    Warps(u32),
    #[error("profile meta: {granularity} granularity with {warps} warps gives {expected} groups per CTA, not {found}")]
    Groups { granularity: Granularity, warps: u32, expected: u32, found: u32 },
    #[error("profile meta: {0}")]
    Layout(#[from] format::FormatError),
    #[error("profile meta: record cost {0} cycles is not a finite number >= 0")]
    RecordCost(f64),
    #[error("profile meta: nominal clock {0} GHz is not a finite number > 0")]
    NominalClock(f64),
    #[error("profile meta: globaltimer resolution must be at least 1 ns")]
    TimerResolution,
    #[error("profile meta: region id {0} is used twice")]
    DuplicateRegion(u32),
    #[error("profile meta: region id {0} does not fit in the record's 31 bits")]
    RegionId(u32),
}

impl ProfileMeta {
    /// Parses and validates the compiler's JSON.
    pub fn from_json(text: &str) -> Result<ProfileMeta, MetaError> {
        let meta: ProfileMeta = serde_json::from_str(text).map_err(|e| MetaError::Json(e.to_string()))?;
        meta.validate()?;
        Ok(meta)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a ProfileMeta always serializes")
    }

    /// CTAs in the grid, if the product fits in u32 (CTA ids are u32 in the header).
    pub fn num_ctas(&self) -> Option<u32> {
        let [x, y, z] = self.grid;
        x.checked_mul(y)?.checked_mul(z)
    }

    /// The buffer layout this meta implies.
    pub fn layout(&self) -> Result<Layout, MetaError> {
        let ctas = self.num_ctas().filter(|&n| n > 0).ok_or(MetaError::Grid(self.grid))?;
        Ok(Layout::new(ctas, self.groups_per_cta, self.capacity)?)
    }

    pub fn validate(&self) -> Result<(), MetaError> {
        if self.format_version != FORMAT_VERSION {
            return Err(MetaError::Version { found: self.format_version });
        }
        if self.grid.contains(&0) || self.num_ctas().is_none() {
            return Err(MetaError::Grid(self.grid));
        }
        let all_warps = self.warps_per_cta.saturating_add(self.producer_warps);
        if self.warps_per_cta == 0 || all_warps > MAX_WARPS_PER_CTA {
            return Err(MetaError::Warps(all_warps));
        }
        let expected = self.granularity.groups_with_producers(self.warps_per_cta, self.producer_warps);
        if expected != self.groups_per_cta {
            return Err(MetaError::Groups {
                granularity: self.granularity,
                warps: self.warps_per_cta,
                expected,
                found: self.groups_per_cta,
            });
        }
        self.layout()?;
        if !(self.record_cost_cycles.is_finite() && self.record_cost_cycles >= 0.0) {
            return Err(MetaError::RecordCost(self.record_cost_cycles));
        }
        if !(self.nominal_clock_ghz.is_finite() && self.nominal_clock_ghz > 0.0) {
            return Err(MetaError::NominalClock(self.nominal_clock_ghz));
        }
        if self.globaltimer_resolution_ns == 0 {
            return Err(MetaError::TimerResolution);
        }
        let mut seen = BTreeMap::new();
        for r in &self.regions {
            if r.id > MAX_REGION_ID {
                return Err(MetaError::RegionId(r.id));
            }
            if seen.insert(r.id, ()).is_some() {
                return Err(MetaError::DuplicateRegion(r.id));
            }
        }
        Ok(())
    }

    /// Groups of the warps the layouts describe (the consumers of a warp-specialized
    /// kernel): groups `0..consumer_groups()`; the producer warps' follow.
    pub fn consumer_groups(&self) -> u32 {
        self.granularity.groups_per_cta(self.warps_per_cta)
    }

    /// Whether `group` is made of a warp-specialized kernel's producer warps.
    pub fn is_producer_group(&self, group: u32) -> bool {
        self.producer_warps > 0 && group >= self.consumer_groups()
    }

    /// The group warp `warp` of a CTA belongs to, or `None` past the CTA's warps.
    pub fn group_of_warp(&self, warp: u32) -> Option<u32> {
        let of = |w: u32| match self.granularity {
            Granularity::Warp => w,
            Granularity::Warpgroup => w / format::WARPS_PER_WARPGROUP,
            Granularity::Cta => 0,
        };
        if warp < self.warps_per_cta {
            Some(of(warp))
        } else if warp - self.warps_per_cta < self.producer_warps {
            Some(self.consumer_groups() + of(warp - self.warps_per_cta))
        } else {
            None
        }
    }

    /// The first warp of `group` (its leader is that warp's lane 0).
    pub fn leader_warp(&self, group: u32) -> u32 {
        if self.is_producer_group(group) {
            self.warps_per_cta + self.granularity.leader_warp(group - self.consumer_groups())
        } else {
            self.granularity.leader_warp(group)
        }
    }

    /// What to call `group` in traces and tables: `warp 3`, or `warp 8 (producer)`; at CTA
    /// granularity with producer warps, `cta (consumers)` and `producer warps`.
    pub fn group_name(&self, group: u32) -> String {
        let noun = self.granularity.group_noun();
        if self.producer_warps > 0 && self.granularity == Granularity::Cta {
            return if self.is_producer_group(group) { "producer warps".into() } else { "cta (consumers)".into() };
        }
        if self.is_producer_group(group) {
            format!("{noun} {group} (producer)")
        } else {
            format!("{noun} {group}")
        }
    }

    /// The region with id `id`, if the meta lists it.
    pub fn region(&self, id: u32) -> Option<&Region> {
        self.regions.iter().find(|r| r.id == id)
    }

    /// Region id → index into `regions`, for lookups in loops.
    pub fn region_index(&self) -> BTreeMap<u32, usize> {
        self.regions.iter().enumerate().map(|(i, r)| (r.id, i)).collect()
    }

    /// (x, y, z) of a CTA linear id.
    pub fn cta_coords(&self, cta: u32) -> (u32, u32, u32) {
        let [x, y, _] = self.grid;
        let (x, y) = (x.max(1), y.max(1));
        (cta % x, cta / x % y, cta / x / y)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small valid meta: 2 CTAs x 4 warps, per-warp rings of 8, regions 0 (kernel),
    /// 1 (loop), 2 (dot).
    pub(crate) fn sample() -> ProfileMeta {
        let loc = |line| Some(SourceLoc { file: "kernels/matmul.py".into(), line, col: 5 });
        ProfileMeta {
            format_version: FORMAT_VERSION,
            kernel: "matmul_kernel".into(),
            target: "sm_90a".into(),
            grid: [2, 1, 1],
            warps_per_cta: 4,
            producer_warps: 0,
            granularity: Granularity::Warp,
            groups_per_cta: 4,
            capacity: 8,
            record_cost_cycles: 10.0,
            nominal_clock_ghz: 1.5,
            globaltimer_resolution_ns: 1,
            regions: vec![
                Region { id: 0, name: "kernel".into(), kind: RegionKind::Kernel, loc: loc(10) },
                Region { id: 1, name: "loop@20".into(), kind: RegionKind::Loop, loc: loc(20) },
                Region { id: 2, name: "dot".into(), kind: RegionKind::Dot, loc: loc(22) },
            ],
        }
    }

    #[test]
    fn json_round_trips_and_names_kinds_in_lowercase() {
        let m = sample();
        let text = m.to_json_pretty();
        assert!(text.contains("\"granularity\": \"warp\""), "{text}");
        assert!(text.contains("\"kind\": \"loop\""), "{text}");
        assert_eq!(ProfileMeta::from_json(&text), Ok(m));
    }

    #[test]
    fn timer_resolution_defaults_to_a_microsecond() {
        let mut v: serde_json::Value = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("globaltimer_resolution_ns");
        let m = ProfileMeta::from_json(&v.to_string()).unwrap();
        assert_eq!(m.globaltimer_resolution_ns, 1000);
    }

    #[test]
    fn bad_metas_are_named_errors() {
        type Mutation = fn(&mut ProfileMeta);
        let cases: Vec<(Mutation, &str)> = vec![
            (|m| m.format_version = 2, "version 2"),
            (|m| m.grid = [0, 1, 1], "zero dimension"),
            (|m| m.grid = [65536, 65536, 2], "zero dimension or more"),
            (|m| m.warps_per_cta = 33, "33 warps"),
            (|m| m.groups_per_cta = 2, "gives 4 groups per CTA, not 2"),
            (|m| m.capacity = 12, "capacity 12"),
            (|m| m.record_cost_cycles = -1.0, "record cost -1"),
            (|m| m.record_cost_cycles = f64::NAN, "record cost NaN"),
            (|m| m.nominal_clock_ghz = 0.0, "nominal clock 0"),
            (|m| m.globaltimer_resolution_ns = 0, "resolution"),
            (|m| m.regions[2].id = 1, "region id 1 is used twice"),
            (|m| m.regions[2].id = 1 << 31, "31 bits"),
            (
                |m| {
                    m.grid = [1 << 16, 1 << 14, 1];
                    m.capacity = 1 << 16;
                    m.warps_per_cta = 32;
                    m.groups_per_cta = 32
                },
                "does not fit",
            ),
        ];
        for (mutate, want) in cases {
            let mut m = sample();
            mutate(&mut m);
            let err = m.validate().expect_err(want).to_string();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
            // The same error comes back through JSON (NaN is not JSON: skip it).
            if m.record_cost_cycles.is_finite() {
                assert_eq!(ProfileMeta::from_json(&m.to_json_pretty()).unwrap_err().to_string(), err);
            }
        }
        assert!(matches!(ProfileMeta::from_json("{\"kernel\": 3}"), Err(MetaError::Json(_))));
        assert!(matches!(ProfileMeta::from_json(""), Err(MetaError::Json(_))));
    }

    #[test]
    fn producer_warps_get_groups_of_their_own() {
        let mut m = sample();
        assert!(!m.to_json_pretty().contains("producer_warps"), "absent when zero");
        m.producer_warps = 1;
        assert!(m.validate().unwrap_err().to_string().contains("gives 5 groups per CTA, not 4"));
        m.groups_per_cta = 5;
        assert_eq!(ProfileMeta::from_json(&m.to_json_pretty()), Ok(m.clone()));
        assert_eq!((m.group_of_warp(3), m.group_of_warp(4), m.group_of_warp(5)), (Some(3), Some(4), None));
        assert_eq!(
            (m.leader_warp(4), m.group_name(4), m.group_name(0)),
            (4, "warp 4 (producer)".into(), "warp 0".into())
        );
        m.granularity = Granularity::Cta;
        m.groups_per_cta = 2;
        m.validate().unwrap();
        assert_eq!((m.group_of_warp(3), m.group_of_warp(4), m.leader_warp(1)), (Some(0), Some(1), 4));
        assert_eq!((m.group_name(0), m.group_name(1)), ("cta (consumers)".into(), "producer warps".into()));
        m.granularity = Granularity::Warpgroup;
        m.warps_per_cta = 8;
        m.producer_warps = 4;
        m.groups_per_cta = 3;
        m.validate().unwrap();
        assert_eq!(
            (m.group_of_warp(7), m.group_of_warp(8), m.group_of_warp(11), m.leader_warp(2)),
            (Some(1), Some(2), Some(2), 8)
        );
        m.producer_warps = 25;
        assert!(m.validate().unwrap_err().to_string().contains("33 warps"));
    }

    #[test]
    fn cta_coordinates_follow_cuda_linearization() {
        let mut m = sample();
        m.grid = [3, 2, 2];
        assert_eq!(m.cta_coords(0), (0, 0, 0));
        assert_eq!(m.cta_coords(4), (1, 1, 0));
        assert_eq!(m.cta_coords(11), (2, 1, 1));
    }
}
