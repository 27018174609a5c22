//! Compile-cache lookup latency: memo hit, disk hit, key hashing, and the
//! directory scan that eviction and `trident cache stats` do. Artifacts are
//! sized like a tensor-core matmul's (ttir 20 KiB, ttgir 40 KiB, PTX 200 KiB,
//! cubin 100 KiB; source 20 KiB). Numbers are recorded in the crate README.

use std::fs;
use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use trident_runtime::cache::{BuildInfo, Cache, CacheKey, EntryData, FileStamp, MemoKey};
use trident_runtime::rng::SplitMix64;

fn text(rng: &mut SplitMix64, n: usize) -> String {
    (0..n).map(|_| (b' ' + rng.next_below(95) as u8) as char).collect()
}

fn data(rng: &mut SplitMix64) -> EntryData {
    EntryData {
        ttir: Some(text(rng, 20 << 10)),
        ttgir: Some(text(rng, 40 << 10)),
        ptx: Some(text(rng, 200 << 10)),
        cubin: Some((0..100 << 10).map(|_| rng.next_u64() as u8).collect()),
        extra: vec![],
        info: BuildInfo { num_warps: 4, num_stages: 3, ..BuildInfo::default() },
    }
}

fn key(source: &str, block: u32) -> CacheKey {
    CacheKey::new("matmul_kernel", "sm_80")
        .source("kernels/matmul.py", source)
        .arg("*fp16:16")
        .arg("*fp16:16")
        .arg("*fp16:16")
        .arg("i32")
        .arg("i32")
        .arg("i32")
        .constexpr("BLOCK_M", block)
        .constexpr("BLOCK_N", 128)
        .constexpr("BLOCK_K", 32)
        .option("num_warps", 4)
        .option("num_stages", 3)
}

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("trident-cache-bench-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn lookups(c: &mut Criterion) {
    let d = dir("lookup");
    let mut rng = SplitMix64::new(7);
    let source = text(&mut rng, 20 << 10);
    let src_path = d.0.join("matmul.py");
    fs::write(&src_path, &source).unwrap();
    let cache = Cache::open(d.0.join("cache"), 1 << 30).unwrap();
    let entry = data(&mut rng);
    let k = key(&source, 128);
    cache.get_or_build(&k, || Ok::<_, ()>(entry.clone())).unwrap();
    let spec = "sm_80 (*fp16:16, *fp16:16, *fp16:16, i32, i32, i32) BLOCK_M=128 BLOCK_N=128 BLOCK_K=32 w4 s3";
    let memo = MemoKey::new("matmul_kernel", spec).files([&src_path]).unwrap();
    let never = |_: &CacheKey| -> Result<EntryData, ()> { unreachable!() };
    cache.get_or_build_memo(&memo, || Ok(k.clone()), never).unwrap();

    let mut g = c.benchmark_group("cache");
    g.bench_function("memo_hit", |b| {
        b.iter(|| cache.get_or_build_memo(black_box(&memo), || unreachable!(), never).unwrap())
    });
    g.bench_function("memo_hit_with_stat", |b| {
        b.iter(|| {
            let m = MemoKey::new("matmul_kernel", spec).file(FileStamp::of(&src_path).unwrap());
            cache.get_or_build_memo(&m, || unreachable!(), never).unwrap()
        })
    });
    g.bench_function("key_hash_20KiB_source", |b| b.iter(|| black_box(&k).id()));
    g.bench_function("disk_hit_360KiB", |b| b.iter(|| cache.get(black_box(&k)).unwrap()));
    g.finish();
}

fn scans(c: &mut Criterion) {
    let d = dir("scan");
    let mut rng = SplitMix64::new(8);
    let cache = Cache::open(&d.0, 1 << 40).unwrap();
    let small = EntryData { ptx: Some(text(&mut rng, 1024)), cubin: Some(vec![1; 512]), ..EntryData::default() };
    for i in 0..1000 {
        cache.insert(&key("src", i), small.clone());
    }
    let mut g = c.benchmark_group("cache");
    g.sample_size(20);
    g.bench_function("scan_1000_entries", |b| b.iter(|| cache.stats()));
    g.finish();
}

criterion_group!(benches, lookups, scans);
criterion_main!(benches);
