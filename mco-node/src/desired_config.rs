//! Reading a rendered MachineConfig (YAML or JSON) or a bare Ignition config.

use mco_ignition::SpecVersion;
use mco_render::api::machine_config::{MachineConfig, API_VERSION};
use mco_render::plan::reconcile::RenderedInput;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::root::RootError;

/// A config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error(transparent)]
    Root(#[from] RootError),
    /// Reading a file outside the root failed.
    #[error("{source_name}: {error}")]
    Io {
        /// File name.
        source_name: String,
        /// The error.
        error: std::io::Error,
    },
    /// The contents are not a MachineConfig or Ignition config.
    #[error("{source_name}: {message}")]
    Invalid {
        /// File name.
        source_name: String,
        /// Why.
        message: String,
    },
}

/// A rendered config ready to apply: the object saved as `currentconfig`, and its parsed view.
#[derive(Debug, Clone)]
pub struct DesiredConfig {
    /// The MachineConfig as saved.
    pub machine_config: MachineConfig,
    /// Spec fields and the typed spec 3.5 Ignition config.
    pub input: RenderedInput,
}

impl DesiredConfig {
    /// The empty config a node starts from (no name, nothing managed).
    pub fn empty() -> DesiredConfig {
        DesiredConfig {
            machine_config: MachineConfig::default(),
            input: RenderedInput::default(),
        }
    }

    /// The config's name.
    pub fn name(&self) -> &str {
        self.machine_config.name()
    }

    /// Reads a file outside the root.
    pub fn from_file(path: &std::path::Path) -> Result<DesiredConfig, LoadError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Io {
            source_name: name.clone(),
            error,
        })?;
        DesiredConfig::from_bytes(&bytes, &name)
    }

    /// Parses YAML or JSON holding a MachineConfig or a bare Ignition config. A bare config is
    /// wrapped in a MachineConfig named `ignition-<first 12 hex digits of its SHA-256>`.
    pub fn from_bytes(bytes: &[u8], source_name: &str) -> Result<DesiredConfig, LoadError> {
        let invalid = |message: String| LoadError::Invalid {
            source_name: source_name.into(),
            message,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| invalid(e.to_string()))?;
        let mut docs = mco_render::manifests::documents(text)
            .map_err(|e| invalid(format!("invalid YAML/JSON: {e}")))?;
        if docs.len() > 1 {
            return Err(invalid(format!(
                "expected one document, found {}",
                docs.len()
            )));
        }
        let value = docs.pop().unwrap_or(Value::Null);
        let Value::Object(map) = &value else {
            return Err(invalid("expected an object".into()));
        };
        let mc: MachineConfig = if map.contains_key("ignition") && !map.contains_key("spec") {
            let digest = hex::encode(Sha256::digest(
                serde_json::to_vec(&value).unwrap_or_default(),
            ));
            let mut mc = MachineConfig {
                api_version: API_VERSION.into(),
                kind: "MachineConfig".into(),
                ..MachineConfig::default()
            };
            mc.metadata.name = format!("ignition-{}", &digest[..12]);
            mc.spec.config = Some(value.clone());
            mc
        } else {
            serde_json::from_value(value.clone())
                .map_err(|e| invalid(format!("not a MachineConfig: {e}")))?
        };
        let input = rendered_input(&mc).map_err(invalid)?;
        Ok(DesiredConfig {
            machine_config: mc,
            input,
        })
    }

    /// The on-cluster layering image this config carries (`""` when none).
    pub fn image(&self) -> &str {
        mco_render::plan::layering::image_of(&self.machine_config)
    }

    /// This config with `image` embedded as its OS image
    /// ([`mco_render::plan::layering::embed`]); an empty `image` gives the config unchanged.
    pub fn with_image(&self, image: &str) -> DesiredConfig {
        let mut out = self.clone();
        if image.is_empty() {
            return out;
        }
        out.machine_config = mco_render::plan::layering::embed(image, &self.machine_config);
        out.input.os_image_url = image.to_string();
        out
    }

    /// The MachineConfig as saved in `currentconfig` (JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.machine_config).unwrap_or_default()
    }
}

/// The diff/plan view of a MachineConfig: its Ignition config (any version) read as spec 3.5.
pub fn rendered_input(mc: &MachineConfig) -> Result<RenderedInput, String> {
    let config = match mc.ignition() {
        Some(raw) => mco_render::render::source_config::parse_any(raw)
            .map_err(|e| e.message)?
            .into_config(),
        None => mco_ignition::Config::empty(SpecVersion::LATEST),
    };
    let typed = config.typed().map_err(|e| e.to_string())?;
    Ok(RenderedInput {
        name: mc.name().to_string(),
        os_image_url: mc.spec.os_image_url.clone(),
        base_os_extensions_container_image: mc.spec.base_os_extensions_container_image.clone(),
        fips: mc.spec.fips,
        kernel_arguments: mc.spec.kernel_arguments.clone(),
        extensions: mc.spec.extensions.clone(),
        kernel_type: mc.spec.kernel_type.clone(),
        config: typed,
    })
}
