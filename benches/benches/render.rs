//! Rendering benchmarks against a serde_json baseline on the same bytes.
//!
//! Groups: `baseline` (parse into `serde_json::Value`, serialise back), `parse_validate` (decode
//! the manifests and validate every MachineConfig), `render` (decode, select, validate, merge,
//! name: the pipeline upstream was measured on), `render_pool` (the same without decoding the
//! manifests), `serve` (the served config for each spec version that converts), `plan` (diff and
//! plan between two renders).

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mco_benches::{
    baseline, decode, generate, options, render_bytes, rendered_input, Variant, SIZES,
};
use mco_ignition::SpecVersion;
use mco_render::render::{render_pool, validate_machine_config};
use mco_render::{plan, serve};
use std::hint::black_box;
use std::time::Duration;

fn tune(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, files: usize) {
    if files >= 10_000 {
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(20));
    } else {
        group.sample_size(20);
        group.measurement_time(Duration::from_secs(5));
    }
}

fn pipeline(c: &mut Criterion) {
    for (mcs, files) in SIZES {
        let w = generate(mcs, files, Variant::Base);
        let bytes = w.to_json_bytes();
        let label = w.label();
        let cluster = match decode(&bytes) {
            Ok(c) => c,
            Err(e) => panic!("workload {label} does not decode: {e}"),
        };

        let mut g = c.benchmark_group("baseline");
        tune(&mut g, files);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(&label), &bytes, |b, bytes| {
            b.iter(|| black_box(baseline(bytes)))
        });
        g.finish();

        let mut g = c.benchmark_group("parse_validate");
        tune(&mut g, files);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(&label), &bytes, |b, bytes| {
            b.iter(|| {
                let c = decode(bytes).map_err(|e| e.to_string());
                let ok = c.map(|c| {
                    c.machine_configs
                        .iter()
                        .filter(|mc| validate_machine_config(mc).is_ok())
                        .count()
                });
                black_box(ok)
            })
        });
        g.finish();

        let mut g = c.benchmark_group("render");
        tune(&mut g, files);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(&label), &bytes, |b, bytes| {
            b.iter(|| black_box(render_bytes(bytes).map(|r| r.machine_config.metadata.name)))
        });
        g.finish();

        let mut g = c.benchmark_group("render_pool");
        tune(&mut g, files);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| {
                let r = render_pool(
                    &cluster.pool,
                    &cluster.machine_configs,
                    &cluster.controller,
                    &options(),
                );
                black_box(
                    r.map(|r| r.machine_config.metadata.name)
                        .map_err(|e| e.to_string()),
                )
            })
        });
        g.finish();

        let rendered = match render_bytes(&bytes) {
            Ok(r) => r,
            Err(e) => panic!("workload {label} does not render: {e}"),
        };
        let served_input = rendered.ignition().clone();
        let mut g = c.benchmark_group("serve");
        tune(&mut g, files);
        for v in SpecVersion::ALL {
            if serve::convert(&served_input, v).is_err() {
                eprintln!("serve: skipping spec {v} (conversion not available on this build)");
                continue;
            }
            g.bench_with_input(
                BenchmarkId::new(format!("{v}"), &label),
                &served_input,
                |b, input| b.iter(|| black_box(serve::convert(input, v).map(|v| v.is_object()))),
            );
        }
        g.finish();

        let updated = generate(mcs, files, Variant::Updated).to_json_bytes();
        let new = match render_bytes(&updated) {
            Ok(r) => r,
            Err(e) => panic!("updated workload {label} does not render: {e}"),
        };
        let (old_in, new_in) = match (rendered_input(&rendered), rendered_input(&new)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => panic!("rendered config of {label} is not typed: {e}"),
        };
        let mut g = c.benchmark_group("plan");
        tune(&mut g, files);
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| black_box(plan::compute(&old_in, &new_in, None).legacy_action))
        });
        g.finish();
    }
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
