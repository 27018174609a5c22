//! Compilation options of the GPU backend.

use crate::machine::Target;
use trident_profile::format::{validate_capacity, Granularity};
use trident_profile::passes::Regions;

/// How to compile a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GpuOptions {
    pub target: Target,
    /// Warps per CTA (a power of two, 1..=32).
    pub num_warps: u32,
    /// Software-pipelining depth of loops feeding `dot` (1: no pipelining).
    pub num_stages: u32,
    /// Shared memory limit; `None` means the target's maximum.
    pub max_shared_bytes: Option<u32>,
    /// Emit `.file`/`.loc` line information.
    pub line_info: bool,
    /// In-kernel region profiling (`None`: off, and any `record` op is stripped first, so
    /// the kernel is exactly the unprofiled one).
    pub profile: Option<ProfileOptions>,
    /// Sanitize mode: every global load, store and atomic is checked against the extent of
    /// the buffer its pointer came from; a violation is suppressed and recorded (hidden
    /// parameters: see `ptx::sanitize`).
    pub sanitize: bool,
    /// FA3's ping-pong turns between the two consumer warpgroups of a warp-specialized
    /// attention loop, where they apply (`passes::pingpong`); `TRIDENT_PINGPONG=0` turns
    /// them off, to compare.
    pub pingpong: bool,
    /// A warp-specialized kernel with two consumer warpgroups gets a producer warpgroup that
    /// gives its registers to the consumers (`setmaxnreg`, FA3's split; `TRIDENT_SETMAXNREG=1`).
    /// Off by default until a GPU has judged it (`passes::warp_specialize::register_split`).
    pub setmaxnreg: bool,
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions {
            target: Target::Sm80,
            num_warps: 4,
            num_stages: 3,
            max_shared_bytes: None,
            line_info: true,
            profile: None,
            sanitize: false,
            pingpong: true,
            setmaxnreg: false,
        }
    }
}

/// How `record` ops are lowered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum ProbeMode {
    /// Real probes: the group leader reads `%clock64` into a shared-memory ring, flushed
    /// at exit to the profile buffer (the hidden last kernel parameter); see
    /// `trident_profile::format` for the bytes.
    #[default]
    Probes,
    /// Zero-cost markers for the emulator's ground truth: each record becomes the PTX
    /// comment `//@trident.mark <tag>` (tag = region id | end << 31, as in a ring entry),
    /// which `ptxas` ignores and the emulator records with the warp's clock. No ring, no
    /// buffer, no hidden parameter: the unprofiled kernel plus comments.
    Markers,
    /// Real probes, each record made twice back to back (two ring entries with the same
    /// tag): the launch that measures each record site's cost in place, for per-site
    /// replay (`trident_profile::replay::SiteCosts`). Its buffer and meta are those of
    /// [`ProbeMode::Probes`] with twice the records.
    Doubled,
}

impl ProbeMode {
    pub fn name(self) -> &'static str {
        match self {
            ProbeMode::Probes => "probes",
            ProbeMode::Markers => "markers",
            ProbeMode::Doubled => "doubled",
        }
    }

    /// Whether records are real probes writing a profile buffer (not markers).
    pub fn has_probes(self) -> bool {
        self != ProbeMode::Markers
    }

    /// Probes per record: 2 when doubled, 1 otherwise (markers: comments).
    pub fn probes_per_record(self) -> u32 {
        if self == ProbeMode::Doubled {
            2
        } else {
            1
        }
    }
}

/// What to profile and how (`GpuOptions::profile`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProfileOptions {
    /// Regions: `scopes` keeps the records the front end made from `pl.scope`s (without
    /// it they are stripped); `kernel`, `loops`, `dots`, `loads` are added by
    /// `profile-instrument` after pipelining (see `GpuPipeline::passes`).
    pub regions: Regions,
    /// Which threads share a ring: a warp, a warpgroup or the CTA (its leader records).
    pub granularity: Granularity,
    /// Ring capacity in records per group: a power of two (the ring keeps the newest).
    pub capacity: u32,
    pub mode: ProbeMode,
}

impl Default for ProfileOptions {
    /// Scopes, the kernel and loop bodies; per warp; 256 records per ring; real probes.
    fn default() -> ProfileOptions {
        ProfileOptions {
            regions: Regions { scopes: true, kernel: true, loops: true, ..Regions::default() },
            granularity: Granularity::Warp,
            capacity: DEFAULT_CAPACITY,
            mode: ProbeMode::Probes,
        }
    }
}

/// Default ring capacity: 256 records (2 KiB of shared memory per group).
pub const DEFAULT_CAPACITY: u32 = 256;

impl ProfileOptions {
    /// Checks what the lowering relies on: some region to profile, a power-of-two capacity.
    pub fn validate(&self) -> Result<(), String> {
        if self.regions.is_empty() {
            return Err("profiling with no regions: name some of scopes, kernel, loops, dots, loads".into());
        }
        validate_capacity(self.capacity).map_err(|_| {
            format!("the ring capacity must be a power of two from 1 to 65536 records, not {}", self.capacity)
        })
    }

    /// One line for cache keys and listings: `regions=kernel,loops granularity=warp capacity=256 mode=probes`.
    pub fn key_text(&self) -> String {
        format!(
            "regions={} granularity={} capacity={} mode={}",
            self.regions.words(),
            self.granularity,
            self.capacity,
            self.mode.name()
        )
    }
}

/// Parses `warp`, `warpgroup` or `cta`.
pub fn parse_granularity(s: &str) -> Result<Granularity, String> {
    match s {
        "warp" => Ok(Granularity::Warp),
        "warpgroup" => Ok(Granularity::Warpgroup),
        "cta" => Ok(Granularity::Cta),
        _ => Err(format!("unknown granularity `{s}` (warp, warpgroup or cta)")),
    }
}

impl GpuOptions {
    pub fn shared_limit(&self) -> u32 {
        self.max_shared_bytes.unwrap_or(self.target.max_shared_bytes())
    }
}

impl GpuOptions {
    /// Options from `key=value` words (`num_warps=4 num_stages=3 target=sm_90a
    /// max_shared_bytes=1024 line_info=false`), on top of the defaults: the `// OPTIONS:`
    /// line of the GPU passes' text-format tests. Profiling: `profile=kernel,loops` turns
    /// it on with those regions; `granularity=warp|warpgroup|cta`, `buffer_records=N` and
    /// `profile_mode=probes|markers` change it (and turn it on with the default regions).
    pub fn parse_words(words: &str) -> Result<GpuOptions, String> {
        let mut o = GpuOptions::default();
        for w in words.split_whitespace() {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("expected `key=value`, found `{w}`"))?;
            let num = || v.parse::<u32>().map_err(|_| format!("`{k}` needs a number, not `{v}`"));
            match k {
                "profile" => o.profile.get_or_insert_with(Default::default).regions = Regions::parse(v)?,
                "granularity" => o.profile.get_or_insert_with(Default::default).granularity = parse_granularity(v)?,
                "buffer_records" => o.profile.get_or_insert_with(Default::default).capacity = num()?,
                "profile_mode" => {
                    o.profile.get_or_insert_with(Default::default).mode = match v {
                        "probes" => ProbeMode::Probes,
                        "markers" => ProbeMode::Markers,
                        "doubled" => ProbeMode::Doubled,
                        _ => return Err(format!("`profile_mode` is probes, markers or doubled, not `{v}`")),
                    }
                }
                "target" => o.target = Target::parse(v).ok_or_else(|| format!("unknown target `{v}`"))?,
                "num_warps" => o.num_warps = num()?,
                "num_stages" => o.num_stages = num()?,
                "max_shared_bytes" => o.max_shared_bytes = Some(num()?),
                "line_info" => {
                    o.line_info = v.parse().map_err(|_| format!("`line_info` is true or false, not `{v}`"))?
                }
                "sanitize" => o.sanitize = v.parse().map_err(|_| format!("`sanitize` is true or false, not `{v}`"))?,
                "pingpong" => o.pingpong = v.parse().map_err(|_| format!("`pingpong` is true or false, not `{v}`"))?,
                "setmaxnreg" => {
                    o.setmaxnreg = v.parse().map_err(|_| format!("`setmaxnreg` is true or false, not `{v}`"))?
                }
                _ => {
                    return Err(format!(
                        "unknown option `{k}` (known: target, num_warps, num_stages, max_shared_bytes, line_info, \
                         sanitize, pingpong, setmaxnreg, profile, granularity, buffer_records, profile_mode)"
                    ))
                }
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_words() {
        let o = GpuOptions::parse_words("num_warps=8  target=sm_90a max_shared_bytes=100").unwrap();
        assert_eq!((o.num_warps, o.target, o.shared_limit(), o.num_stages), (8, Target::Sm90a, 100, 3));
        assert_eq!(GpuOptions::parse_words("").unwrap(), GpuOptions::default());
        assert!(GpuOptions::parse_words("num_warps").unwrap_err().contains("key=value"));
        assert!(GpuOptions::parse_words("num_warps=four").unwrap_err().contains("number"));
        assert!(GpuOptions::parse_words("target=sm_70").unwrap_err().contains("unknown target"));
        assert!(GpuOptions::parse_words("warps=4").unwrap_err().contains("unknown option `warps`"));
    }

    #[test]
    fn profile_options_from_words() {
        let o = GpuOptions::parse_words("profile=kernel,dots granularity=warpgroup buffer_records=64").unwrap();
        let p = o.profile.unwrap();
        assert_eq!(
            (p.regions.words(), p.granularity, p.capacity, p.mode),
            ("kernel,dots".into(), Granularity::Warpgroup, 64, ProbeMode::Probes)
        );
        assert_eq!(p.key_text(), "regions=kernel,dots granularity=warpgroup capacity=64 mode=probes");
        let m = GpuOptions::parse_words("profile_mode=markers").unwrap().profile.unwrap();
        assert_eq!((m.mode, m.regions), (ProbeMode::Markers, ProfileOptions::default().regions));
        assert!(GpuOptions::parse_words("granularity=block").unwrap_err().contains("warp, warpgroup or cta"));
        assert!(GpuOptions::parse_words("profile=frames").unwrap_err().contains("unknown region kind"));
        let bad = ProfileOptions { capacity: 48, ..ProfileOptions::default() };
        assert!(bad.validate().unwrap_err().contains("power of two"));
        assert!(ProfileOptions::default().validate().is_ok());
    }
}
