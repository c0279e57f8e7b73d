//! The node agent's drift check (`mco_node::drift::check`): what an idle agent runs on every
//! sync and on every inotify wake-up, against a host root holding the rendered config.
//!
//! Groups: `drift_check` (the whole check: every file read, decoded and compared, for pools
//! of 100 and 1,000 files).

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mco_benches::{generate, render_bytes, Variant};
use mco_node::apply::{run_update, ApplyOptions, RebootMode};
use mco_node::{drift, DesiredConfig, HostRoot, NodeState, RecordingHost};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [(usize, usize); 2] = [(50, 100), (50, 1_000)];

fn bench(c: &mut Criterion) {
    for (mcs, files) in SIZES {
        let w = generate(mcs, files, Variant::Base);
        let label = w.label();
        let rendered = match render_bytes(&w.to_json_bytes()) {
            Ok(r) => r,
            Err(e) => panic!("{label}: {e}"),
        };
        let bytes = serde_json::to_vec(&rendered.machine_config).unwrap_or_default();
        let config = match DesiredConfig::from_bytes(&bytes, &label) {
            Ok(c) => c,
            Err(e) => panic!("{label}: {e}"),
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(&etc).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            etc.join("passwd"),
            "root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(etc.join("group"), "root:x:0:\ncore:x:1000:\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let opts = ApplyOptions {
            check_drift: false,
            reboot: RebootMode::Skip,
            drained: true,
            policies: None,
        };
        let out = run_update(
            &root,
            &mut RecordingHost::new(),
            &DesiredConfig::empty(),
            &config,
            opts,
            None,
        );
        assert_eq!(
            out.status.state,
            NodeState::Done,
            "{label}: {:?}",
            out.status
        );
        let found = drift::check(&root, &config.input.config);
        assert!(found.is_empty(), "{label}: {found:?}");

        let mut g = c.benchmark_group("drift_check");
        g.sample_size(20).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter(|| black_box(drift::check(&root, &config.input.config)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
