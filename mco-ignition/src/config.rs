//! A parsed, schema-normalised spec 3.x config.

use crate::version::SpecVersion;
use serde_json::{Map, Value};

/// A spec 3.x config whose tree conforms to its version's schema.
///
/// Keys are canonical, unknown keys are gone, unset optional values are absent, empty lists and
/// empty objects are absent, and required strings are present. Only [`crate::parse`],
/// [`crate::merge`] and [`crate::translate`] build one, so the invariant holds by construction.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    version: SpecVersion,
    root: Map<String, Value>,
}

impl Config {
    /// Wraps a tree already known to be normalised for `version`, setting `ignition.version`.
    pub(crate) fn from_normalised(version: SpecVersion, mut root: Map<String, Value>) -> Self {
        let ign = root
            .entry("ignition")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = ign {
            m.insert("version".into(), Value::String(version.as_str().into()));
        }
        Config { version, root }
    }

    /// An empty config of a version (`{"ignition":{"version":...}}`).
    pub fn empty(version: SpecVersion) -> Self {
        Config::from_normalised(version, Map::new())
    }

    /// The spec version.
    pub fn version(&self) -> SpecVersion {
        self.version
    }

    /// The normalised tree.
    pub fn root(&self) -> &Map<String, Value> {
        &self.root
    }

    /// The normalised tree as a JSON value (as upstream's omit-empty encoder writes it).
    pub fn to_value(&self) -> Value {
        Value::Object(self.root.clone())
    }

    /// Consumes the config, giving its tree.
    pub fn into_value(self) -> Value {
        Value::Object(self.root)
    }

    /// The same config as spec 3.5. A normalised 3.x tree is a valid 3.5 tree: fields that
    /// became optional in later minors keep the value they were always set to.
    pub fn to_latest(&self) -> Config {
        Config::from_normalised(SpecVersion::LATEST, self.root.clone())
    }

    /// Takes the tree out, leaving an empty one; crate-internal, for merging without copying.
    pub(crate) fn take_root(&mut self) -> Map<String, Value> {
        std::mem::take(&mut self.root)
    }

    /// [`Config::to_latest`] without copying the tree.
    pub fn into_latest(self) -> Config {
        Config::from_normalised(SpecVersion::LATEST, self.root)
    }

    /// Applies a change to the tree; the closure must keep it normalised.
    pub fn edit(&mut self, f: impl FnOnce(&mut Map<String, Value>)) {
        f(&mut self.root)
    }

    /// A list at a dotted path below the root (`storage.files`), empty when absent.
    pub fn list(&self, dotted: &str) -> &[Value] {
        let mut cur: Option<&Value> = None;
        let mut map = Some(&self.root);
        for seg in dotted.split('.') {
            cur = map.and_then(|m| m.get(seg));
            map = cur.and_then(Value::as_object);
        }
        cur.and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The typed view of this config.
    pub fn typed(&self) -> Result<crate::model::Config, serde_json::Error> {
        serde_json::from_value(self.to_value())
    }
}
