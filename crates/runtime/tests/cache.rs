//! The compile cache: hits, misses, damaged entries, eviction, concurrent writers, memo, admin.

mod common;
use common::{seed, TempDir};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use trident_runtime::cache::{
    parse_size, BuildInfo, Cache, CacheId, CacheKey, EntryData, FileStamp, MemoKey, Outcome, DEFAULT_MAX_BYTES,
};
use trident_runtime::rng::SplitMix64;

fn random_bytes(rng: &mut SplitMix64, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn random_text(rng: &mut SplitMix64, n: usize) -> String {
    (0..n).map(|_| (b'a' + rng.next_below(26) as u8) as char).collect()
}

/// Random artifacts of the given rough size.
fn data(rng: &mut SplitMix64, size: usize) -> EntryData {
    EntryData {
        ttir: Some(random_text(rng, size / 8)),
        ttgir: Some(random_text(rng, size / 8)),
        ptx: Some(random_text(rng, size / 2)),
        cubin: Some(random_bytes(rng, size / 4)),
        extra: vec![("kernel.sass".into(), random_bytes(rng, 100))],
        info: BuildInfo {
            shared_mem_bytes: rng.next_below(1 << 16),
            num_warps: 4,
            num_stages: 3,
            registers: Some(rng.next_below(255) as u32),
            spills: Some(0),
            compile_secs: 0.0,
        },
    }
}

const SOURCE: &str = "@triton.jit\ndef add(x, y, out, n, BLOCK: tl.constexpr):\n    pass\n";

fn key(block: u32) -> CacheKey {
    key_for("sm_80", block)
}

fn key_for(target: &str, block: u32) -> CacheKey {
    CacheKey::new("add", target)
        .source("kernels/add.py", SOURCE)
        .arg("*fp32:16")
        .arg("*fp32:16")
        .arg("*fp32:16")
        .arg("i32")
        .constexpr("BLOCK", block)
        .option("num_warps", 4)
        .option("num_stages", 3)
}

#[test]
fn second_identical_lookup_hits_without_building() {
    let dir = TempDir::new("hit");
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    let s = seed();
    let mut rng = SplitMix64::new(s);
    let d = data(&mut rng, 4096);
    let builds = AtomicUsize::new(0);
    let build = || -> Result<EntryData, String> {
        builds.fetch_add(1, Ordering::Relaxed);
        Ok(d.clone())
    };
    let (first, o1) = cache.get_or_build(&key(128), build).unwrap();
    let (second, o2) = cache.get_or_build(&key(128), build).unwrap();
    assert_eq!((o1, o2), (Outcome::Miss, Outcome::Hit), "seed {s}");
    assert_eq!(builds.load(Ordering::Relaxed), 1, "the builder must not run on a hit");
    assert_eq!(second.ptx, d.ptx);
    assert_eq!(second.cubin, d.cubin);
    assert_eq!(second.ttir, d.ttir);
    assert_eq!(second.ttgir, d.ttgir);
    assert_eq!(second.extra, d.extra);
    assert_eq!(second.metadata, first.metadata);
    assert_eq!(second.metadata.kernel, "add");
    assert_eq!(second.metadata.build.registers, d.info.registers);
    assert!(second.metadata.build.compile_secs >= 0.0);
    assert_eq!(second.metadata.key.constexprs, vec![("BLOCK".to_string(), "128".to_string())]);
    let path = second.path.clone().unwrap();
    assert!(path.join("kernel.cubin").is_file() && path.join("meta.json").is_file());
    assert_eq!(fs::read(path.join("kernel.cubin")).unwrap(), d.cubin.unwrap());
    // A fresh Cache (another process) hits too.
    let other = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    assert!(other.get(&key(128)).is_some());
    assert!(other.get(&key(256)).is_none());
}

#[test]
fn key_changes_miss() {
    let base = key(128);
    let changed = [
        ("constexpr", key(256)),
        ("source", CacheKey::new("add", "sm_80").source("kernels/add.py", format!("{SOURCE}# edit\n"))),
        ("target", key_for("sm_90a", 128)),
        ("option", key(128).option("debug", true)),
        ("helper source", key(128).source("kernels/helpers.py", "def h(): pass")),
        ("version", key(128).with_version("0.0.0-other")),
        ("signature", key(128).arg("i32:1")),
    ];
    for (what, k) in &changed {
        assert_ne!(k.id(), base.id(), "changing the {what} must change the id");
    }
    // Order of named fields does not matter; position of signature entries does.
    let reordered = CacheKey::new("add", "sm_80")
        .option("num_stages", 3)
        .constexpr("BLOCK", 128)
        .option("num_warps", 4)
        .arg("*fp32:16")
        .arg("*fp32:16")
        .arg("*fp32:16")
        .arg("i32")
        .source("kernels/add.py", SOURCE);
    assert_eq!(reordered.id(), base.id());
    let swapped = CacheKey::new("k", "t").arg("i32").arg("*fp32");
    assert_ne!(swapped.id(), CacheKey::new("k", "t").arg("*fp32").arg("i32").id());
    // Field boundaries are unambiguous.
    assert_ne!(CacheKey::new("k", "t").constexpr("AB", "C").id(), CacheKey::new("k", "t").constexpr("A", "BC").id());
    assert!(CacheId::parse(base.id().as_str()).is_some());
    assert_eq!(base.id().as_str().len(), 32);

    // And on disk: a changed constexpr or source rebuilds.
    let dir = TempDir::new("miss");
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    let mut rng = SplitMix64::new(seed());
    let builds = AtomicUsize::new(0);
    for k in std::iter::once(&base).chain(changed.iter().map(|(_, k)| k)) {
        let d = data(&mut rng, 1024);
        let (_, o) = cache
            .get_or_build(k, || -> Result<_, ()> {
                builds.fetch_add(1, Ordering::Relaxed);
                Ok(d)
            })
            .unwrap();
        assert_eq!(o, Outcome::Miss);
    }
    assert_eq!(builds.load(Ordering::Relaxed), changed.len() + 1);
    assert_eq!(cache.stats().entries, changed.len() as u64 + 1);
}

#[test]
fn builder_errors_are_returned_and_nothing_is_stored() {
    let dir = TempDir::new("builderr");
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    let r = cache.get_or_build(&key(64), || Err::<EntryData, _>("ptxas failed".to_string()));
    assert_eq!(r.unwrap_err(), "ptxas failed");
    assert_eq!(cache.stats().entries, 0);
}

/// Ways to damage an entry on disk.
fn damage(dir: &Path, how: usize) -> &'static str {
    match how {
        0 => {
            let f = fs::OpenOptions::new().write(true).open(dir.join("kernel.cubin")).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len / 2).unwrap();
            "truncated cubin"
        }
        1 => {
            let p = dir.join("kernel.ptx");
            let mut b = fs::read(&p).unwrap();
            let i = b.len() / 3;
            b[i] ^= 0x01;
            fs::write(p, b).unwrap();
            "flipped bit in ptx"
        }
        2 => {
            fs::remove_file(dir.join("kernel.ttgir")).unwrap();
            "missing ttgir"
        }
        3 => {
            fs::write(dir.join("manifest.json"), b"{\"format\": 1, \"files\": [").unwrap();
            "truncated manifest"
        }
        4 => {
            fs::remove_file(dir.join("manifest.json")).unwrap();
            "missing manifest"
        }
        5 => {
            fs::write(dir.join("meta.json"), b"{}").unwrap();
            "rewritten meta.json"
        }
        _ => {
            let p = dir.join("kernel.sass");
            let mut b = fs::read(&p).unwrap();
            b.push(0);
            fs::write(p, b).unwrap();
            "grown extra file"
        }
    }
}

#[test]
fn damaged_entries_are_rebuilt() {
    let s = seed();
    let mut rng = SplitMix64::new(s);
    for how in 0..7 {
        let dir = TempDir::new("corrupt");
        let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        let d = data(&mut rng, 2048);
        let (e, _) = cache.get_or_build(&key(32), || Ok::<_, ()>(d.clone())).unwrap();
        let what = damage(e.path.as_deref().unwrap(), how);
        assert!(cache.get(&key(32)).is_none(), "{what}: a damaged entry must read as a miss (seed {s})");
        assert!(cache.last_problem().is_some_and(|p| p.contains("damaged")), "{what}");
        // Damage again (the miss removed it) and go through get_or_build.
        let (e, _) = cache.get_or_build(&key(32), || Ok::<_, ()>(d.clone())).unwrap();
        damage(e.path.as_deref().unwrap(), how);
        let rebuilt = AtomicUsize::new(0);
        let (e2, o) = cache
            .get_or_build(&key(32), || {
                rebuilt.fetch_add(1, Ordering::Relaxed);
                Ok::<_, ()>(d.clone())
            })
            .unwrap();
        assert_eq!((o, rebuilt.load(Ordering::Relaxed)), (Outcome::Miss, 1), "{what}");
        assert_eq!(e2.cubin, d.cubin, "{what}");
        assert_eq!(e2.ptx, d.ptx, "{what}");
        let (e3, o) = cache.get_or_build(&key(32), || Err(())).unwrap();
        assert_eq!(o, Outcome::Hit, "{what}: the rebuilt entry must be good");
        assert_eq!(e3.ttgir, d.ttgir);
        assert_eq!(cache.stats().session.corrupt, 2, "{what}");
    }
}

fn set_last_use(cache: &Cache, key: &CacheKey, ago: Duration) {
    let f = fs::OpenOptions::new().write(true).open(cache.entry_dir(&key.id()).join("last_use")).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
}

#[test]
fn eviction_removes_least_recently_used_first() {
    let dir = TempDir::new("evict");
    let mut rng = SplitMix64::new(seed());
    let entry_size = 16 * 1024;
    // Room for three entries, not four.
    let probe = TempDir::new("evict-probe");
    let size_of_one = {
        let c = Cache::open(probe.path(), u64::MAX).unwrap();
        c.get_or_build(&key(1), || Ok::<_, ()>(data(&mut rng, entry_size))).unwrap();
        c.stats().bytes
    };
    let cache = Cache::open(dir.path(), size_of_one * 3 + size_of_one / 2).unwrap();
    let keys: Vec<CacheKey> = (0..4).map(|i| key(16 << i)).collect();
    for k in &keys[..3] {
        cache.get_or_build(k, || Ok::<_, ()>(data(&mut rng, entry_size))).unwrap();
    }
    assert_eq!(cache.stats().entries, 3);
    // Stored in order 0, 1, 2; last used 1 (oldest), 2, then 0 (used just now).
    set_last_use(&cache, &keys[0], Duration::from_secs(3 * 3600));
    set_last_use(&cache, &keys[1], Duration::from_secs(2 * 3600));
    set_last_use(&cache, &keys[2], Duration::from_secs(3600));
    assert!(cache.get(&keys[0]).is_some());
    cache.get_or_build(&keys[3], || Ok::<_, ()>(data(&mut rng, entry_size))).unwrap();
    let st = cache.stats();
    assert_eq!(st.entries, 3);
    assert!(st.bytes <= cache.max_bytes(), "{} > {}", st.bytes, cache.max_bytes());
    assert_eq!(st.session.evicted, 1);
    assert!(cache.get(&keys[1]).is_none(), "the least recently used entry goes first");
    for k in [&keys[0], &keys[2], &keys[3]] {
        assert!(cache.get(k).is_some());
    }
    // Listing: most recently used first, with sizes and names.
    let list = cache.list();
    assert_eq!(list.len(), 3);
    assert!(list.iter().all(|l| l.kernel.as_deref() == Some("add") && l.bytes > entry_size as u64 / 2));
    assert!(list.windows(2).all(|w| w[0].last_use >= w[1].last_use));
    assert!(list[0].summary.contains("target=sm_80") && list[0].summary.contains("BLOCK="), "{}", list[0].summary);
}

#[test]
fn an_entry_larger_than_the_limit_is_kept_until_the_next() {
    let dir = TempDir::new("huge");
    let mut rng = SplitMix64::new(seed());
    let cache = Cache::open(dir.path(), 1000).unwrap();
    let (a, _) = cache.get_or_build(&key(1), || Ok::<_, ()>(data(&mut rng, 8192))).unwrap();
    assert!(a.path.is_some());
    assert!(cache.get(&key(1)).is_some());
    cache.get_or_build(&key(2), || Ok::<_, ()>(data(&mut rng, 8192))).unwrap();
    assert!(cache.get(&key(1)).is_none());
    assert!(cache.get(&key(2)).is_some());
}

#[test]
fn concurrent_writers_agree_on_one_entry() {
    // Enough keys that a reader racing an install is met most runs (with 300, a
    // reader that called the fresh entry damaged and removed it failed every run).
    const ROUNDS: u32 = 100;
    let dir = TempDir::new("race");
    let s = seed();
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let root = dir.path().to_path_buf();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                // A Cache per thread, as separate processes would have.
                let cache = Cache::open(&root, DEFAULT_MAX_BYTES).unwrap();
                // Each writer's artifacts differ, so a torn entry would show.
                let mut rng = SplitMix64::new(s ^ t as u64);
                let d = data(&mut rng, 64 * 1024);
                barrier.wait();
                let mut seen = vec![];
                for round in 0..ROUNDS {
                    let (e, _) = cache.get_or_build(&key(64 + round), || Ok::<_, ()>(d.clone())).unwrap();
                    seen.push(e);
                }
                seen
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    for round in 0..ROUNDS {
        let on_disk = cache.get(&key(64 + round)).expect("the entry exists and verifies");
        for r in &results {
            let e = &r[round as usize];
            assert!(e.path.is_some(), "seed {s}");
            assert_eq!(e.cubin, on_disk.cubin, "seed {s}: every writer returns the entry that won");
            assert_eq!(e.ptx, on_disk.ptx);
            assert_eq!(e.metadata, on_disk.metadata);
        }
    }
    let st = cache.stats();
    assert_eq!(st.entries, ROUNDS as u64);
    assert_eq!(st.totals.store_errors, 0);
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0, "losers clean up their copies");
}

#[test]
fn memo_skips_key_building_and_notices_edits() {
    let dir = TempDir::new("memo");
    let cache = Cache::open(dir.path().join("cache"), DEFAULT_MAX_BYTES).unwrap();
    let src = dir.path().join("add.py");
    fs::write(&src, SOURCE).unwrap();
    let mut rng = SplitMix64::new(seed());
    let d = data(&mut rng, 1024);
    let keys_made = AtomicUsize::new(0);
    let lookup = |block: u32| {
        let memo = MemoKey::new("add", format!("sm_80 (*fp32:16, i32) BLOCK={block}")).files([&src]).unwrap();
        cache.get_or_build_memo(
            &memo,
            || {
                keys_made.fetch_add(1, Ordering::Relaxed);
                let text = fs::read_to_string(&src).map_err(|e| e.to_string())?;
                Ok(CacheKey::new("add", "sm_80").source(src.display().to_string(), text).constexpr("BLOCK", block))
            },
            |_| Ok::<_, String>(d.clone()),
        )
    };
    let (a, o1) = lookup(128).unwrap();
    let (b, o2) = lookup(128).unwrap();
    assert_eq!((o1, o2), (Outcome::Miss, Outcome::Memo));
    assert_eq!(keys_made.load(Ordering::Relaxed), 1, "a memo hit must not rebuild the key (re-hash sources)");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(lookup(64).unwrap().1, Outcome::Miss);
    assert_eq!(keys_made.load(Ordering::Relaxed), 2);
    // Editing the file (size changes) makes the stamp differ: the key is rebuilt.
    fs::write(&src, format!("{SOURCE}# edited\n")).unwrap();
    assert_eq!(lookup(128).unwrap().1, Outcome::Miss);
    assert_eq!(keys_made.load(Ordering::Relaxed), 3);
    assert_eq!(cache.stats().session.memo_hits, 1);
    // A file that vanished: the stamp cannot be taken, which the caller sees.
    assert!(FileStamp::of(dir.path().join("nope.py")).is_err());
}

#[test]
fn stats_list_clear() {
    let dir = TempDir::new("admin");
    let mut rng = SplitMix64::new(seed());
    {
        let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        for b in [16, 32, 64] {
            cache.get_or_build(&key(b), || Ok::<_, ()>(data(&mut rng, 2048))).unwrap();
        }
        cache.get_or_build(&key(16), || Ok::<_, ()>(data(&mut rng, 2048))).unwrap();
        let st = cache.stats();
        assert_eq!((st.session.hits, st.session.misses), (1, 3));
        fs::write(cache.autotune_dir().join("add-0123.json"), "{}").unwrap();
    } // dropped: counters flushed to stats.json
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    cache.get(&key(32)).unwrap();
    let st = cache.stats();
    assert_eq!((st.totals.hits, st.totals.misses), (2, 3), "totals add up across Cache values");
    assert_eq!((st.session.hits, st.session.misses), (1, 0));
    assert_eq!(st.entries, 3);
    assert_eq!(st.autotune_records, 1);
    assert!(st.bytes > 3 * 2048 / 2);
    assert_eq!(st.bytes, cache.list().iter().map(|l| l.bytes).sum::<u64>());
    let id = key(64).id();
    assert!(cache.list().iter().any(|l| l.id == id));
    let cleared = cache.clear().unwrap();
    assert_eq!((cleared.entries, cleared.autotune_records), (3, 1));
    assert_eq!(cleared.bytes, st.bytes);
    let st = cache.stats();
    assert_eq!((st.entries, st.bytes, st.autotune_records, st.totals.hits), (0, 0, 0, 0));
    assert!(cache.list().is_empty());
    assert!(cache.get(&key(16)).is_none());
}

#[test]
fn a_build_that_cannot_be_stored_is_still_returned() {
    let dir = TempDir::new("nostore");
    let cache = Cache::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
    let mut d = data(&mut SplitMix64::new(seed()), 512);
    d.extra.push(("../escape".into(), vec![1, 2, 3]));
    let (e, o) = cache.get_or_build(&key(8), || Ok::<_, ()>(d.clone())).unwrap();
    assert_eq!(o, Outcome::Miss);
    assert!(e.path.is_none());
    assert_eq!(e.ptx, d.ptx);
    assert_eq!(cache.stats().session.store_errors, 1);
    assert!(cache.last_problem().unwrap().contains("bad artifact name"));
    assert!(!dir.path().join("escape").exists());
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn sizes_parse() {
    assert_eq!(parse_size("1073741824"), Some(1 << 30));
    assert_eq!(parse_size("512M"), Some(512 << 20));
    assert_eq!(parse_size("2GiB"), Some(2 << 30));
    assert_eq!(parse_size(" 64kb "), Some(64 << 10));
    assert_eq!(parse_size("1T"), Some(1 << 40));
    for bad in ["", "M", "1.5G", "-1", "12Q", "99999999999999999999T"] {
        assert_eq!(parse_size(bad), None, "{bad:?}");
    }
}

/// Role of a child process in `concurrent_processes_agree_on_one_entry`: when
/// `TRIDENT_CACHE_TEST_CHILD` is set, races on the cache it names and writes
/// the cubins it got back; otherwise does nothing.
#[test]
fn child_writer() {
    let Ok(spec) = std::env::var("TRIDENT_CACHE_TEST_CHILD") else { return };
    let (n, root) = spec.split_once(':').unwrap();
    let root = PathBuf::from(root);
    let n: u64 = n.parse().unwrap();
    let cache = Cache::open(root.join("cache"), DEFAULT_MAX_BYTES).unwrap();
    let mut rng = SplitMix64::new(seed() ^ n);
    let d = data(&mut rng, 64 * 1024);
    let go = root.join("go");
    let start = std::time::Instant::now();
    while !go.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "no start signal");
        std::thread::sleep(Duration::from_millis(1));
    }
    for round in 0..5 {
        let (e, _) = cache.get_or_build(&key(1000 + round), || Ok::<_, ()>(d.clone())).unwrap();
        assert!(e.path.is_some());
        fs::write(root.join(format!("child-{n}-{round}.bin")), e.cubin.as_ref().unwrap()).unwrap();
    }
}

#[test]
fn concurrent_processes_agree_on_one_entry() {
    if std::env::var("TRIDENT_CACHE_TEST_CHILD").is_ok() {
        return;
    }
    let dir = TempDir::new("procs");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|n| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_writer", "--test-threads", "1", "--quiet"])
                .env("TRIDENT_CACHE_TEST_CHILD", format!("{n}:{}", dir.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    fs::write(dir.path().join("go"), b"").unwrap();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a child writer failed");
    }
    let cache = Cache::open(dir.path().join("cache"), DEFAULT_MAX_BYTES).unwrap();
    for round in 0..5 {
        let e = cache.get(&key(1000 + round)).expect("the entry exists and verifies");
        for n in 0..4 {
            let got = fs::read(dir.path().join(format!("child-{n}-{round}.bin"))).unwrap();
            assert_eq!(Some(&got), e.cubin.as_ref(), "child {n} round {round} saw another entry");
        }
    }
    assert_eq!(cache.stats().entries, 5);
    assert_eq!(cache.stats().totals.store_errors, 0);
}
