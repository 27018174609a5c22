//! Kernel launches: checks before the driver sees them, and a prepared form for relaunching
//! without repacking or allocating.

use std::ffi::c_uint;

use crate::error::{CudaError, LaunchDesc};
use crate::module::Kernel;
use crate::params::{Param, ParamBuffer, ParamSlot};
use crate::stream::{LastLaunch, Stream};

/// Launches `kernel` on `stream` (asynchronously: errors raised while the kernel runs are
/// reported by the next synchronisation). Packs `params` on every call; use
/// [`PreparedLaunch`] to launch the same arguments repeatedly.
pub fn launch(
    kernel: &Kernel,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared_bytes: u32,
    stream: &Stream,
    params: &[Param<'_>],
) -> Result<(), CudaError> {
    PreparedLaunch::new(kernel, grid, block, dynamic_shared_bytes, params)?.launch(stream)
}

/// The limits a launch is checked against.
#[derive(Clone, Debug)]
pub(crate) struct LaunchLimits {
    pub kernel_max_threads: u32,
    pub max_block_dim: [u32; 3],
    pub max_grid_dim: [u32; 3],
    pub static_shared: u32,
    pub max_shared_optin: u32,
}

/// Checks grid, block and shared memory against the device's and kernel's limits.
pub(crate) fn check_dims(grid: [u32; 3], block: [u32; 3], shared: u32, lim: &LaunchLimits) -> Result<(), String> {
    const AXES: [&str; 3] = ["x", "y", "z"];
    if grid.contains(&0) || block.contains(&0) {
        return Err("grid and block dimensions must be at least 1".into());
    }
    for i in 0..3 {
        if grid[i] > lim.max_grid_dim[i] {
            return Err(format!("grid {} = {} exceeds the device's limit {}", AXES[i], grid[i], lim.max_grid_dim[i]));
        }
        if block[i] > lim.max_block_dim[i] {
            return Err(format!(
                "block {} = {} exceeds the device's limit {}",
                AXES[i], block[i], lim.max_block_dim[i]
            ));
        }
    }
    let threads = block.iter().map(|&d| d as u64).product::<u64>();
    if threads > lim.kernel_max_threads as u64 {
        return Err(format!(
            "{threads} threads per block; this kernel allows at most {} (registers or .maxntid)",
            lim.kernel_max_threads
        ));
    }
    let total = lim.static_shared as u64 + shared as u64;
    if total > lim.max_shared_optin as u64 {
        return Err(format!(
            "{} B static + {shared} B dynamic shared memory exceeds the device's {} B per block",
            lim.static_shared, lim.max_shared_optin
        ));
    }
    Ok(())
}

/// Checks our parameter list against the one the driver reports for the kernel: the count and
/// each size. Offsets are not compared: the driver reports where each parameter sits in the
/// kernel's constant bank, which `ptxas` aligns in the bank's own addresses (a 64-byte-aligned
/// tensor map after 36 bytes of parameters is at offset 48 on sm_90, whose parameters start at
/// bank offset 0x210), while `cuLaunchKernel` copies each parameter from its own pointer, so our
/// packing's offsets never reach the kernel.
pub(crate) fn check_params(kernel: &[ParamSlot], ours: &[ParamSlot], params: &[Param<'_>]) -> Result<(), String> {
    if kernel.len() != ours.len() {
        return Err(format!("the kernel takes {} parameters, {} were given", kernel.len(), ours.len()));
    }
    for (i, ((k, o), p)) in kernel.iter().zip(ours).zip(params).enumerate() {
        if k.size != o.size {
            return Err(format!(
                "parameter {i} is {} bytes in the kernel, but a {} ({} bytes) was given",
                k.size,
                p.type_name(),
                o.size
            ));
        }
    }
    Ok(())
}

/// A checked launch with its parameters packed, ready to be issued any number of times.
/// [`PreparedLaunch::launch`] makes one driver call plus a context check; it allocates
/// nothing. The buffers it points at are borrowed for `'a`.
pub struct PreparedLaunch<'a> {
    kernel: Kernel,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: ParamBuffer<'a>,
}

impl std::fmt::Debug for PreparedLaunch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PreparedLaunch({})", self.desc())
    }
}

impl<'a> PreparedLaunch<'a> {
    /// Checks the launch (dimensions, shared memory, buffers' device, and the parameter
    /// list against the kernel's signature where the driver reports it), raises the
    /// kernel's dynamic shared-memory limit if needed, and packs the parameters.
    pub fn new(
        kernel: &Kernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared_bytes: u32,
        params: &[Param<'a>],
    ) -> Result<PreparedLaunch<'a>, CudaError> {
        let desc = || Box::new(LaunchDesc { kernel: kernel.name().to_string(), grid, block, dynamic_shared_bytes });
        let invalid = |reason: String| CudaError::InvalidLaunch { launch: desc(), reason };
        let dev = kernel.dev();
        let info = &dev.info;
        let lim = LaunchLimits {
            kernel_max_threads: kernel.attributes().max_threads_per_block,
            max_block_dim: info.max_block_dim,
            max_grid_dim: info.max_grid_dim,
            static_shared: kernel.attributes().static_shared_bytes,
            max_shared_optin: info.shared_mem_per_block_optin,
        };
        check_dims(grid, block, dynamic_shared_bytes, &lim).map_err(invalid)?;
        for (i, p) in params.iter().enumerate() {
            if let Some(b) = p.buffer() {
                if b.dev.ctx != dev.ctx {
                    return Err(invalid(format!("parameter {i} is a buffer on another device")));
                }
            }
        }
        let packed = ParamBuffer::pack(params);
        if let Some(expected) = kernel.param_layout() {
            check_params(expected, packed.slots(), params).map_err(invalid)?;
        }
        kernel.ensure_dynamic_shared_bytes(dynamic_shared_bytes).map_err(|e| match e {
            CudaError::Driver { driver, .. } => CudaError::Launch { launch: desc(), driver },
            e => e,
        })?;
        Ok(PreparedLaunch { kernel: kernel.clone(), grid, block, shared: dynamic_shared_bytes, params: packed })
    }

    /// What this launch asks for (for messages and logs).
    pub fn desc(&self) -> LaunchDesc {
        LaunchDesc {
            kernel: self.kernel.name().to_string(),
            grid: self.grid,
            block: self.block,
            dynamic_shared_bytes: self.shared,
        }
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub fn params(&self) -> &ParamBuffer<'a> {
        &self.params
    }

    /// Replaces parameter `index` with a value of the same size (e.g. another buffer or a
    /// new scalar), without repacking.
    pub fn set_param(&mut self, index: usize, param: Param<'a>) -> Result<(), CudaError> {
        if let Some(b) = param.buffer() {
            if b.dev.ctx != self.kernel.dev().ctx {
                return Err(CudaError::InvalidLaunch {
                    launch: Box::new(self.desc()),
                    reason: format!("parameter {index} is a buffer on another device"),
                });
            }
        }
        self.params.set(index, param)
    }

    /// Queues the kernel on `stream`. Returns when the launch is queued, not finished.
    pub fn launch(&self, stream: &Stream) -> Result<(), CudaError> {
        let dev = self.kernel.dev();
        if stream.dev.ctx != dev.ctx {
            return Err(CudaError::InvalidLaunch {
                launch: Box::new(self.desc()),
                reason: "the stream belongs to another device".into(),
            });
        }
        dev.make_current()?;
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        // SAFETY: the function, stream and context are live (held by Arcs); the parameter
        // array has one pointer per kernel parameter into a block that outlives the call,
        // and the values it points at were checked against the kernel's layout where the
        // driver reports one; dimensions were checked against the device's limits.
        let rc = unsafe {
            (dev.api.cuLaunchKernel)(
                self.kernel.inner.func,
                gx as c_uint,
                gy as c_uint,
                gz as c_uint,
                bx as c_uint,
                by as c_uint,
                bz as c_uint,
                self.shared as c_uint,
                stream.raw,
                self.params.kernel_params(),
                std::ptr::null_mut(),
            )
        };
        if rc != crate::api::CUDA_SUCCESS {
            return Err(CudaError::Launch { launch: Box::new(self.desc()), driver: dev.api.error(rc) });
        }
        if let Ok(mut last) = stream.last.lock() {
            *last = Some(LastLaunch {
                kernel: self.kernel.inner.name.clone(),
                grid: self.grid,
                block: self.block,
                shared: self.shared,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> LaunchLimits {
        LaunchLimits {
            kernel_max_threads: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [2147483647, 65535, 65535],
            static_shared: 1024,
            max_shared_optin: 232448,
        }
    }

    #[test]
    fn accepts_launches_within_limits() {
        assert_eq!(check_dims([1, 1, 1], [1, 1, 1], 0, &h100()), Ok(()));
        assert_eq!(check_dims([2147483647, 65535, 65535], [32, 32, 1], 231424, &h100()), Ok(()));
    }

    #[test]
    fn rejects_each_limit_with_a_reason() {
        let l = h100();
        let cases: [([u32; 3], [u32; 3], u32, &str); 6] = [
            ([0, 1, 1], [32, 1, 1], 0, "at least 1"),
            ([1, 65536, 1], [32, 1, 1], 0, "grid y = 65536"),
            ([1, 1, 1], [1, 1, 65], 0, "block z = 65"),
            ([1, 1, 1], [64, 32, 1], 0, "2048 threads per block"),
            ([1, 1, 1], [128, 1, 1], 231425, "1024 B static + 231425 B dynamic"),
            ([1, 1, 1], [1, 0, 1], 0, "at least 1"),
        ];
        for (g, b, s, want) in cases {
            let e = check_dims(g, b, s, &l).unwrap_err();
            assert!(e.contains(want), "{g:?} {b:?} {s}: {e}");
        }
        let mut small = l.clone();
        small.kernel_max_threads = 128;
        assert!(check_dims([1, 1, 1], [256, 1, 1], 0, &small).unwrap_err().contains("at most 128"));
    }

    #[test]
    fn parameter_lists_must_match_the_kernel() {
        let params = [Param::DevicePtr(0), Param::U32(3)];
        let (ours, _) = crate::params::param_layout(&params);
        let kernel = [ParamSlot { offset: 0, size: 8 }, ParamSlot { offset: 8, size: 4 }];
        assert_eq!(check_params(&kernel, &ours, &params), Ok(()));

        let e = check_params(&kernel[..1], &ours, &params).unwrap_err();
        assert_eq!(e, "the kernel takes 1 parameters, 2 were given");

        let wide = [ParamSlot { offset: 0, size: 8 }, ParamSlot { offset: 8, size: 8 }];
        let e = check_params(&wide, &ours, &params).unwrap_err();
        assert_eq!(e, "parameter 1 is 8 bytes in the kernel, but a u32 (4 bytes) was given");

        // The driver's offsets are the kernel's bank layout, not our packing's: not compared
        // (a tensor map after 36 bytes of parameters is at 48 in an sm_90 cubin, 64 in ours).
        let banked = [ParamSlot { offset: 0, size: 8 }, ParamSlot { offset: 16, size: 4 }];
        assert_eq!(check_params(&banked, &ours, &params), Ok(()));
    }
}
