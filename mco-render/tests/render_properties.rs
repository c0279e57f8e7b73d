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

/// `v` with the keys of every object in an order chosen by `seed` (JSON objects keep their
/// insertion order here).
fn reorder_keys(v: &Value, seed: &mut u64) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            for i in (1..entries.len()).rev() {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                entries.swap(i, (*seed % (i as u64 + 1)) as usize);
            }
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), reorder_keys(v, seed)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| reorder_keys(v, seed)).collect()),
        other => other.clone(),
    }
}

fn shuffled<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
    let mut out = items.to_vec();
    let mut x = seed | 1;
    for i in (1..out.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.swap(i, (x % (i as u64 + 1)) as usize);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The rendered name depends on the MachineConfigs, not on the order of the keys of the
    /// JSON they were read from (Ignition configs, metadata, everything).
    #[test]
    fn key_order_of_the_input_does_not_matter(case in 0usize..CASES.len(), seed in any::<u64>()) {
        let (pool, mcs, cc) = load(CASES[case]);
        let opts = RenderOptions::default();
        let base = render_pool(&pool, &mcs, &cc, &opts);
        let mut x = seed | 1;
        let again: Vec<MachineConfig> = mcs
            .iter()
            .map(|mc| {
                let v = serde_json::to_value(mc).expect("serialises");
                serde_json::from_value(reorder_keys(&v, &mut x)).expect("reads back")
            })
            .collect();
        let again = render_pool(&pool, &again, &cc, &opts);
        match (base, again) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.machine_config.metadata.name, &b.machine_config.metadata.name);
                prop_assert_eq!(serde_json::to_string(&a.spec()).ok(), serde_json::to_string(&b.spec()).ok());
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "one rendered, the other failed: {:?} / {:?}", a.is_ok(), b.is_ok()),
        }
    }

    /// MachineConfigs sharing a name (two files of a manifests folder can hold them; the API
    /// server cannot) render to the same name whatever their order.
    #[test]
    fn order_of_machine_configs_with_equal_names_does_not_matter(
        case in 0usize..CASES.len(),
        pick in any::<prop::sample::Index>(),
        from in any::<prop::sample::Index>(),
        seed in any::<u64>(),
    ) {
        let (pool, mut mcs, cc) = load(CASES[case]);
        let opts = RenderOptions::default();
        // A copy of one MachineConfig under the name of another: two configs, one name.
        let mut twin = mcs[from.index(mcs.len())].clone();
        twin.metadata.name = mcs[pick.index(mcs.len())].metadata.name.clone();
        mcs.push(twin);
        let base = render_pool(&pool, &mcs, &cc, &opts);
        let again = render_pool(&pool, &shuffled(&mcs, seed), &cc, &opts);
        match (base, again) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.machine_config.metadata.name, &b.machine_config.metadata.name);
                prop_assert_eq!(serde_json::to_string(&a.spec()).ok(), serde_json::to_string(&b.spec()).ok());
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "one order rendered, the other failed: {:?} / {:?}", a.is_ok(), b.is_ok()),
        }
    }
}
