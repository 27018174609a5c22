//! Errors: every failure of this crate is a [`CudaError`] value, never a panic.

use std::fmt;

/// A driver result code with the driver's own name and description of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    /// The raw `CUresult`.
    pub code: u32,
    /// E.g. `CUDA_ERROR_INVALID_VALUE`.
    pub name: String,
    /// E.g. `invalid argument`.
    pub message: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code, self.message)
    }
}

/// The driver's errors after which its context is unusable: a kernel faulted, and every later
/// call in that context (a load, a copy, a launch) fails with the same error. `(code, name)`.
pub const STICKY_ERRORS: &[(u32, &str)] = &[
    (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    (702, "CUDA_ERROR_LAUNCH_TIMEOUT"),
    (714, "CUDA_ERROR_HARDWARE_STACK_ERROR"),
    (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    (716, "CUDA_ERROR_MISALIGNED_ADDRESS"),
    (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
    (718, "CUDA_ERROR_INVALID_PC"),
    (719, "CUDA_ERROR_LAUNCH_FAILED"),
];

/// Whether an error's text names one of the [`STICKY_ERRORS`] (for callers that only kept
/// the message).
pub fn names_sticky_error(text: &str) -> bool {
    STICKY_ERRORS.iter().any(|(_, name)| text.contains(name))
}

/// What a launch asked for: which kernel, grid, block and dynamic shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchDesc {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

impl fmt::Display for LaunchDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        write!(
            f,
            "kernel `{}` (grid [{gx}, {gy}, {gz}], block [{bx}, {by}, {bz}], {} B dynamic shared memory)",
            self.kernel, self.dynamic_shared_bytes
        )
    }
}

/// Which kind of image a module was loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    Ptx,
    Cubin,
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Ptx => "PTX",
            ImageKind::Cubin => "cubin",
        })
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CudaError {
    /// The driver library is missing, lacks a symbol we need, or failed to initialise.
    #[error("no CUDA driver: {reason}")]
    NoDriver { reason: String },

    /// The driver works but has no device with this ordinal.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoDevice { ordinal: usize, count: usize },

    /// A driver call outside launches and module loading failed.
    #[error("{call} failed: {driver}")]
    Driver { call: String, driver: DriverError },

    /// The driver's JIT or loader rejected an image; `log` is its error log (for PTX, the
    /// ptxas messages with line numbers), `info_log` whatever else it printed.
    #[error("loading the {kind} image failed: {driver}{}", log_suffix(log))]
    Jit { kind: ImageKind, driver: DriverError, log: String, info_log: String },

    /// The bytes given are not a loadable image (checked before the driver sees them).
    #[error("invalid {kind} image: {reason}")]
    InvalidImage { kind: ImageKind, reason: String },

    /// The module has no kernel of that name.
    #[error("kernel `{name}` not found in the module: {driver}")]
    KernelNotFound { name: String, driver: DriverError },

    /// The launch was rejected before reaching the driver (bad dimensions, too much shared
    /// memory, parameters that do not match the kernel's signature, ...).
    #[error("cannot launch {launch}: {reason}")]
    InvalidLaunch { launch: Box<LaunchDesc>, reason: String },

    /// The driver refused the launch.
    #[error("launch of {launch} failed: {driver}")]
    Launch { launch: Box<LaunchDesc>, driver: DriverError },

    /// An error reported when waiting for work (a stream, event or device synchronisation);
    /// such errors come from earlier asynchronous work, most likely `last_launch`.
    #[error("{call} failed{}: {driver}", after(last_launch))]
    Async { call: String, last_launch: Option<Box<LaunchDesc>>, driver: DriverError },

    /// A host/device copy with mismatched sizes, or a similar misuse of a buffer.
    #[error("{what}: expected {expected} bytes, got {got}")]
    SizeMismatch { what: String, expected: usize, got: usize },

    /// An argument this crate cannot pass to the driver (a NUL inside PTX text, a buffer of
    /// another device, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

fn log_suffix(log: &str) -> String {
    let log = log.trim_end();
    if log.is_empty() {
        String::new()
    } else {
        format!("\n{log}")
    }
}

fn after(l: &Option<Box<LaunchDesc>>) -> String {
    match l {
        Some(l) => format!(" after the launch of {l}"),
        None => String::new(),
    }
}

impl CudaError {
    /// The driver's error, when the failure came from the driver.
    pub fn driver_error(&self) -> Option<&DriverError> {
        match self {
            CudaError::Driver { driver, .. }
            | CudaError::Jit { driver, .. }
            | CudaError::KernelNotFound { driver, .. }
            | CudaError::Launch { driver, .. }
            | CudaError::Async { driver, .. } => Some(driver),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> LaunchDesc {
        LaunchDesc { kernel: "vadd".into(), grid: [4, 1, 1], block: [256, 1, 1], dynamic_shared_bytes: 1024 }
    }

    fn drv() -> DriverError {
        DriverError { code: 1, name: "CUDA_ERROR_INVALID_VALUE".into(), message: "invalid argument".into() }
    }

    #[test]
    fn sticky_errors_are_told_by_their_names_in_a_message() {
        let fault = DriverError {
            code: 717,
            name: "CUDA_ERROR_INVALID_ADDRESS_SPACE".into(),
            message: "operation not supported on global/shared address space".into(),
        };
        let e = CudaError::Async {
            call: "cuEventSynchronize".into(),
            last_launch: Some(Box::new(launch())),
            driver: fault,
        };
        assert!(names_sticky_error(&e.to_string()));
        let e = CudaError::Launch { launch: Box::new(launch()), driver: drv() };
        assert!(!names_sticky_error(&e.to_string()), "an invalid value leaves the context usable");
        assert!(STICKY_ERRORS.iter().any(|&(c, n)| c == 700 && n == "CUDA_ERROR_ILLEGAL_ADDRESS"));
    }

    #[test]
    fn launch_error_names_kernel_dims_and_driver_error() {
        let e = CudaError::Launch { launch: Box::new(launch()), driver: drv() };
        assert_eq!(
            e.to_string(),
            "launch of kernel `vadd` (grid [4, 1, 1], block [256, 1, 1], 1024 B dynamic shared memory) failed: \
             CUDA_ERROR_INVALID_VALUE (1): invalid argument"
        );
    }

    #[test]
    fn jit_error_carries_the_log() {
        let e = CudaError::Jit {
            kind: ImageKind::Ptx,
            driver: DriverError { code: 218, name: "CUDA_ERROR_INVALID_PTX".into(), message: "bad ptx".into() },
            log: "ptxas application ptx input, line 7; error   : oops\n".into(),
            info_log: String::new(),
        };
        let s = e.to_string();
        assert!(s.starts_with("loading the PTX image failed: CUDA_ERROR_INVALID_PTX (218)"), "{s}");
        assert!(s.ends_with("line 7; error   : oops"), "{s}");
    }

    #[test]
    fn async_error_mentions_last_launch() {
        let e = CudaError::Async {
            call: "cuStreamSynchronize".into(),
            last_launch: Some(Box::new(launch())),
            driver: drv(),
        };
        assert!(e.to_string().contains("after the launch of kernel `vadd`"), "{e}");
        let e = CudaError::Async { call: "cuStreamSynchronize".into(), last_launch: None, driver: drv() };
        assert_eq!(e.to_string(), "cuStreamSynchronize failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument");
    }
}
