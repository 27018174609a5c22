//! The CUDA driver backend of Trident: devices, memory, modules, kernel launches, streams
//! and events, over a driver loaded at run time.
//!
//! Nothing of CUDA is needed to build or test this crate: the driver library (`libcuda`) is
//! opened on first use, and every entry point returns [`CudaError::NoDriver`] where it is
//! missing. Nothing here panics on bad input or driver failures.
//!
//! ```no_run
//! use trident_cuda::{launch, Device, DeviceBuffer, Module, Param};
//! # fn main() -> Result<(), trident_cuda::CudaError> {
//! # let ptx = "";
//! let dev = Device::open(0)?;
//! let module = Module::load_ptx(&dev, ptx)?;
//! let kernel = module.kernel("vadd")?;
//! let x = DeviceBuffer::from_bytes(&dev, &[0u8; 4096])?;
//! let out = DeviceBuffer::alloc(&dev, 4096)?;
//! let stream = dev.default_stream();
//! launch(&kernel, [4, 1, 1], [256, 1, 1], 0, &stream, &[Param::Ptr(&x), Param::Ptr(&out), Param::U32(1024)])?;
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! See the crate's README for how the driver is found and what is tested where.

mod api;
mod device;
mod error;
mod image;
mod launch;
mod memory;
mod module;
mod params;
mod stream;
mod tensormap;

pub use api::DRIVER_PATH_ENV;
pub use device::{Device, DeviceInfo, PointerInfo};
pub use error::{names_sticky_error, CudaError, DriverError, ImageKind, LaunchDesc, STICKY_ERRORS};
pub use launch::{launch, PreparedLaunch};
pub use memory::DeviceBuffer;
pub use module::{Kernel, KernelAttributes, Module};
pub use params::{param_layout, Param, ParamBuffer, ParamSlot};
pub use stream::{Event, Stream};
pub use tensormap::{check_tiled, encode_tiled, TiledMap};
