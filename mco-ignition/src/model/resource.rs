//! Remote or inline resources: `contents`, `append`, merge/replace configs, CA bundles.

use serde::{Deserialize, Serialize};

use super::is_default;

/// A resource fetched or decoded by Ignition.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Compression of the source bytes: absent, `""` or `gzip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// Extra HTTP headers for `http(s)` sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_headers: Vec<HttpHeader>,
    /// Source URL (`data:`, `http(s)://`, `s3://`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Hash verification of the fetched bytes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub verification: Verification,
}

/// One HTTP header of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HttpHeader {
    /// Header name.
    #[serde(default)]
    pub name: String,
    /// Header value; absent removes the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Verification of a resource's contents.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Verification {
    /// `<type>-<hex>`, for example `sha512-...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}
