//! The GPU the timing model imitates: SM count and clock, residency limits, issue and
//! functional-unit throughput, latencies, and the memory system's bandwidths. Every
//! number is a public field so a caller can try variations; the presets are documented
//! with their sources in `bench/EMU_MODEL.md`.

/// A machine for the timing model (see [`crate::timing`]). Chosen per launch by
/// [`crate::LaunchConfig::machine`]; the default is [`MachineModel::h100_sxm`].
#[derive(Clone, Debug, PartialEq)]
pub struct MachineModel {
    pub name: &'static str,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock: modelled cycles are converted to seconds (and `%globaltimer` to
    /// nanoseconds) at this rate.
    pub clock_ghz: f64,

    // Residency: how many CTAs one SM holds at once.
    pub max_threads_per_sm: u32,
    pub max_ctas_per_sm: u32,
    /// 32-bit registers per SM (allocated per warp in units of 256).
    pub regs_per_sm: u32,
    /// Shared memory per SM available to CTAs, bytes.
    pub shared_per_sm: u32,
    /// Shared memory the driver reserves per resident CTA (1 KiB since sm_80).
    pub shared_reserved_per_cta: u32,

    // Issue: schedulers (SM sub-partitions, at most 8), each issuing at most one
    // warp-instruction per cycle, each with its own functional units.
    pub schedulers_per_sm: u32,
    /// Lanes per sub-partition of each unit class: a warp-instruction occupies its
    /// unit for `32 / lanes` cycles.
    pub fp32_lanes: u32,
    pub int_lanes: u32,
    pub fp64_lanes: u32,
    pub sfu_lanes: u32,
    /// Dense f16/bf16 tensor-core multiply-adds per cycle per SM (all sub-partitions);
    /// tf32 runs at half, 8-bit integers at twice this rate.
    pub tensor_fma_per_clk: u32,
    /// The same for `mma.sync` (on Hopper the warp-synchronous MMA reaches only part of
    /// the warpgroup MMA's rate).
    pub mma_sync_fma_per_clk: u32,

    // Latencies in cycles (dependent issue: from issue to a consumer's earliest issue).
    pub lat_alu: u32,
    pub lat_fp64: u32,
    pub lat_sfu: u32,
    pub lat_conv: u32,
    pub lat_param: u32,
    pub lat_shared: u32,
    pub lat_local: u32,
    pub lat_shfl: u32,
    pub lat_barrier: u32,
    pub lat_mma: u32,
    /// Pipeline depth of a warpgroup MMA beyond its tensor-core occupancy.
    pub lat_wgmma: u32,
    pub lat_l2_hit: u32,
    /// Latency of a load that misses L2 (DRAM round trip, unloaded).
    pub lat_dram: u32,
    pub lat_shared_atomic: u32,

    // Memory system.
    /// Shared-memory bandwidth per SM: one wavefront of this many bytes per cycle
    /// (32 banks of 4 bytes).
    pub shared_bytes_per_clk: u32,
    /// L1/LSU tag throughput: global/local 128-byte lines per cycle per SM.
    pub l1_lines_per_clk: u32,
    /// Bandwidth between one SM and L2, bytes per cycle.
    pub l2_port_bytes_per_clk: u32,
    /// Aggregate L2 bandwidth, bytes per second (shared by all SMs).
    pub l2_bytes_per_s: f64,
    /// Sustained DRAM bandwidth, bytes per second (shared by all SMs).
    pub dram_bytes_per_s: f64,
    /// L2 capacity, bytes.
    pub l2_bytes: u64,
    /// Fixed cost of a launch as CUDA events see it (front end, first CTA start, drain), ns.
    pub launch_overhead_ns: f64,
    /// Cycles between a CTA slot freeing and the next CTA's first instruction.
    pub cta_launch_cycles: u32,
    /// Whether `wgmma` exists (sm_90a); the emulator runs it either way.
    pub has_wgmma: bool,
}

impl Default for MachineModel {
    fn default() -> Self {
        MachineModel::h100_sxm()
    }
}

impl MachineModel {
    /// NVIDIA H100 SXM5 80 GB (sm_90): 132 SMs, 3.35 TB/s HBM3, 50 MB L2, 228 KB shared
    /// memory per SM, 989 dense f16 TFLOP/s at 1.83 GHz.
    pub fn h100_sxm() -> MachineModel {
        MachineModel {
            name: "H100 SXM5",
            sms: 132,
            clock_ghz: 1.83,
            max_threads_per_sm: 2048,
            max_ctas_per_sm: 32,
            regs_per_sm: 65536,
            shared_per_sm: 228 * 1024,
            shared_reserved_per_cta: 1024,
            schedulers_per_sm: 4,
            fp32_lanes: 32,
            int_lanes: 16,
            fp64_lanes: 16,
            sfu_lanes: 4,
            tensor_fma_per_clk: 2048,
            mma_sync_fma_per_clk: 1024,
            lat_alu: 4,
            lat_fp64: 8,
            lat_sfu: 16,
            lat_conv: 6,
            lat_param: 8,
            lat_shared: 30,
            lat_local: 36,
            lat_shfl: 24,
            lat_barrier: 20,
            lat_mma: 32,
            lat_wgmma: 48,
            lat_l2_hit: 260,
            lat_dram: 640,
            lat_shared_atomic: 48,
            shared_bytes_per_clk: 128,
            l1_lines_per_clk: 1,
            l2_port_bytes_per_clk: 64,
            l2_bytes_per_s: 10.0e12,
            dram_bytes_per_s: 3.0e12,
            l2_bytes: 50 << 20,
            launch_overhead_ns: 2000.0,
            cta_launch_cycles: 64,
            has_wgmma: true,
        }
    }

    /// NVIDIA H200 SXM 141 GB: the H100's chip (its SMs, clocks, caches and latencies as
    /// [`MachineModel::h100_sxm`] models them) with HBM3e at 4.8 TB/s. The sustained rate is
    /// the one measured on an H200 (2026-11-29, `bench/RESULTS.md`: a vector add moved 4252
    /// GB/s, a bandwidth-bound softmax 3995), as the H100's 3.0 TB/s is its measured one.
    pub fn h200_sxm() -> MachineModel {
        MachineModel { name: "H200 SXM", dram_bytes_per_s: 4.3e12, l2_bytes: 50 << 20, ..MachineModel::h100_sxm() }
    }

    /// The preset a name picks (`h100`, `h200`, `a100`; case and an `_sxm` suffix ignored),
    /// as `TRIDENT_EMU_MACHINE` names one.
    pub fn named(name: &str) -> Option<MachineModel> {
        let n = name.trim().to_ascii_lowercase();
        match n.strip_suffix("_sxm").or_else(|| n.strip_suffix("-sxm")).unwrap_or(&n) {
            "h100" => Some(MachineModel::h100_sxm()),
            "h200" => Some(MachineModel::h200_sxm()),
            "a100" => Some(MachineModel::a100_sxm()),
            _ => None,
        }
    }

    /// NVIDIA A100 SXM4 80 GB (sm_80): 108 SMs at 1.41 GHz, 2.04 TB/s HBM2e, 40 MB L2,
    /// 164 KB shared memory per SM, 312 dense f16 TFLOP/s.
    pub fn a100_sxm() -> MachineModel {
        MachineModel {
            name: "A100 SXM4",
            sms: 108,
            clock_ghz: 1.41,
            max_threads_per_sm: 2048,
            max_ctas_per_sm: 32,
            regs_per_sm: 65536,
            shared_per_sm: 164 * 1024,
            shared_reserved_per_cta: 1024,
            schedulers_per_sm: 4,
            fp32_lanes: 16,
            int_lanes: 16,
            fp64_lanes: 8,
            sfu_lanes: 4,
            tensor_fma_per_clk: 1024,
            mma_sync_fma_per_clk: 1024,
            lat_alu: 4,
            lat_fp64: 8,
            lat_sfu: 16,
            lat_conv: 6,
            lat_param: 8,
            lat_shared: 30,
            lat_local: 36,
            lat_shfl: 24,
            lat_barrier: 20,
            lat_mma: 32,
            lat_wgmma: 48,
            lat_l2_hit: 220,
            lat_dram: 560,
            lat_shared_atomic: 48,
            shared_bytes_per_clk: 128,
            l1_lines_per_clk: 1,
            l2_port_bytes_per_clk: 64,
            l2_bytes_per_s: 5.0e12,
            dram_bytes_per_s: 1.8e12,
            l2_bytes: 40 << 20,
            launch_overhead_ns: 2000.0,
            cta_launch_cycles: 64,
            has_wgmma: false,
        }
    }

    /// Seconds per modelled cycle's worth: `cycles / clock_hz()`.
    pub fn clock_hz(&self) -> f64 {
        self.clock_ghz * 1e9
    }

    /// Modelled cycles as seconds.
    pub fn seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / self.clock_hz()
    }

    /// CTAs of this shape one SM holds at once (at least 1). `regs_per_thread` 0 means
    /// unknown (registers then do not limit residency).
    pub fn ctas_per_sm(&self, threads_per_cta: u32, shared_per_cta: u32, regs_per_thread: u32) -> u32 {
        let warps = threads_per_cta.div_ceil(32).max(1);
        let by_threads = self.max_threads_per_sm / (warps * 32);
        let smem = shared_per_cta + self.shared_reserved_per_cta;
        let by_shared = if shared_per_cta == 0 { u32::MAX } else { self.shared_per_sm / smem };
        let by_regs = if regs_per_thread == 0 {
            u32::MAX
        } else {
            // Registers are allocated per warp, rounded up to 256.
            let per_warp = (regs_per_thread * 32).div_ceil(256) * 256;
            self.regs_per_sm / (per_warp * warps)
        };
        by_threads.min(by_shared).min(by_regs).min(self.max_ctas_per_sm).max(1)
    }

    /// Schedulers the model uses: `schedulers_per_sm`, clamped to 1..=8.
    pub(crate) fn schedulers(&self) -> usize {
        self.schedulers_per_sm.clamp(1, 8) as usize
    }

    /// Bytes per cycle a bandwidth in bytes per second amounts to at this clock.
    pub(crate) fn per_clk(&self, bytes_per_s: f64) -> f64 {
        bytes_per_s / self.clock_hz()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residency() {
        let h = MachineModel::h100_sxm();
        assert_eq!(h.ctas_per_sm(128, 0, 0), 16);
        assert_eq!(h.ctas_per_sm(1024, 0, 0), 2);
        assert_eq!(h.ctas_per_sm(32, 0, 0), 32);
        // The benchmark matmul: 256 threads, 48 KiB shared, 96 registers → 2 per SM.
        assert_eq!(h.ctas_per_sm(256, 48 * 1024, 96), 2);
        assert_eq!(h.ctas_per_sm(256, 48 * 1024, 0), 4);
        assert_eq!(h.ctas_per_sm(128, 227 * 1024, 0), 1);
        let a = MachineModel::a100_sxm();
        assert_eq!(a.ctas_per_sm(128, 16384, 0), 9);
    }

    #[test]
    fn peak_rates_match_the_data_sheets() {
        let h = MachineModel::h100_sxm();
        let tflops = 2.0 * h.tensor_fma_per_clk as f64 * h.sms as f64 * h.clock_hz() / 1e12;
        assert!((tflops - 989.0).abs() < 2.0, "{tflops}");
        let a = MachineModel::a100_sxm();
        let tflops = 2.0 * a.tensor_fma_per_clk as f64 * a.sms as f64 * a.clock_hz() / 1e12;
        assert!((tflops - 312.0).abs() < 2.0, "{tflops}");
    }
}

#[cfg(test)]
mod named_tests {
    use super::MachineModel;

    #[test]
    fn presets_are_found_by_name_and_the_h200_differs_from_the_h100_in_dram_only() {
        assert_eq!(MachineModel::named("H200"), Some(MachineModel::h200_sxm()));
        assert_eq!(MachineModel::named(" h100_sxm "), Some(MachineModel::h100_sxm()));
        assert_eq!(MachineModel::named("a100-sxm"), Some(MachineModel::a100_sxm()));
        assert_eq!(MachineModel::named("b200"), None);
        let (h100, h200) = (MachineModel::h100_sxm(), MachineModel::h200_sxm());
        assert!(h200.dram_bytes_per_s > h100.dram_bytes_per_s);
        assert_eq!(MachineModel { name: h100.name, dram_bytes_per_s: h100.dram_bytes_per_s, ..h200 }, h100);
    }
}
