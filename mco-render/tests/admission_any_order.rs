//! Admission in any order: kubectl and GitOps tools create a folder's objects one request at a
//! time in whatever order they come, and each request is reviewed against what is stored so
//! far. Every example folder, and every real-content cluster that renders upstream, is
//! admitted object by object in any order; a folder holding a mistake has some object refused
//! in every order.

#[path = "support/corpus.rs"]
mod corpus;

use mco_render::admission::{review, ClusterView, Findings, Operation, ReviewOptions};
use mco_render::manifests::{documents, Manifests};
use mco_render::RenderOptions;
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

/// The objects of a folder of manifests, in file order.
fn folder(path: &str) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{e}"));
            documents(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
        })
        .collect()
}

/// A cluster storing exactly `objects`.
fn cluster(objects: &[Value]) -> ClusterView {
    let mut m = Manifests::default();
    let text = serde_json::to_string(objects).unwrap_or_else(|e| panic!("{e}"));
    m.add_file("stored.json", &text)
        .unwrap_or_else(|e| panic!("{e}"));
    ClusterView::new(m, RenderOptions::default())
}

fn name(v: &Value) -> String {
    format!(
        "{} {}",
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// Creates `objects` one by one in this order, each reviewed against those before it; the
/// first refusal (the object and its findings), if any.
fn apply(objects: &[Value]) -> Option<(String, Findings)> {
    for i in 0..objects.len() {
        let f = review(
            &objects[i],
            Operation::Create,
            None,
            &cluster(&objects[..i]),
            &ReviewOptions::default(),
        );
        if !f.allowed() {
            return Some((name(&objects[i]), f));
        }
    }
    None
}

fn order(objects: &[Value]) -> Vec<String> {
    objects.iter().map(name).collect()
}

const CONSISTENT: &[&str] = &[
    "examples/cluster",
    "examples/cluster-next",
    "examples/cluster-config",
    "examples/admission/cluster",
];

#[test]
fn every_example_folder_is_admitted_in_file_order_and_reversed() {
    for dir in CONSISTENT {
        let mut objects = folder(dir);
        if let Some((obj, f)) = apply(&objects) {
            panic!("{dir} in file order: {obj} refused: {:?}", f.errors);
        }
        objects.reverse();
        if let Some((obj, f)) = apply(&objects) {
            panic!("{dir} reversed: {obj} refused: {:?}", f.errors);
        }
    }
}

/// A pool that arrives before its configs is admitted with the warning that says why.
#[test]
fn the_example_pools_arrive_first_with_a_pending_warning() {
    let objects = folder("examples/cluster");
    let pools: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "MachineConfigPool")
        .collect();
    assert_eq!(pools.len(), 3);
    for p in pools {
        let f = review(
            p,
            Operation::Create,
            None,
            &cluster(&[]),
            &ReviewOptions::default(),
        );
        assert!(f.allowed(), "{f:?}");
        let pending: Vec<&str> = f
            .warnings
            .iter()
            .filter(|w| w.kind == mco_render::admission::FindingKind::Pending)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(pending.len(), 1, "{f:?}");
        assert!(
            pending[0].starts_with(&format!(
                "pool {}: no MachineConfigs found matching selector ",
                p["metadata"]["name"].as_str().unwrap_or("")
            )),
            "{}",
            pending[0]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_example_folder_is_admitted_in_any_order(
        (dir, objects) in prop::sample::select(CONSISTENT.to_vec())
            .prop_flat_map(|d| (Just(d), Just(folder(d)).prop_shuffle()))
    ) {
        if let Some((obj, f)) = apply(&objects) {
            prop_assert!(false, "{dir} in order {:?}: {obj} refused: {:?}", order(&objects), f.errors);
        }
    }

    /// `examples/invalid` added to the example cluster: the broken config is refused in
    /// every order (on its own content), and nothing else is.
    #[test]
    fn a_broken_config_is_refused_in_any_order(
        objects in Just([folder("examples/cluster"), folder("examples/invalid")].concat()).prop_shuffle()
    ) {
        let refused = apply(&objects);
        prop_assert!(refused.is_some(), "admitted in order {:?}", order(&objects));
        if let Some((obj, f)) = refused {
            prop_assert_eq!(obj, "MachineConfig 99-worker-broken");
            prop_assert!(f.errors.iter().all(|e| e.message.starts_with("99-worker-broken: ")), "{:?}", f.errors);
        }
    }
}

/// A deterministic shuffle (xorshift), so the real-content orders are the same every run.
fn shuffled(objects: &[Value], seed: u64) -> Vec<Value> {
    let mut v = objects.to_vec();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
    v
}

/// The real-content clusters (one case per platform and pool, from ../shared): each one that
/// renders upstream is admitted in file order, reversed and in a shuffle; each one that fails
/// upstream, or holds a MachineConfig invalid on its own, has an object refused in every one
/// of those orders.
#[test]
fn real_content_clusters_in_any_order() {
    let Some(dir) = corpus::corpus("real") else {
        eprintln!("SKIP: ../shared/conformance/real not present; real-content orders not checked");
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // The clusters themselves and the one-MC variants; chains are edits, not folders.
            n.ends_with(".json.gz") && !n.contains("-chain-")
        })
        .collect();
    files.sort();
    let (mut admitted, mut refused) = (0, 0);
    for f in &files {
        let case = corpus::load(f);
        let case_name = case["name"].as_str().unwrap_or("").to_string();
        let mut objects = vec![case["pool"].clone()];
        objects.extend(
            case["machineConfigs"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        // Refused in every order: a cluster upstream fails to render, or one holding a
        // MachineConfig invalid on its own (even one no pool of the case selects).
        let invalid_alone: Vec<String> = objects
            .iter()
            .filter(|o| o["kind"] == "MachineConfig" && apply(std::slice::from_ref(o)).is_some())
            .map(name)
            .collect();
        let fails_upstream = !case["expected"]["error"].is_null() || !invalid_alone.is_empty();
        let mut orders = vec![objects.clone(), objects.iter().rev().cloned().collect()];
        orders.push(shuffled(&objects, case_name.len() as u64));
        for o in &orders {
            match (apply(o), fails_upstream) {
                (None, false) => {}
                (Some((obj, f)), false) => {
                    panic!(
                        "{case_name}: {obj} refused in order {:?}: {:?}",
                        order(o),
                        f.errors
                    )
                }
                (Some((obj, _)), true) => {
                    assert!(
                        invalid_alone.is_empty() || invalid_alone.contains(&obj),
                        "{case_name}: {obj} refused, not one of {invalid_alone:?}"
                    );
                }
                (None, true) => panic!(
                    "{case_name} fails upstream ({}) but every object was admitted in order {:?}",
                    case["expected"]["error"],
                    order(o)
                ),
            }
        }
        if fails_upstream {
            refused += 1;
        } else {
            admitted += 1;
        }
    }
    eprintln!("real content: {admitted} clusters admitted in 3 orders each, {refused} refused in every order");
    assert!(admitted > 0);
}
