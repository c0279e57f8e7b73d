//! Peak heap use of a render against the input size, with a counting global allocator.
//!
//! `cargo run --release -p mco-benches --example peak_memory -- [MACHINECONFIGS FILES]`
//! (all three issue sizes without arguments). Prints, per workload, the input size and the peak
//! heap held above it while rendering (decode, select, validate, merge, name) and while the
//! baseline parses into `serde_json::Value` and serialises back.

use mco_benches::{baseline, decode, generate, render_bytes, Variant, SIZES};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// A global allocator is an `unsafe` trait: this is one of the workspace's few allowed unsafe
// places (with the other example's counter and the daemon's kill(2)).
// SAFETY: every call forwards to the system allocator unchanged; the counters only observe.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grow(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`, returning its result and the peak heap held above what was live before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

fn mb(n: usize) -> f64 {
    n as f64 / 1_000_000.0
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes: Vec<(usize, usize)> = match args.as_slice() {
        [m, f] => vec![(*m, *f)],
        _ => SIZES.to_vec(),
    };
    println!("| workload | input | decode peak | render peak | ratio | render time | baseline peak | ratio |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (mcs, files) in sizes {
        let w = generate(mcs, files, Variant::Base);
        let bytes = w.to_json_bytes();
        drop(w);
        let (decoded, decode_peak) = peak_of(|| decode(&bytes).map(|c| c.machine_configs.len()));
        drop(decoded);
        let start = Instant::now();
        let (rendered, peak) = peak_of(|| render_bytes(&bytes));
        let took = start.elapsed();
        if let Err(e) = &rendered {
            eprintln!("render failed: {e}");
            std::process::exit(1);
        }
        drop(rendered);
        let (_, base_peak) = peak_of(|| baseline(&bytes));
        let n = bytes.len();
        println!(
            "| {mcs} MCs / {files} files | {:.2} MB | {:.2} MB | {:.2} MB | {:.2}x | {:.1} ms | {:.2} MB | {:.2}x |",
            mb(n),
            mb(decode_peak),
            mb(peak),
            peak as f64 / n as f64,
            took.as_secs_f64() * 1e3,
            mb(base_peak),
            base_peak as f64 / n as f64,
        );
    }
}
