//! The admission webhook's review: one MachineConfig of a pool of 50 updated (a changed file,
//! a second kernel argument), rendered against the rest and planned.
//!
//! Groups: `admission_review` (the pure [`review`] with the pool's current render already
//! computed, as between two cluster changes), `admission_handle` (the same through the
//! AdmissionReview JSON: decode the request, review, encode the response: what the HTTPS
//! handler runs), `admission_cold` (the first review after a cluster change: the view's
//! current render included).

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mco_benches::{generate, options, Variant};
use mco_render::admission::v1::handle;
use mco_render::admission::{review, ClusterView, Operation, ReviewOptions};
use mco_render::manifests::Manifests;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;

/// Pools of 50 MachineConfigs: 2 files each, and 20 each.
const SIZES: [(usize, usize); 2] = [(50, 100), (50, 1_000)];

fn view(bytes: &[u8]) -> ClusterView {
    let mut m = Manifests::default();
    if let Err(e) = m.add_file("workload", std::str::from_utf8(bytes).unwrap_or("")) {
        panic!("workload does not decode: {e}");
    }
    ClusterView::new(m, options())
}

fn bench(c: &mut Criterion) {
    for (mcs, files) in SIZES {
        let base = generate(mcs, files, Variant::Base);
        let updated = generate(mcs, files, Variant::Updated);
        let label = base.label();
        let bytes = base.to_json_bytes();
        let cluster = view(&bytes);
        cluster.warm();
        let i = mcs / 2;
        let old: Value = base.configs[i].clone();
        let new: Value = updated.configs[i].clone();
        let opts = ReviewOptions::default();
        let findings = review(&new, Operation::Update, Some(&old), &cluster, &opts);
        assert!(findings.allowed(), "{label}: {findings:?}");
        assert_eq!(findings.warnings.len(), 1, "{label}: {findings:?}");

        let mut g = c.benchmark_group("admission_review");
        g.sample_size(30).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| black_box(review(&new, Operation::Update, Some(&old), &cluster, &opts)))
        });
        g.finish();

        let body = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "bench",
                "kind": {"group": "machineconfiguration.openshift.io", "version": "v1", "kind": "MachineConfig"},
                "operation": "UPDATE",
                "object": new,
                "oldObject": old,
            }
        }))
        .unwrap_or_default();
        let mut g = c.benchmark_group("admission_handle");
        g.sample_size(30).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| black_box(handle(&body, &cluster, &opts).map(|v| v.len())))
        });
        g.finish();

        let mut g = c.benchmark_group("admission_cold");
        g.sample_size(20).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| {
                let cluster = view(&bytes);
                black_box(review(&new, Operation::Update, Some(&old), &cluster, &opts))
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
