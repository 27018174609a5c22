//! The compile cache's compiler version fingerprints the file named by `set_code_file` (the
//! Python package names its extension module: the `python` executable never changes when the
//! package is rebuilt), not the running executable. Its own test binary: the version is
//! computed once per process.

use trident_runtime::cache::{set_code_file, version};

#[test]
fn the_version_fingerprints_the_named_code_file() {
    let dir = std::env::temp_dir().join(format!("trident-code-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("_native.abi3.so");
    std::fs::write(&file, b"not really a shared library, 47 bytes of text.").unwrap();
    set_code_file(&file);
    let m = file.metadata().unwrap();
    let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let want = blake3::hash(format!("{}:{:?}", m.len(), mtime).as_bytes()).to_hex();
    let v = version();
    assert!(v.ends_with(&want.as_str()[..12]), "{v} is not the named file's fingerprint {want}");
    let exe = std::env::current_exe().unwrap().metadata().unwrap();
    let exe_time = exe.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let exe_hash = blake3::hash(format!("{}:{:?}", exe.len(), exe_time).as_bytes()).to_hex();
    assert!(!v.ends_with(&exe_hash.as_str()[..12]), "{v}: the executable's fingerprint");
    std::fs::remove_dir_all(&dir).ok();
}
