//! Compilation options of the GPU backend.

use crate::machine::Target;

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
}

impl Default for GpuOptions {
    fn default() -> GpuOptions {
        GpuOptions { target: Target::Sm80, num_warps: 4, num_stages: 3, max_shared_bytes: None, line_info: true }
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
    /// line of the GPU passes' text-format tests.
    pub fn parse_words(words: &str) -> Result<GpuOptions, String> {
        let mut o = GpuOptions::default();
        for w in words.split_whitespace() {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("expected `key=value`, found `{w}`"))?;
            let num = || v.parse::<u32>().map_err(|_| format!("`{k}` needs a number, not `{v}`"));
            match k {
                "target" => o.target = Target::parse(v).ok_or_else(|| format!("unknown target `{v}`"))?,
                "num_warps" => o.num_warps = num()?,
                "num_stages" => o.num_stages = num()?,
                "max_shared_bytes" => o.max_shared_bytes = Some(num()?),
                "line_info" => {
                    o.line_info = v.parse().map_err(|_| format!("`line_info` is true or false, not `{v}`"))?
                }
                _ => {
                    return Err(format!(
                        "unknown option `{k}` (known: target, num_warps, num_stages, max_shared_bytes, line_info)"
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
}
