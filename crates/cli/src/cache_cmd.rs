//! `trident cache list|clear|stats`: the compile cache named by `TRIDENT_CACHE_DIR`
//! (default `~/.cache/trident`).

use clap::{Args, Subcommand};
use std::time::SystemTime;
use trident_runtime::cache::Cache;

#[derive(Args, Debug)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Subcommand, Debug)]
pub enum CacheAction {
    /// List the entries, most recently used first: id, kernel, size, last use, key.
    List,
    /// Remove every entry and autotuning record.
    Clear,
    /// Entries, size against the limit, and hit/miss counts over all processes.
    Stats,
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn age(t: Option<SystemTime>) -> String {
    let Some(secs) = t.and_then(|t| SystemTime::now().duration_since(t).ok()).map(|d| d.as_secs()) else {
        return "?".to_string();
    };
    match secs {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86400),
    }
}

pub fn cache(a: CacheArgs) -> Result<(), String> {
    let cache = Cache::open_default().map_err(|e| format!("error: compile cache: {e}"))?;
    match a.action {
        CacheAction::List => {
            let entries = cache.list();
            if entries.is_empty() {
                println!("no entries in {}", cache.root().display());
            }
            for e in entries {
                println!(
                    "{}  {:<24} {:>9}  {:>8}  {}",
                    e.id,
                    e.kernel.as_deref().unwrap_or("?"),
                    size(e.bytes),
                    age(e.last_use),
                    e.summary
                );
            }
        }
        CacheAction::Clear => {
            let c = cache.clear().map_err(|e| format!("error: clearing the compile cache: {e}"))?;
            println!(
                "removed {} entries ({}) and {} autotuning records from {}",
                c.entries,
                size(c.bytes),
                c.autotune_records,
                cache.root().display()
            );
        }
        CacheAction::Stats => {
            let s = cache.stats();
            let t = s.totals;
            println!("directory:          {}", s.root.display());
            println!("entries:            {}", s.entries);
            println!("size:               {} of {}", size(s.bytes), size(s.max_bytes));
            println!("autotuning records: {}", s.autotune_records);
            println!("hits:               {} from disk, {} in-process", t.hits, t.memo_hits);
            println!("misses:             {} (compiled)", t.misses);
            println!("damaged entries:    {} (removed and rebuilt)", t.corrupt);
            println!("evicted:            {}", t.evicted);
            println!("store errors:       {}", t.store_errors);
        }
    }
    Ok(())
}
