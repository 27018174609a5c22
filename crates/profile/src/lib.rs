//! Trident's in-kernel region profiler (the "profile" prong, after KPerfIR, OSDI'25, and
//! Triton's Proton intra-kernel mode).
//!
//! The compiler marks regions with `record` ops (the front end from `pl.scope`, the
//! [`passes`] from options), then turns each into a probe that reads `%clock64` into a
//! per-group ring in shared memory and flushes it to a global buffer at kernel exit.
//! On the compiler side this crate owns
//!
//! * [`passes`] — `profile-instrument{kernel,loops,dots,loads}` and `profile-strip`;
//! * [`regions`](mod@regions) — [`regions_of`]: an instrumented function's regions, their ids
//!   (what each record's tag carries) and the meta's `regions`.
//!
//! It owns that buffer's format ([`format`](mod@format), which the PTX lowering follows) and
//! everything the host does with it:
//!
//! * [`meta`] — [`ProfileMeta`], the compiler's JSON beside the PTX: regions and their
//!   source lines, buffer shape, grid, target and per-record cost;
//! * [`decode`](mod@decode) — bytes → per-slot event lists with 64-bit clocks, validated;
//! * [`pair`] — starts and ends → nested region instances;
//! * [`replay`] — cancelling the probes' own cost (KPerfIR's trace replay), one cost per
//!   record or, with [`sites`], per step between two records measured by a doubled launch;
//! * [`clock`] — cycles → ns from the globaltimer pair (or the nominal clock);
//! * [`profile`] — [`Profile`], all of that assembled, with every [`Issue`] found;
//! * [`trace`], [`stats`], [`table`] — Chrome/Perfetto JSON, region statistics, the
//!   terminal table and CSV.
//!
//! Bad input never panics: a buffer that cannot be decoded is a [`DecodeError`], a
//! damaged slot is an [`Issue`] naming it, and the rest is still shown.
//!
//! ```
//! use trident_profile::format::encode::{encode_buffer, RecordData, SlotData};
//! use trident_profile::{Profile, ProfileMeta};
//! # let meta = ProfileMeta::from_json(r#"{"format_version": 1, "kernel": "k", "target": "emu",
//! #   "grid": [1, 1, 1], "warps_per_cta": 1, "granularity": "warp", "groups_per_cta": 1,
//! #   "capacity": 4, "record_cost_cycles": 10.0, "nominal_clock_ghz": 1.0,
//! #   "regions": [{"id": 0, "name": "body", "kind": "scope"}]}"#).unwrap();
//! let slot = SlotData { clock_end: 400, records: vec![RecordData::start(0, 100), RecordData::end(0, 260)], ..Default::default() };
//! let bytes = encode_buffer(&meta.layout().unwrap(), &[slot]).unwrap();
//! let profile = Profile::from_buffer(&bytes, &meta).unwrap();
//! assert_eq!(profile.instances[0].cycles(), 150.0); // 160 measured, one probe of 10 replayed away
//! println!("{}", trident_profile::table::render_table(&profile));
//! ```

pub mod clock;
pub mod decode;
pub mod format;
pub mod issue;
pub mod meta;
pub mod pair;
pub mod passes;
pub mod profile;
pub mod regions;
pub mod replay;
pub mod sites;
pub mod stats;
pub mod table;
pub mod trace;

pub use decode::{decode, DecodeError, Decoded, Event, SlotTrace};
pub use format::{Granularity, Layout};
pub use issue::{Issue, IssueKind, Severity};
pub use meta::{ProfileMeta, Region, RegionKind, SourceLoc};
pub use profile::{Instance, Profile};
pub use regions::{regions_of, RegionTable};
pub use sites::{SiteCostError, SiteCosts};
