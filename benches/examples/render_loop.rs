//! Runs only the render (or only the baseline) many times, for sampling profilers.
//!
//! `cargo run --release -p mco-benches --example render_loop -- MACHINECONFIGS FILES N [baseline]`
//! then, for example, `perf record -e cpu-clock target/release/examples/render_loop 50 1000 500`.

use mco_benches::{baseline, generate, render_bytes, Variant};
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (mcs, files, rounds) = (num(0, 50), num(1, 1_000), num(2, 200));
    let only_baseline = args.get(3).is_some_and(|a| a == "baseline");
    let bytes = generate(mcs, files, Variant::Base).to_json_bytes();
    for _ in 0..rounds {
        if only_baseline {
            black_box(baseline(&bytes));
        } else if let Err(e) = render_bytes(&bytes) {
            eprintln!("render failed: {e}");
            return;
        }
    }
}
