//! Object metadata: the parts of Kubernetes ObjectMeta that rendering reads and writes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A reference from an object to its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's API version.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's UID.
    #[serde(default)]
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether deletion of the owner waits for this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// Object metadata. Fields rendering does not use are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The object name.
    #[serde(default)]
    pub name: String,
    /// Labels; `null` and `{}` mean none.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable_map"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations; `null` and `{}` mean none.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable_map"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Owner references.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable_vec"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// Everything else, passed through.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

pub(crate) fn nullable_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default())
}

pub(crate) fn nullable_vec<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

pub(crate) fn nullable_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

pub(crate) fn nullable_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or_default())
}
