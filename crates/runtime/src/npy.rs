//! Reading and writing numpy `.npy` files for every Trident element type.
//!
//! Hand-written rather than built on `npyz`: our tensors are already
//! dtype-tagged little-endian byte buffers ([`HostTensor`]), so the whole job
//! is parsing and printing a one-line header. `npyz`'s typed element API
//! would make us match on thirteen dtypes to decode each element and encode it
//! back into the same bytes, and it knows nothing of bf16/fp8, which we must
//! special-case anyway. The format (versions 1.0, 2.0 and 3.0) is small:
//! magic `\x93NUMPY`, two version bytes, a little-endian header length (u16
//! for 1.0, u32 after), a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` padded with
//! spaces and a newline, then the raw elements.
//!
//! numpy has no bfloat16 or fp8 type, so (like the Triton oracle) those
//! tensors are written as float32 — exactly, since every bf16/fp8 value is an
//! f32 value — and a reader who knows the real type converts back with
//! [`read_as`] (on the command line: `@PATH.npy:bf16`). Bools are `|b1`.
//!
//! Reading accepts little- and big-endian files and Fortran order (both are
//! converted to our little-endian C order); it rejects other dtypes (complex,
//! strings, objects, structured records) with an error.

use std::path::{Path, PathBuf};

use thiserror::Error;
use trident_core::tensor::encode_f64;
use trident_core::{DType, HostTensor};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Largest tensor a `.npy` header may describe (64 GiB): a guard against
/// corrupt headers that would otherwise make us try to allocate exabytes.
pub const MAX_BYTES: usize = 64 << 30;

/// Something went wrong reading or writing a `.npy` file.
#[derive(Debug, Error)]
pub enum NpyError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        #[source]
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The bytes are not a `.npy` file (or not a consistent one).
    #[error("{origin}: not a valid .npy file: {reason}")]
    Malformed {
        /// The file's path, or `<bytes>`.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// A valid `.npy` file that Trident cannot represent (complex, strings, too large, ...).
    #[error("{origin}: unsupported .npy content: {reason}")]
    Unsupported {
        /// The file's path, or `<bytes>`.
        origin: String,
        /// What is not supported.
        reason: String,
    },
}

/// The header fields we use.
#[derive(Debug, PartialEq)]
struct Header {
    dtype: DType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// The dtype a tensor of `dtype` is stored as in a `.npy` file: f32 for bf16 and fp8, itself otherwise.
pub fn storage_dtype(dtype: DType) -> DType {
    match dtype {
        DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => DType::F32,
        t => t,
    }
}

/// Reads a `.npy` file as the dtype it was saved with.
pub fn read(path: &Path) -> Result<HostTensor, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io { path: path.to_owned(), source })?;
    decode_from(&bytes, &path.display().to_string())
}

/// Reads a `.npy` file and converts its values to `dtype` (see [`convert`]); the way
/// to read back a bf16 or fp8 tensor that was saved as f32.
pub fn read_as(path: &Path, dtype: DType) -> Result<HostTensor, NpyError> {
    Ok(convert(&read(path)?, dtype))
}

/// Writes `t` to `path` (bf16 and fp8 as f32; see the module docs).
pub fn write(path: &Path, t: &HostTensor) -> Result<(), NpyError> {
    let bytes = encode(t)?;
    std::fs::write(path, bytes).map_err(|source| NpyError::Io { path: path.to_owned(), source })
}

/// Writes several tensors, all or none: each goes to a temporary file beside its path
/// first, and only when every one is written are they renamed into place; on a failure the
/// temporaries are removed and no path is touched. The error comes with the index of the
/// failing item.
pub fn write_all(items: &[(&Path, &HostTensor)]) -> Result<(), (usize, NpyError)> {
    let temp = |p: &Path| {
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".trident-{}.tmp", std::process::id()));
        p.with_file_name(name)
    };
    let mut written: Vec<PathBuf> = Vec::new();
    let cleanup = |written: &[PathBuf]| {
        for w in written {
            let _ = std::fs::remove_file(w);
        }
    };
    for (i, (path, t)) in items.iter().enumerate() {
        let tmp = temp(path);
        if let Err(e) = write(&tmp, t) {
            cleanup(&written);
            let e = match e {
                NpyError::Io { source, .. } => NpyError::Io { path: path.to_path_buf(), source },
                other => other,
            };
            return Err((i, e));
        }
        written.push(tmp);
    }
    for (i, ((path, _), tmp)) in items.iter().zip(&written).enumerate() {
        if let Err(source) = std::fs::rename(tmp, path) {
            cleanup(&written[i..]);
            return Err((i, NpyError::Io { path: path.to_path_buf(), source }));
        }
    }
    Ok(())
}

/// Decodes the bytes of a `.npy` file.
pub fn decode(bytes: &[u8]) -> Result<HostTensor, NpyError> {
    decode_from(bytes, "<bytes>")
}

/// Converts every element of `t` to `dtype` through f64: floats round to nearest
/// even, integers are taken toward zero and saturate, bool is `value != 0`
/// (the rules of [`trident_core::tensor::encode_f64`]). Exact for the intended
/// use, bf16/fp8 values stored as f32; 64-bit integers beyond 2^53 lose bits.
pub fn convert(t: &HostTensor, dtype: DType) -> HostTensor {
    if t.dtype == dtype {
        return t.clone();
    }
    let mut out = HostTensor::zeros(dtype, &t.shape);
    for i in 0..t.numel() {
        out.set_f64(i, t.get_f64(i));
    }
    out
}

/// Encodes `t` as the bytes of a `.npy` file (version 1.0, or 2.0 if the header needs it).
pub fn encode(t: &HostTensor) -> Result<Vec<u8>, NpyError> {
    let expected = t.numel().checked_mul(t.dtype.size_bytes());
    if expected != Some(t.data.len()) {
        return Err(NpyError::Malformed {
            origin: "<tensor>".into(),
            reason: format!("tensor of shape {:?} and dtype {} holds {} bytes", t.shape, t.dtype, t.data.len()),
        });
    }
    let stored = storage_dtype(t.dtype);
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    // A one-element Python tuple needs its trailing comma: `(5,)`.
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {tuple}, }}", descr(stored));
    // Pad with spaces so the data starts on a 64-byte boundary, as numpy does; the header ends in '\n'.
    let layout = |len_bytes: usize| {
        let prefix = MAGIC.len() + 2 + len_bytes;
        let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
        (prefix, total, total - prefix)
    };
    let (version, (_, total, header_len)) = match layout(2) {
        l if l.2 <= u16::MAX as usize => (1u8, l),
        _ => (2u8, layout(4)),
    };
    let mut out = Vec::with_capacity(total + t.numel() * stored.size_bytes());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    if stored == t.dtype {
        if t.dtype == DType::I1 {
            out.extend(t.data.iter().map(|&b| (b != 0) as u8));
        } else {
            out.extend_from_slice(&t.data);
        }
    } else {
        let mut buf = [0u8; 8];
        let w = stored.size_bytes();
        for i in 0..t.numel() {
            encode_f64(stored, t.get_f64(i), &mut buf[..w]);
            out.extend_from_slice(&buf[..w]);
        }
    }
    Ok(out)
}

/// The numpy type string of a dtype that `.npy` files can hold directly.
fn descr(dtype: DType) -> &'static str {
    use DType::*;
    match dtype {
        I1 => "|b1",
        I8 => "|i1",
        U8 => "|u1",
        I16 => "<i2",
        U16 => "<u2",
        I32 => "<i4",
        U32 => "<u4",
        I64 => "<i8",
        U64 => "<u8",
        F16 => "<f2",
        F32 => "<f4",
        F64 => "<f8",
        // Never reached: storage_dtype maps these to F32 first.
        BF16 | F8E4M3 | F8E5M2 => "<f4",
    }
}

fn decode_from(bytes: &[u8], origin: &str) -> Result<HostTensor, NpyError> {
    let malformed = |reason: String| NpyError::Malformed { origin: origin.to_string(), reason };
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(malformed("missing the \\x93NUMPY magic".into()));
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(malformed("truncated header".into()));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(NpyError::Unsupported { origin: origin.into(), reason: format!("format version {v}") }),
    };
    let end = start.checked_add(header_len).filter(|&e| e <= bytes.len());
    let Some(end) = end else {
        return Err(malformed("header runs past the end of the file".into()));
    };
    // Version 3.0 allows UTF-8 headers; 1.0 and 2.0 are latin-1, of which we only ever need ASCII.
    let text = std::str::from_utf8(&bytes[start..end]).map_err(|_| malformed("header is not text".into()))?;
    let header = parse_header(text).map_err(|e| match e {
        HeaderError::Malformed(reason) => malformed(reason),
        HeaderError::Unsupported(reason) => NpyError::Unsupported { origin: origin.into(), reason },
    })?;
    let w = header.dtype.size_bytes();
    let numel = header.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let nbytes = numel.and_then(|n| n.checked_mul(w)).filter(|&b| b <= MAX_BYTES);
    let Some(nbytes) = nbytes else {
        return Err(NpyError::Unsupported {
            origin: origin.into(),
            reason: format!("shape {:?} is larger than {} bytes", header.shape, MAX_BYTES),
        });
    };
    let data = &bytes[end..];
    if data.len() != nbytes {
        return Err(malformed(format!(
            "shape {:?} of {} needs {} data bytes, found {}",
            header.shape,
            header.dtype,
            nbytes,
            data.len()
        )));
    }
    let mut out = data.to_vec();
    if header.big_endian && w > 1 {
        for e in out.chunks_exact_mut(w) {
            e.reverse();
        }
    }
    if header.dtype == DType::I1 {
        for b in &mut out {
            *b = (*b != 0) as u8;
        }
    }
    if header.fortran_order && header.shape.len() > 1 {
        out = fortran_to_c(&out, &header.shape, w);
    }
    Ok(HostTensor { dtype: header.dtype, shape: header.shape, data: out })
}

/// Reorders elements stored first-axis-fastest into last-axis-fastest order.
fn fortran_to_c(data: &[u8], shape: &[usize], w: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = vec![0u8; data.len()];
    // Fortran strides in elements: 1, d0, d0*d1, ...
    let mut fstride = vec![1usize; shape.len()];
    for k in 1..shape.len() {
        fstride[k] = fstride[k - 1] * shape[k - 1];
    }
    let mut idx = vec![0usize; shape.len()];
    for c in 0..n {
        let f: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
        out[c * w..(c + 1) * w].copy_from_slice(&data[f * w..(f + 1) * w]);
        // Advance the C-order multi-index.
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

enum HeaderError {
    Malformed(String),
    Unsupported(String),
}

/// Parses the header dict. It is a Python literal; we accept the subset numpy
/// writes: string keys mapping to a string, `True`/`False`, or a tuple of ints.
fn parse_header(text: &str) -> Result<Header, HeaderError> {
    let bad = |m: &str| HeaderError::Malformed(m.to_string());
    let mut p = Lexer { s: text.trim_end_matches(['\n', ' ', '\0']).as_bytes(), i: 0 };
    p.expect(b'{').ok_or_else(|| bad("header does not start with '{'"))?;
    let (mut descr_s, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string().ok_or_else(|| bad("expected a quoted key"))?;
        p.expect(b':').ok_or_else(|| bad("expected ':' after a key"))?;
        p.skip_ws();
        match key.as_str() {
            "descr" => descr_s = Some(p.string().ok_or_else(|| bad("'descr' is not a string"))?),
            "fortran_order" => fortran = Some(p.boolean().ok_or_else(|| bad("'fortran_order' is not True/False"))?),
            "shape" => shape = Some(p.int_tuple().ok_or_else(|| bad("'shape' is not a tuple of integers"))?),
            other => return Err(HeaderError::Unsupported(format!("header key '{other}'"))),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}').ok_or_else(|| bad("expected ',' or '}'"))?;
            break;
        }
    }
    let descr_s = descr_s.ok_or_else(|| bad("no 'descr'"))?;
    let (dtype, big_endian) = parse_descr(&descr_s).ok_or_else(|| {
        HeaderError::Unsupported(format!("numpy dtype '{descr_s}' (Trident has no such element type)"))
    })?;
    Ok(Header {
        dtype,
        big_endian,
        fortran_order: fortran.ok_or_else(|| bad("no 'fortran_order'"))?,
        shape: shape.ok_or_else(|| bad("no 'shape'"))?,
    })
}

/// `'<f4'` → (F32, little-endian). The byte-order mark is optional; `=` is native (little on every host we run on).
fn parse_descr(s: &str) -> Option<(DType, bool)> {
    let (big, body) = match s.as_bytes().first()? {
        b'<' | b'=' | b'|' => (false, &s[1..]),
        b'>' => (true, &s[1..]),
        _ => (false, s),
    };
    use DType::*;
    let t = match body {
        "b1" | "?" => I1,
        "i1" => I8,
        "u1" => U8,
        "i2" => I16,
        "u2" => U16,
        "i4" => I32,
        "u4" => U32,
        "i8" => I64,
        "u8" => U64,
        "f2" => F16,
        "f4" => F32,
        "f8" => F64,
        _ => return None,
    };
    Some((t, big))
}

/// A cursor over the header text.
struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }
    fn string(&mut self) -> Option<String> {
        self.skip_ws();
        let q = *self.s.get(self.i)?;
        if q != b'\'' && q != b'"' {
            return None;
        }
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&c| c == q)?;
        self.i = start + len + 1;
        String::from_utf8(self.s[start..start + len].to_vec()).ok()
    }
    fn boolean(&mut self) -> Option<bool> {
        self.skip_ws();
        let rest = &self.s[self.i..];
        if rest.starts_with(b"True") {
            self.i += 4;
            Some(true)
        } else if rest.starts_with(b"False") {
            self.i += 5;
            Some(false)
        } else {
            None
        }
    }
    fn int_tuple(&mut self) -> Option<Vec<usize>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Some(dims);
            }
            self.skip_ws();
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            // Python 2 era files may write `3L`.
            let digits = std::str::from_utf8(&self.s[start..self.i]).ok()?;
            dims.push(digits.parse().ok()?);
            self.eat(b'L');
            if !self.eat(b',') {
                self.expect(b')')?;
                return Some(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{generate, Distribution, SplitMix64};

    fn roundtrip(t: &HostTensor) -> HostTensor {
        let bytes = encode(t).unwrap();
        assert_eq!((bytes.len() - t.numel() * storage_dtype(t.dtype).size_bytes()) % 64, 0);
        decode(&bytes).unwrap()
    }

    #[test]
    fn every_dtype_roundtrips() {
        for (k, dt) in DType::ALL.into_iter().enumerate() {
            for shape in [vec![], vec![5], vec![3, 4], vec![2, 0, 3], vec![2, 3, 2, 2]] {
                let mut rng = SplitMix64::new(k as u64);
                let t = generate(&mut rng, Distribution::Normal, dt, &shape);
                let back = roundtrip(&t);
                assert_eq!(back.shape, shape);
                if storage_dtype(dt) == dt {
                    assert_eq!(back, t, "{dt} {shape:?}");
                } else {
                    assert_eq!(back.dtype, DType::F32);
                    assert_eq!(convert(&back, dt), t, "{dt} {shape:?}");
                }
            }
        }
    }

    #[test]
    fn header_matches_numpy_layout() {
        let t = HostTensor::from_f64(DType::F32, &[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let bytes = encode(&t).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        let one = encode(&HostTensor::zeros(DType::I1, &[7])).unwrap();
        let h = std::str::from_utf8(&one[10..64]).unwrap();
        assert!(h.contains("'descr': '|b1'") && h.contains("'shape': (7,)"), "{h}");
    }

    fn file_with(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn reads_big_endian_and_fortran_order() {
        let be = file_with("{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }\n", &[0x01, 0x02, 0xff, 0xfe]);
        let t = decode(&be).unwrap();
        assert_eq!(t.to_f64_vec(), vec![258.0, -2.0]);
        // Fortran 2x3 [[0,1,2],[3,4,5]] is stored column by column: 0 3 1 4 2 5.
        let f = file_with("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }\n", &[0, 3, 1, 4, 2, 5]);
        let t = decode(&f).unwrap();
        assert_eq!(t.data, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn rejects_bad_files_with_reasons() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"not a numpy file".to_vec(), "magic"),
            (file_with("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", &[0; 8]), "<c8"),
            (file_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", &[0; 8]), "needs 12"),
            (file_with("{'descr': '<f4', 'shape': (1,), }\n", &[0; 4]), "fortran_order"),
            (file_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1,x), }\n", &[0; 4]), "shape"),
            (
                file_with("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", &[]),
                "larger",
            ),
        ];
        for (bytes, want) in cases {
            let err = decode(&bytes).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    #[test]
    fn file_roundtrip_and_read_as_bf16() {
        let dir = std::env::temp_dir().join(format!("trident-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.npy");
        let t = generate(&mut SplitMix64::new(9), Distribution::Normal, DType::BF16, &[4, 5]);
        write(&p, &t).unwrap();
        assert_eq!(read(&p).unwrap().dtype, DType::F32);
        assert_eq!(read_as(&p, DType::BF16).unwrap(), t);
        let missing = read(&dir.join("missing.npy")).unwrap_err().to_string();
        assert!(missing.contains("missing.npy"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
