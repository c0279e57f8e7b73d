//! Allocation counts and best-of-N wall time of a render against the baseline, for profiling.
//!
//! `cargo run --release -p mco-benches --example alloc_count -- [MACHINECONFIGS FILES [ROUNDS]]`
//! (50 / 1,000 and 20 rounds by default). Prints, for the baseline (parse into
//! `serde_json::Value` and write back) and for the render (decode, select, validate, merge,
//! name), the number of heap allocations, the bytes they asked for and the fastest of ROUNDS
//! runs, interleaved so that both see the same machine load. Under
//! `valgrind --tool=callgrind --toggle-collect=mco_benches::render_bytes` it profiles one render.

use mco_benches::{baseline, decode, generate, options, render_bytes, Variant};
use mco_render::render::render_pool_owned;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Counting;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

// A global allocator is an `unsafe` trait: this is one of the workspace's few allowed unsafe
// places (with the other example's counter and the daemon's kill(2)).
// SAFETY: every call forwards to the system allocator unchanged; the counters only observe.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn counted<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let (c, b) = (COUNT.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    let out = f();
    (
        out,
        COUNT.load(Ordering::Relaxed) - c,
        BYTES.load(Ordering::Relaxed) - b,
    )
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (mcs, files, rounds) = match args.as_slice() {
        [m, f] => (*m, *f, 20),
        [m, f, r, ..] => (*m, *f, *r),
        _ => (50, 1_000, 20),
    };
    let bytes = generate(mcs, files, Variant::Base).to_json_bytes();
    let (_, bc, bb) = counted(|| black_box(baseline(&bytes)));
    let (r, rc, rb) =
        counted(|| black_box(render_bytes(&bytes).map(|r| r.machine_config.metadata.name)));
    if let Err(e) = r {
        eprintln!("render failed: {e}");
    }
    let (cluster, dc, db) = counted(|| decode(&bytes));
    let (pool_c, pool_b) = match cluster {
        Ok(c) => {
            let (_, c2, b2) = counted(|| {
                black_box(
                    render_pool_owned(&c.pool, c.machine_configs, &c.controller, &options())
                        .is_ok(),
                )
            });
            (c2, b2)
        }
        Err(_) => (0, 0),
    };
    let (mut best_b, mut best_r) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        black_box(baseline(&bytes));
        best_b = best_b.min(t.elapsed());
        let t = Instant::now();
        let _ = black_box(render_bytes(&bytes));
        best_r = best_r.min(t.elapsed());
    }
    println!(
        "input {} bytes, {mcs} MachineConfigs, {files} files",
        bytes.len()
    );
    println!("baseline: {bc} allocations, {bb} bytes, best {best_b:?}");
    println!("render:   {rc} allocations, {rb} bytes, best {best_r:?}");
    println!("  decode: {dc} allocations, {db} bytes; render_pool_owned (with drops): {pool_c} allocations, {pool_b} bytes");
    if rounds > 0 {
        println!(
            "ratio: {:.2}x allocations, {:.2}x time",
            rc as f64 / bc.max(1) as f64,
            best_r.as_secs_f64() / best_b.as_secs_f64()
        );
    }
}
