//! `CUresult` codes this driver returns, with the names and descriptions `cuGetErrorName` and
//! `cuGetErrorString` give (the driver's own wording where we know it).

pub type CuResult = u32;

pub const SUCCESS: CuResult = 0;
pub const INVALID_VALUE: CuResult = 1;
pub const OUT_OF_MEMORY: CuResult = 2;
pub const NOT_INITIALIZED: CuResult = 3;
pub const NO_DEVICE: CuResult = 100;
pub const INVALID_DEVICE: CuResult = 101;
pub const INVALID_IMAGE: CuResult = 200;
pub const INVALID_CONTEXT: CuResult = 201;
pub const NO_BINARY_FOR_GPU: CuResult = 209;
pub const INVALID_PTX: CuResult = 218;
pub const INVALID_HANDLE: CuResult = 400;
pub const NOT_FOUND: CuResult = 500;
pub const ILLEGAL_ADDRESS: CuResult = 700;
pub const LAUNCH_TIMEOUT: CuResult = 702;
pub const MISALIGNED_ADDRESS: CuResult = 716;
pub const LAUNCH_FAILED: CuResult = 719;
pub const NOT_SUPPORTED: CuResult = 801;
pub const UNKNOWN: CuResult = 999;

/// `(code, name, description)` of every code this driver can return.
const TABLE: &[(CuResult, &str, &str)] = &[
    (SUCCESS, "CUDA_SUCCESS", "no error"),
    (INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    (OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    (NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    (NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    (INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    (INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
    (INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    (NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"),
    (INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    (INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    (NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    (ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    (LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"),
    (MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    (LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    (NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    (UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"),
];

/// The name and description of `code`, if it is one this driver knows.
pub fn describe(code: CuResult) -> Option<(&'static str, &'static str)> {
    TABLE.iter().find(|(c, _, _)| *c == code).map(|&(_, n, d)| (n, d))
}

/// NUL-terminated copies of the table's strings, so `cuGetErrorName`/`String` can hand out
/// pointers to static C strings.
pub fn c_name(code: CuResult) -> Option<&'static std::ffi::CStr> {
    static NAMES: std::sync::OnceLock<Vec<(CuResult, std::ffi::CString, std::ffi::CString)>> =
        std::sync::OnceLock::new();
    let v = NAMES.get_or_init(|| {
        TABLE
            .iter()
            .filter_map(|&(c, n, d)| Some((c, std::ffi::CString::new(n).ok()?, std::ffi::CString::new(d).ok()?)))
            .collect()
    });
    v.iter().find(|(c, _, _)| *c == code).map(|(_, n, _)| n.as_c_str())
}

/// The description of `code` as a static C string.
pub fn c_string(code: CuResult) -> Option<&'static std::ffi::CStr> {
    static STRINGS: std::sync::OnceLock<Vec<(CuResult, std::ffi::CString)>> = std::sync::OnceLock::new();
    let v = STRINGS
        .get_or_init(|| TABLE.iter().filter_map(|&(c, _, d)| Some((c, std::ffi::CString::new(d).ok()?))).collect());
    v.iter().find(|(c, _)| *c == code).map(|(_, d)| d.as_c_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_distinct_name_and_c_strings() {
        for (i, (c, n, _)) in TABLE.iter().enumerate() {
            assert!(TABLE[i + 1..].iter().all(|(d, m, _)| d != c && m != n), "{n} twice");
            assert_eq!(c_name(*c).unwrap().to_str().unwrap(), *n);
            assert!(c_string(*c).is_some());
        }
        assert_eq!(describe(12345), None);
        assert_eq!(c_name(12345), None);
    }
}
