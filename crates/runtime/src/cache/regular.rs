//! Reading files the cache did not necessarily write: a cache directory is shared and may
//! hold anything — a FIFO (whose open blocks until a writer comes) or a symlink to
//! `/dev/zero` (which never ends) must not hang a run. Only regular files, not through a
//! symlink, of a bounded size are read; anything else reads as damaged.

use std::io::{self, Read};
use std::path::Path;

/// The largest file the cache reads (an entry's PTX or cubin is far smaller).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The bytes of `path` if it is a regular file of at most [`MAX_FILE_BYTES`].
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)?.take(MAX_FILE_BYTES + 1).read_to_end(&mut out)?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    Ok(out)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn fifos_and_symlinks_read_as_errors_without_blocking() {
        let dir = std::env::temp_dir().join(format!("trident-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        if made {
            assert!(read(&fifo).is_err(), "a FIFO is refused before it is opened");
        }
        let link = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read(&link).is_err());
        let file = dir.join("f");
        std::fs::write(&file, b"ok").unwrap();
        assert_eq!(read(&file).unwrap(), b"ok");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
