//! The host side of the pinned image manager, on a temporary root with a recording host.

use super::*;
use crate::host::RecordingHost;
use mco_render::api::{PinnedImageRef, PinnedImageSetRef};

fn image(name: &str, c: char) -> String {
    format!(
        "quay.io/openshift-release-dev/{name}@sha256:{}",
        std::iter::repeat_n(c, 64).collect::<String>()
    )
}

fn set(name: &str, images: &[String]) -> PinnedImageSet {
    let mut s = PinnedImageSet::default();
    s.metadata.name = name.into();
    s.metadata.generation = Some(1);
    s.spec.pinned_images = images
        .iter()
        .map(|i| PinnedImageRef { name: i.clone() })
        .collect();
    s
}

fn pool(sets: &[&str]) -> MachineConfigPool {
    let mut p = MachineConfigPool::default();
    p.metadata.name = "worker".into();
    p.spec.pinned_image_sets = sets
        .iter()
        .map(|s| PinnedImageSetRef {
            name: s.to_string(),
        })
        .collect();
    p
}

fn node(storage: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = "w1".into();
    n.status
        .allocatable
        .insert("ephemeral-storage".into(), storage.into());
    n
}

fn opts() -> PinnedOptions {
    PinnedOptions {
        pull_delays: vec![Duration::ZERO; 4],
        ..PinnedOptions::new("w1")
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: HostRoot,
    host: RecordingHost,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = HostRoot::new(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    Fixture {
        _dir: dir,
        root,
        host: RecordingHost::new(),
    }
}

fn drop_in(root: &HostRoot) -> Option<String> {
    match root.entry(CRIO_PINNED_IMAGES_PATH) {
        Ok(Entry::File { data, .. }) => Some(String::from_utf8_lossy(&data).into_owned()),
        _ => None,
    }
}

fn pulls(host: &RecordingHost) -> Vec<&String> {
    host.calls
        .iter()
        .filter(|c| c.starts_with("crictl pull"))
        .collect()
}

#[test]
fn missing_images_are_pulled_pinned_and_crio_reloaded_once() {
    let mut f = fixture();
    let (a, b) = (image("a", 'a'), image("b", 'b'));
    f.host.cri.held.insert(a.clone());
    f.host.cri.registry.insert(b.clone(), 1 << 30);
    let sets = vec![set("release", &[b.clone(), a.clone()])];
    let p = pool(&["release"]);
    let mut slept = Vec::new();
    let r = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |d| slept.push(d),
    );
    assert_eq!(
        r,
        Ok(PinReport {
            pulled: vec![b.clone()],
            pinned: vec![a.clone(), b.clone()],
            reloaded: true
        })
    );
    assert!(slept.is_empty());
    let text = drop_in(&f.root).unwrap_or_default();
    assert_eq!(
        text,
        format!("[crio]\n  [crio.image]\n    pinned_images = [\"{a}\", \"{b}\"]\n")
    );
    assert_eq!(
        f.host.calls,
        [
            "crictl images -o json".to_string(),
            format!("podman manifest --log-level error inspect --authfile /var/lib/kubelet/config.json {b}"),
            format!("crictl pull {b}"),
            "crictl images -o json".to_string(),
            "systemctl reload crio".to_string(),
        ]
    );
    // Again: everything is there, the drop-in says so; nothing is pulled or reloaded.
    f.host.calls.clear();
    let again = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |_| {},
    );
    assert_eq!(again.map(|r| (r.pulled.len(), r.reloaded)), Ok((0, false)));
    assert!(!f
        .host
        .calls
        .iter()
        .any(|c| c.starts_with("systemctl") || c.starts_with("crictl pull")));
}

#[test]
fn a_full_disk_pulls_nothing_and_fails_with_upstreams_error() {
    let mut f = fixture();
    let big = image("big", 'c');
    // 20Gi allocatable, 16Gi kept free: a 3Gi image needs 6Gi once decompressed.
    f.host.cri.registry.insert(big.clone(), 3 << 30);
    let sets = vec![set("release", std::slice::from_ref(&big))];
    let p = pool(&["release"]);
    let r = pin(
        &mut f.host,
        &f.root,
        &node("20Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |_| {},
    );
    assert_eq!(
        r,
        Err("storage available is less than minimum required".to_string())
    );
    assert!(pulls(&f.host).is_empty());
    assert_eq!(drop_in(&f.root), None);
    // Below the minimum at all: upstream's message names both figures.
    let r = pin(
        &mut f.host,
        &f.root,
        &node("10Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |_| {},
    );
    assert_eq!(
        r,
        Err(format!(
            "storage available is less than minimum required capacity: {}, required: {}",
            10i64 << 30,
            16i64 << 30
        ))
    );
}

#[test]
fn pulls_are_retried_and_a_full_disk_stops_them() {
    let mut f = fixture();
    let (flaky, full) = (image("flaky", 'd'), image("full", 'e'));
    f.host
        .cri
        .pull_failures
        .insert(flaky.clone(), "connection refused".into());
    let sets = vec![set("s", std::slice::from_ref(&flaky))];
    let p = pool(&["s"]);
    let mut slept = Vec::new();
    let r = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |d| slept.push(d),
    );
    assert_eq!(
        r,
        Err(format!(
            "failed to pull image {flaky:?} (5 tries): timed out waiting for the condition: connection refused"
        ))
    );
    assert_eq!(pulls(&f.host).len(), 5);
    assert_eq!(slept.len(), 4);
    assert_eq!(
        PinnedOptions::new("w1").pull_delays,
        [1, 2, 4, 8].map(Duration::from_secs)
    );
    f.host.calls.clear();
    f.host.cri.pull_failures.insert(
        full.clone(),
        "write /var/lib/containers: no space left on device".into(),
    );
    let sets = vec![set("s", std::slice::from_ref(&full))];
    let r = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &sets,
        &opts(),
        &mut |_| {},
    );
    assert!(r.is_err_and(|e| e.contains("(1 tries)")));
    assert_eq!(pulls(&f.host).len(), 1);
    assert_eq!(drop_in(&f.root), None);
}

#[test]
fn nothing_left_to_pin_removes_the_drop_in_and_reloads() {
    let mut f = fixture();
    let mut dirty = BTreeSet::new();
    f.root
        .write_atomic(
            CRIO_PINNED_IMAGES_PATH,
            b"[crio]\n",
            0o644,
            None,
            0o755,
            false,
            &mut dirty,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let p = pool(&[]);
    let r = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &[],
        &opts(),
        &mut |_| {},
    );
    assert_eq!(r.map(|r| r.reloaded), Ok(true));
    assert_eq!(drop_in(&f.root), None);
    assert_eq!(
        f.host.calls.last().map(String::as_str),
        Some("systemctl reload crio")
    );
}

#[test]
fn a_missing_set_or_a_not_ready_node_fails_before_any_pull() {
    let mut f = fixture();
    let p = pool(&["gone"]);
    let r = pin(
        &mut f.host,
        &f.root,
        &node("100Gi"),
        &[&p],
        &[],
        &opts(),
        &mut |_| {},
    );
    assert!(r.is_err_and(|e| e.starts_with("failed to get PinnedImageSet \"gone\"")));
    let sets = vec![set("s", &[image("x", 'f')])];
    let p = pool(&["s"]);
    let mut n = node("100Gi");
    n.status
        .conditions
        .push(mco_render::api::node::NodeCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..Default::default()
        });
    let r = pin(&mut f.host, &f.root, &n, &[&p], &sets, &opts(), &mut |_| {});
    assert_eq!(r, Err("node w1 is reporting NotReady=False".to_string()));
    assert!(pulls(&f.host).is_empty());
}

#[test]
fn the_inputs_key_follows_generations_and_references() {
    let sets = vec![set("s", &[image("x", 'f')])];
    let p = pool(&["s"]);
    let k1 = inputs_key(&[&p], &sets);
    let mut bumped = sets.clone();
    bumped[0].metadata.generation = Some(2);
    assert_ne!(k1, inputs_key(&[&p], &bumped));
    assert_ne!(k1, inputs_key(&[&pool(&[])], &sets));
    assert_eq!(k1, inputs_key(&[&p], &sets));
}
