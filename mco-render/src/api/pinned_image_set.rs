//! PinnedImageSet: images a pool's nodes pull ahead of time and CRI-O keeps (never garbage
//! collects), in openshift/api's machineconfiguration/v1 shape.

use super::condition::Condition;
use super::meta::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kind of a PinnedImageSet.
pub const PINNED_IMAGE_SET_KIND: &str = "PinnedImageSet";

/// A set of images, by digest, that the nodes of the pools naming it pull and pin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PinnedImageSet {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `PinnedImageSet`.
    #[serde(default)]
    pub kind: String,
    /// Name, labels and generation (the generation is what nodes report as pulled).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The images.
    #[serde(default)]
    pub spec: PinnedImageSetSpec,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PinnedImageSetStatus>,
}

/// The images of a PinnedImageSet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["pinnedImages"]))]
pub struct PinnedImageSetSpec {
    /// The images, each an OCI reference by digest (`host[:port][/namespace]/name@sha256:<64 hex>`);
    /// CRI-O's `pinned_images` on the nodes lists them (1 to 500 entries).
    #[serde(default)]
    #[schemars(length(min = 1, max = 500), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pinned_images: Vec<PinnedImageRef>,
}

/// One pinned image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[schemars(extend("required" = ["name"]))]
pub struct PinnedImageRef {
    /// The image by digest.
    #[serde(default)]
    #[schemars(length(min = 1, max = 447), extend("x-kubernetes-validations" = [
        {
            "rule": "(self.split('@').size() == 2 && self.split('@')[1].matches('^sha256:[a-f0-9]{64}$'))",
            "message": "the OCI Image reference must end with a valid '@sha256:<digest>' suffix, where '<digest>' is 64 characters long"
        },
        {
            "rule": "(self.split('@')[0].matches('^([a-zA-Z0-9-]+\\\\.)+[a-zA-Z0-9-]+(:[0-9]{2,5})?/([a-zA-Z0-9-_]{0,61}/)?[a-zA-Z0-9-_.]*?$'))",
            "message": "the OCI Image name should follow the host[:port][/namespace]/name format, resembling a valid URL without the scheme"
        }
    ]))]
    pub name: String,
}

/// A PinnedImageSet's observed state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedImageSetStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Option<Vec<Condition>>")]
    pub conditions: Vec<Condition>,
}

/// A pool's reference to a PinnedImageSet (`spec.pinnedImageSets[]`).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default, JsonSchema,
)]
pub struct PinnedImageSetRef {
    /// The PinnedImageSet's name.
    #[serde(default)]
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

impl PinnedImageSet {
    /// The set's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The set's generation (0 when the API server has not set one).
    pub fn generation(&self) -> i64 {
        self.metadata.generation.unwrap_or(0)
    }
}
