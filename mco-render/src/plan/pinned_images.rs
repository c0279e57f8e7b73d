//! PinnedImageSets on a node: which images its pools pin, which of them the container runtime
//! lacks, whether the disk has room for them, CRI-O's `pinned_images` drop-in, and what the
//! node's MachineConfigNode reports. The decisions of upstream's `pkg/daemon/pinned_image_set.go`
//! (`PinnedImageSetManager`), without its I/O: the agent (`mco-node`'s
//! `agent::pinned_images`) lists the runtime's images, pulls, writes and reloads.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::api::condition::Condition;
use crate::api::machine_config_node::{conditions, PinnedImageSetGenerations};
use crate::api::node::Node;
use crate::api::{MachineConfigPool, PinnedImageSet};
use crate::gocompat::quantity::Quantity;
use crate::gocompat::toml::{Table, Value};

/// CRI-O's drop-in listing the pinned images.
pub const CRIO_PINNED_IMAGES_PATH: &str = "/etc/crio/crio.conf.d/50-pinned-images";
/// The unit reloaded after the drop-in changes.
pub const CRIO_SERVICE: &str = "crio";
/// The disk that must stay free after the images are pulled (upstream's
/// `MinFreeStorageAfterPrefetch`, `16Gi`).
pub const MIN_FREE_STORAGE_AFTER_PREFETCH: i64 = 16 * 1024 * 1024 * 1024;
/// The pull secret the image sizes are read with (the kubelet's, as upstream).
pub const KUBELET_AUTH_FILE: &str = "/var/lib/kubelet/config.json";
/// How many times an image pull is tried (upstream's backoff: 5 steps).
pub const PULL_ATTEMPTS: u32 = 5;

/// Reason and message of the conditions upstream writes.
const PREFETCH_REASON: &str = "ImagePrefetch";
const AS_EXPECTED: &str = "AsExpected";
const PREFETCH_FAILED: &str = "PrefetchFailed";
const COMPLETE_MESSAGE: &str = "All pinned image sets complete";
const ALL_GOOD: &str = "All is good";
const FAILED_MESSAGE: &str =
    "One or more PinnedImageSet is experiencing an error. See PinnedImageSet list for more details.";

/// Why the node's PinnedImageSets cannot be pulled and pinned, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// A pool names a PinnedImageSet that does not exist.
    #[error("failed to get PinnedImageSet {name:?}: pinnedimageset.machineconfiguration.openshift.io {name:?} not found")]
    SetNotFound {
        /// The set's name.
        name: String,
    },
    /// The node is not Ready, or reports disk pressure.
    #[error("{0}")]
    NodeNotReady(String),
    /// The Node has no `status.allocatable.ephemeral-storage`.
    #[error("node {0:?} has no ephemeral storage capacity")]
    NoStorageCapacity(String),
    /// The Node's `ephemeral-storage` is not a quantity.
    #[error("node {node:?}: status.allocatable.ephemeral-storage {value:?}: {message}")]
    BadStorageCapacity {
        /// The node.
        node: String,
        /// The value.
        value: String,
        /// Why it does not parse.
        message: String,
    },
    /// The disk is smaller than the space that must stay free.
    #[error("storage available is less than minimum required capacity: {capacity}, required: {required}")]
    BelowMinimum {
        /// Allocatable ephemeral storage, bytes.
        capacity: i64,
        /// The minimum, bytes.
        required: i64,
    },
    /// The images would leave less than the minimum free.
    #[error("storage available is less than minimum required")]
    InsufficientStorage {
        /// Allocatable ephemeral storage, bytes.
        capacity: i64,
        /// Bytes the missing images need (twice their compressed size) plus the minimum.
        required: i64,
    },
    /// A pulled image is not in the runtime when the drop-in is about to be written.
    #[error("failed to pull image: image removed during sync: {0}")]
    ImageRemoved(String),
}

/// The PinnedImageSets the node's pools name, in pool order, each once. A name with no set is
/// an error for a pool's own sync, as upstream's `syncMachineConfigPool`.
pub fn sets_for_pools<'a>(
    pools: &[&MachineConfigPool],
    sets: &'a [PinnedImageSet],
) -> Result<Vec<&'a PinnedImageSet>, PinError> {
    let by_name: BTreeMap<&str, &PinnedImageSet> = sets.iter().map(|s| (s.name(), s)).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for pool in pools {
        for r in &pool.spec.pinned_image_sets {
            let set = by_name
                .get(r.name.as_str())
                .ok_or_else(|| PinError::SetNotFound {
                    name: r.name.clone(),
                })?;
            if seen.insert(r.name.as_str()) {
                out.push(*set);
            }
        }
    }
    Ok(out)
}

/// The images of `sets` as CRI-O's drop-in lists them: trimmed, blanks dropped, each once,
/// sorted.
pub fn unique_sorted_images(sets: &[&PinnedImageSet]) -> Vec<String> {
    sets.iter()
        .flat_map(|s| s.spec.pinned_images.iter())
        .map(|i| i.name.trim())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// One image the container runtime holds, as `crictl images -o json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CriImage {
    /// The image id (`sha256:...`).
    #[serde(default)]
    pub id: String,
    /// Tags it is known by.
    #[serde(default, deserialize_with = "nullable")]
    pub repo_tags: Vec<String>,
    /// Digest references it is known by.
    #[serde(default, deserialize_with = "nullable")]
    pub repo_digests: Vec<String>,
    /// Its size in bytes (a decimal string, as the CRI's JSON writes 64-bit integers).
    #[serde(default)]
    pub size: String,
    /// Whether CRI-O pins it.
    #[serde(default)]
    pub pinned: bool,
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

impl CriImage {
    /// Whether `reference` names this image (a digest reference, a tag or the id).
    pub fn is(&self, reference: &str) -> bool {
        self.repo_digests.iter().any(|d| d == reference)
            || self.repo_tags.iter().any(|t| t == reference)
            || self.id == reference
    }
}

/// The output of `crictl images -o json`, typed.
pub fn parse_crictl_images(json: &str) -> Result<Vec<CriImage>, String> {
    #[derive(Deserialize)]
    struct List {
        #[serde(default)]
        images: Option<Vec<CriImage>>,
    }
    let list: List =
        serde_json::from_str(json).map_err(|e| format!("crictl images -o json: {e}"))?;
    Ok(list.images.unwrap_or_default())
}

/// The images of `wanted` the runtime does not hold, in `wanted`'s order.
pub fn missing_images<'a>(wanted: &'a [String], held: &[CriImage]) -> Vec<&'a str> {
    wanted
        .iter()
        .map(String::as_str)
        .filter(|w| !held.iter().any(|h| h.is(w)))
        .collect()
}

/// The node's allocatable ephemeral storage in bytes, after upstream's readiness check (Ready
/// True, DiskPressure False).
pub fn node_storage(node: &Node) -> Result<i64, PinError> {
    for c in &node.status.conditions {
        if c.type_ == "Ready" && c.status != "True" {
            return Err(PinError::NodeNotReady(format!(
                "node {} is reporting NotReady={}",
                node.name(),
                c.status
            )));
        }
        if c.type_ == "DiskPressure" && c.status != "False" {
            return Err(PinError::NodeNotReady(format!(
                "node {} is reporting OutOfDisk={}",
                node.name(),
                c.status
            )));
        }
    }
    let value = node
        .status
        .allocatable
        .get("ephemeral-storage")
        .ok_or_else(|| PinError::NoStorageCapacity(node.name().to_string()))?;
    Quantity::parse(value)
        .map(|q| q.value())
        .map_err(|e| PinError::BadStorageCapacity {
            node: node.name().to_string(),
            value: value.clone(),
            message: e.to_string(),
        })
}

/// The compressed size of an image from its manifest (`podman manifest inspect`): the sum of
/// its layers not counted before (`seen` holds the layer digests counted, so layers shared by
/// several images of a set count once).
pub fn manifest_size(manifest_json: &str, seen: &mut BTreeSet<String>) -> Result<i64, String> {
    #[derive(Deserialize)]
    struct Layer {
        #[serde(default)]
        digest: String,
        #[serde(default)]
        size: i64,
    }
    #[derive(Deserialize)]
    struct Manifest {
        #[serde(default)]
        layers: Option<Vec<Layer>>,
    }
    let m: Manifest = serde_json::from_str(manifest_json).map_err(|e| e.to_string())?;
    let mut total = 0i64;
    for l in m.layers.unwrap_or_default() {
        if seen.insert(l.digest) {
            total = total.saturating_add(l.size);
        }
    }
    Ok(total)
}

/// Upstream's room check for one PinnedImageSet: the disk must hold `minimum` at all, and the
/// missing images, counted twice their compressed `sizes` (decompression), must leave more
/// than `minimum` of `capacity` free.
pub fn check_storage(capacity: i64, minimum: i64, sizes: &[i64]) -> Result<(), PinError> {
    if capacity < minimum {
        return Err(PinError::BelowMinimum {
            capacity,
            required: minimum,
        });
    }
    let required = sizes
        .iter()
        .fold(0i64, |acc, s| acc.saturating_add(s.saturating_mul(2)));
    if required >= capacity - minimum {
        return Err(PinError::InsufficientStorage {
            capacity,
            required: required.saturating_add(minimum),
        });
    }
    Ok(())
}

/// CRI-O's drop-in pinning `images`, as upstream's TOML encoder writes it.
pub fn crio_config(images: &[String]) -> String {
    let mut image = Table::new();
    if !images.is_empty() {
        image.value(
            "pinned_images",
            Value::Array(images.iter().map(|i| Value::Str(i.clone())).collect()),
        );
    }
    let mut crio = Table::new();
    crio.table("image", image);
    let mut root = Table::new();
    root.table("crio", crio);
    root.encode()
}

/// What to do with CRI-O's drop-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrioConfigAction {
    /// Nothing: it already says this (or there is none and nothing to pin).
    Keep,
    /// Write these bytes, then reload CRI-O.
    Write(String),
    /// Remove it (nothing is pinned any more), then reload CRI-O.
    Remove,
}

/// The drop-in's fate given what is on disk (`None`: no file): upstream compares the contents
/// with surrounding white space trimmed.
pub fn crio_config_action(existing: Option<&str>, images: &[String]) -> CrioConfigAction {
    match (existing, images.is_empty()) {
        (Some(_), true) => CrioConfigAction::Remove,
        (None, true) => CrioConfigAction::Keep,
        (existing, false) => {
            let new = crio_config(images);
            if existing.is_some_and(|e| e.trim() == new.trim()) {
                CrioConfigAction::Keep
            } else {
                CrioConfigAction::Write(new)
            }
        }
    }
}

/// Where a pass over the node's PinnedImageSets stands, for the MachineConfigNode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinPhase<'a> {
    /// Pulling has started.
    Prefetching,
    /// Every image is pulled and pinned.
    Complete,
    /// The pass failed with this error.
    Failed(&'a str),
}

/// The conditions upstream records for a phase, in the order it records them.
pub fn phase_conditions(phase: PinPhase<'_>, node: &str) -> Vec<Condition> {
    let cond = |t: &str, status: bool, reason: &str, message: String| Condition {
        reason: Some(reason.into()),
        message: Some(message),
        ..Condition::of(t, status)
    };
    match phase {
        PinPhase::Prefetching => vec![cond(
            conditions::PINNED_IMAGE_SETS_PROGRESSING,
            true,
            PREFETCH_REASON,
            format!("node is prefetching images: {node}"),
        )],
        PinPhase::Complete => vec![
            cond(
                conditions::PINNED_IMAGE_SETS_PROGRESSING,
                false,
                AS_EXPECTED,
                COMPLETE_MESSAGE.into(),
            ),
            cond(
                conditions::PINNED_IMAGE_SETS_DEGRADED,
                false,
                AS_EXPECTED,
                ALL_GOOD.into(),
            ),
        ],
        PinPhase::Failed(_) => vec![cond(
            conditions::PINNED_IMAGE_SETS_DEGRADED,
            true,
            PREFETCH_FAILED,
            FAILED_MESSAGE.into(),
        )],
    }
}

/// The MachineConfigNode's `status.pinnedImageSets` for the primary pool's sets in a phase:
/// each set's generation as desired; as current once complete (or when `before` already
/// reports that generation pulled); as last failed, with the error, on failure.
pub fn set_generations(
    sets: &[&PinnedImageSet],
    before: &[PinnedImageSetGenerations],
    phase: PinPhase<'_>,
) -> Vec<PinnedImageSetGenerations> {
    sets.iter()
        .map(|s| {
            let generation = i32::try_from(s.generation()).unwrap_or(i32::MAX);
            let mut g = PinnedImageSetGenerations {
                name: s.name().to_string(),
                desired_generation: Some(generation),
                ..Default::default()
            };
            let done_before = before
                .iter()
                .any(|b| b.name == s.name() && b.current_generation == Some(generation));
            match phase {
                _ if done_before => g.current_generation = Some(generation),
                PinPhase::Complete => g.current_generation = Some(generation),
                PinPhase::Failed(e) => {
                    g.last_failed_generation = Some(generation);
                    g.last_failed_generation_error = Some(e.to_string());
                }
                PinPhase::Prefetching => {}
            }
            g
        })
        .collect()
}

/// Upstream's error after the last failed pull of `image`: the retries ran out (the backoff's
/// timeout), or the disk is full, which stops them at once.
pub fn pull_error(image: &str, tries: u32, last: &str) -> String {
    let cause = if is_no_space(last) {
        last
    } else {
        "timed out waiting for the condition"
    };
    format!("failed to pull image {image:?} ({tries} tries): {cause}: {last}")
}

/// Whether a pull error is the disk being full (upstream stops retrying and pulling then).
pub fn is_no_space(error: &str) -> bool {
    error.contains("no space left on device")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{PinnedImageRef, PinnedImageSetRef};
    use proptest::prelude::*;

    fn digest(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    fn image(name: &str, c: char) -> String {
        format!("quay.io/openshift-release-dev/{name}@sha256:{}", digest(c))
    }

    fn set(name: &str, generation: i64, images: &[String]) -> PinnedImageSet {
        let mut s = PinnedImageSet::default();
        s.metadata.name = name.into();
        s.metadata.generation = Some(generation);
        s.spec.pinned_images = images
            .iter()
            .map(|i| PinnedImageRef { name: i.clone() })
            .collect();
        s
    }

    fn pool(name: &str, sets: &[&str]) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = name.into();
        p.spec.pinned_image_sets = sets
            .iter()
            .map(|s| PinnedImageSetRef {
                name: s.to_string(),
            })
            .collect();
        p
    }

    #[test]
    fn the_pools_sets_once_each_and_a_missing_one_is_upstreams_error() {
        let sets = vec![
            set("a", 1, &[image("x", 'a')]),
            set("b", 2, &[image("y", 'b')]),
        ];
        let (worker, infra) = (pool("worker", &["b", "a"]), pool("infra", &["a"]));
        let got = sets_for_pools(&[&infra, &worker], &sets).unwrap();
        assert_eq!(got.iter().map(|s| s.name()).collect::<Vec<_>>(), ["a", "b"]);
        let broken = pool("worker", &["gone"]);
        assert_eq!(
            sets_for_pools(&[&broken], &sets).unwrap_err().to_string(),
            "failed to get PinnedImageSet \"gone\": pinnedimageset.machineconfiguration.openshift.io \"gone\" not found"
        );
    }

    #[test]
    fn crio_drop_in_is_upstreams_toml() {
        let images = vec![image("ocp-release", 'a'), image("ocp-v4.0-art-dev", 'b')];
        insta::assert_snapshot!(crio_config(&images), @r#"
        [crio]
          [crio.image]
            pinned_images = ["quay.io/openshift-release-dev/ocp-release@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"]
        "#);
    }

    #[test]
    fn the_drop_in_is_written_when_it_differs_and_removed_when_nothing_is_pinned() {
        let images = vec![image("x", 'a')];
        let text = crio_config(&images);
        assert_eq!(
            crio_config_action(None, &images),
            CrioConfigAction::Write(text.clone())
        );
        assert_eq!(
            crio_config_action(Some(&format!("\n{text}\n\n")), &images),
            CrioConfigAction::Keep
        );
        assert_eq!(
            crio_config_action(Some("[crio]\n"), &images),
            CrioConfigAction::Write(text)
        );
        assert_eq!(crio_config_action(Some("x"), &[]), CrioConfigAction::Remove);
        assert_eq!(crio_config_action(None, &[]), CrioConfigAction::Keep);
    }

    #[test]
    fn crictl_images_are_typed_and_matched_by_digest_tag_or_id() {
        let json = format!(
            r#"{{"images": [{{"id": "sha256:{}", "repoTags": null,
                "repoDigests": ["{}"], "size": "1024", "uid": null, "username": "",
                "spec": null, "pinned": true}},
               {{"id": "sha256:{}", "repoTags": ["quay.io/x:latest"], "repoDigests": [],
                "size": "2048", "pinned": false}}]}}"#,
            digest('1'),
            image("x", 'a'),
            digest('2')
        );
        let held = parse_crictl_images(&json).unwrap();
        assert_eq!(held.len(), 2);
        assert!(held[0].pinned && held[0].size == "1024");
        let wanted = vec![
            image("x", 'a'),
            "quay.io/x:latest".to_string(),
            format!("sha256:{}", digest('2')),
            image("y", 'b'),
        ];
        assert_eq!(missing_images(&wanted, &held), [image("y", 'b').as_str()]);
        assert_eq!(parse_crictl_images(r#"{"images": null}"#), Ok(vec![]));
        assert!(parse_crictl_images("no json")
            .unwrap_err()
            .starts_with("crictl images -o json: "));
    }

    #[test]
    fn storage_is_the_ready_nodes_allocatable_ephemeral_storage() {
        let mut node = Node::default();
        node.metadata.name = "w1".into();
        assert_eq!(
            node_storage(&node).unwrap_err().to_string(),
            "node \"w1\" has no ephemeral storage capacity"
        );
        node.status
            .allocatable
            .insert("ephemeral-storage".into(), "100Gi".into());
        assert_eq!(node_storage(&node), Ok(100 << 30));
        node.status
            .conditions
            .push(crate::api::node::NodeCondition {
                type_: "DiskPressure".into(),
                status: "True".into(),
                ..Default::default()
            });
        assert_eq!(
            node_storage(&node).unwrap_err().to_string(),
            "node w1 is reporting OutOfDisk=True"
        );
        node.status.conditions.clear();
        node.status
            .allocatable
            .insert("ephemeral-storage".into(), "lots".into());
        assert!(matches!(
            node_storage(&node),
            Err(PinError::BadStorageCapacity { .. })
        ));
    }

    #[test]
    fn room_counts_missing_images_twice_and_keeps_the_minimum_free() {
        let gi = 1i64 << 30;
        assert_eq!(
            check_storage(10 * gi, 16 * gi, &[])
                .unwrap_err()
                .to_string(),
            format!(
                "storage available is less than minimum required capacity: {}, required: {}",
                10 * gi,
                16 * gi
            )
        );
        assert_eq!(check_storage(20 * gi, 16 * gi, &[gi]), Ok(()));
        // 2 GiB twice is 4 GiB: exactly what is left over the minimum, which is not enough.
        assert_eq!(
            check_storage(20 * gi, 16 * gi, &[2 * gi]),
            Err(PinError::InsufficientStorage {
                capacity: 20 * gi,
                required: 20 * gi
            })
        );
    }

    #[test]
    fn shared_layers_count_once() {
        let m = |layers: &[(&str, i64)]| {
            let l: Vec<_> = layers
                .iter()
                .map(|(d, s)| serde_json::json!({"digest": d, "size": s}))
                .collect();
            serde_json::json!({"schemaVersion": 2, "layers": l}).to_string()
        };
        let mut seen = BTreeSet::new();
        assert_eq!(
            manifest_size(&m(&[("sha256:1", 10), ("sha256:2", 20)]), &mut seen),
            Ok(30)
        );
        assert_eq!(
            manifest_size(&m(&[("sha256:2", 20), ("sha256:3", 5)]), &mut seen),
            Ok(5)
        );
        assert_eq!(manifest_size(r#"{"manifests": []}"#, &mut seen), Ok(0));
        assert!(manifest_size("nope", &mut seen).is_err());
    }

    #[test]
    fn generations_follow_the_phase() {
        let sets = [set("a", 3, &[image("x", 'a')]), set("b", 1, &[])];
        let refs: Vec<&PinnedImageSet> = sets.iter().collect();
        let before = vec![PinnedImageSetGenerations {
            name: "b".into(),
            current_generation: Some(1),
            desired_generation: Some(1),
            ..Default::default()
        }];
        let prefetching = set_generations(&refs, &before, PinPhase::Prefetching);
        assert_eq!(prefetching[0].current_generation, None);
        assert_eq!(prefetching[0].desired_generation, Some(3));
        assert_eq!(prefetching[1].current_generation, Some(1));
        let failed = set_generations(&refs, &before, PinPhase::Failed("boom"));
        assert_eq!(failed[0].last_failed_generation, Some(3));
        assert_eq!(
            failed[0].last_failed_generation_error.as_deref(),
            Some("boom")
        );
        assert_eq!(failed[1].last_failed_generation, None);
        let done = set_generations(&refs, &failed, PinPhase::Complete);
        assert_eq!(done[0].current_generation, Some(3));
        assert_eq!(done[0].last_failed_generation, None);
        let conds = phase_conditions(PinPhase::Failed("boom"), "w1");
        assert_eq!(conds[0].type_, "PinnedImageSetsDegraded");
        assert_eq!(conds[0].reason(), "PrefetchFailed");
        assert_eq!(
            phase_conditions(PinPhase::Prefetching, "w1")[0].message(),
            "node is prefetching images: w1"
        );
    }

    #[test]
    fn pull_errors_say_why_the_retries_stopped() {
        assert_eq!(
            pull_error("q/x@sha256:1", 5, "connection refused"),
            "failed to pull image \"q/x@sha256:1\" (5 tries): timed out waiting for the condition: connection refused"
        );
        assert_eq!(
            pull_error("q/x@sha256:1", 1, "write: no space left on device"),
            "failed to pull image \"q/x@sha256:1\" (1 tries): write: no space left on device: write: no space left on device"
        );
    }

    proptest! {
        /// The drop-in's images are sorted, unique, trimmed and non-blank, and each of the
        /// sets' non-blank images is among them.
        #[test]
        fn pinned_images_are_sorted_unique_and_complete(
            names in proptest::collection::vec(
                proptest::collection::vec("( )?[a-c]{1,3}( )?", 0..6), 0..4)
        ) {
            let sets: Vec<PinnedImageSet> = names
                .iter()
                .enumerate()
                .map(|(i, imgs)| set(&format!("s{i}"), 1, imgs))
                .collect();
            let refs: Vec<&PinnedImageSet> = sets.iter().collect();
            let out = unique_sorted_images(&refs);
            prop_assert!(out.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(out.iter().all(|i| !i.is_empty() && i.trim() == i));
            for n in names.iter().flatten() {
                prop_assert!(out.iter().any(|o| o == n.trim()));
            }
        }

        /// The room check passes exactly when twice the sizes fit under capacity minus
        /// minimum, and never when the disk is below the minimum.
        #[test]
        fn room_check_is_monotone(
            capacity in 0i64..1 << 40,
            minimum in 0i64..1 << 36,
            sizes in proptest::collection::vec(0i64..1 << 32, 0..8),
        ) {
            let ok = check_storage(capacity, minimum, &sizes).is_ok();
            let need: i64 = sizes.iter().map(|s| s * 2).sum();
            prop_assert_eq!(ok, capacity >= minimum && need < capacity - minimum);
            if ok && !sizes.is_empty() {
                let mut fewer = sizes.clone();
                fewer.pop();
                prop_assert!(check_storage(capacity, minimum, &fewer).is_ok());
            }
        }
    }
}
