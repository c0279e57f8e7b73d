//! Rendering is deterministic and does not depend on the order in which inputs are given.

use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::{render_pool, RenderOptions};
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

fn load(name: &str) -> (MachineConfigPool, Vec<MachineConfig>, ControllerConfigSpec) {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/conformance/{name}.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).expect("case")).expect("JSON");
    (
        serde_json::from_value(v["pool"].clone()).expect("pool"),
        serde_json::from_value(v["machineConfigs"].clone()).expect("mcs"),
        serde_json::from_value(v["controllerConfig"].clone()).expect("cc"),
    )
}

const CASES: [&str; 3] = [
    "c0006-infra-37mc-mix",
    "c0083-worker-40mc-mix",
    "c0007-rt-17mc-mix",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn input_order_does_not_matter(case in 0usize..CASES.len(), seed in any::<u64>()) {
        let (pool, mcs, cc) = load(CASES[case]);
        let opts = RenderOptions::default();
        let base = render_pool(&pool, &mcs, &cc, &opts);
        let mut shuffled = mcs.clone();
        // Fisher-Yates with a seeded xorshift: a permutation chosen by proptest.
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let again = render_pool(&pool, &shuffled, &cc, &opts);
        match (base, again) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.machine_config.metadata.name, &b.machine_config.metadata.name);
                prop_assert_eq!(serde_json::to_string(&a.spec()).ok(), serde_json::to_string(&b.spec()).ok());
                prop_assert_eq!(a.source, b.source);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "one order rendered, the other failed: {:?} / {:?}", a.is_ok(), b.is_ok()),
        }
    }
}

#[test]
fn rendering_twice_gives_the_same_bytes() {
    for name in CASES {
        let (pool, mcs, cc) = load(name);
        let a = render_pool(&pool, &mcs, &cc, &RenderOptions::default()).expect("renders");
        let b = render_pool(&pool, &mcs, &cc, &RenderOptions::default()).expect("renders");
        assert_eq!(
            serde_json::to_vec(&a.machine_config).ok(),
            serde_json::to_vec(&b.machine_config).ok()
        );
    }
}
