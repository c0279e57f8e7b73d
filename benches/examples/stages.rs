//! Times each stage of a render once, to find hot spots quickly.
//!
//! `cargo run --release -p mco-benches --example stages -- MACHINECONFIGS FILES [REPEAT]`
//! (REPEAT runs the validation stage that many times, for profiling).

use mco_benches::{baseline, decode, generate, options, Variant};
use mco_render::render::{render_pool_owned, validate_machine_config};
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (mcs, files, repeat) = match args.as_slice() {
        [m, f] => (*m, *f, 1),
        [m, f, r, ..] => (*m, *f, (*r).max(1)),
        _ => (50, 1_000, 1),
    };
    let bytes = generate(mcs, files, Variant::Base).to_json_bytes();
    println!("input: {} bytes", bytes.len());
    let t = Instant::now();
    let n = baseline(&bytes);
    println!("baseline: {:?} ({n} bytes out)", t.elapsed());
    let t = Instant::now();
    let cluster = match decode(&bytes) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    println!("decode manifests: {:?}", t.elapsed());
    let t = Instant::now();
    let mut ok = 0;
    for _ in 0..repeat {
        ok = cluster
            .machine_configs
            .iter()
            .filter(|m| validate_machine_config(m).is_ok())
            .count();
    }
    println!(
        "validate {ok} MachineConfigs: {:?}",
        t.elapsed() / repeat as u32
    );
    let t = Instant::now();
    let r = render_pool_owned(
        &cluster.pool,
        cluster.machine_configs,
        &cluster.controller,
        &options(),
    );
    println!("render_pool_owned: {:?}", t.elapsed());
    match r {
        Ok(r) => println!("rendered {}", r.machine_config.metadata.name),
        Err(e) => println!("render failed: {e}"),
    }
}
