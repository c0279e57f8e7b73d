//! What the server holds between requests: every pool's served config, already encoded for
//! every spec version, so requests never render or encode.

use bytes::Bytes;
use mco_ignition::SpecVersion;
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::manifests::Manifests;
use mco_render::release::{Profile, Release};
use mco_render::render::{render_pool, RenderOptions};
use mco_render::serve::{self, EncapsulatedVersion, ServeInput};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The versions Accept negotiation can pick, each encoded ahead of time (a version the
/// conversion cannot reach is kept as its error and answered with 500, as upstream does).
pub const SERVED_VERSIONS: [SpecVersion; 7] = SpecVersion::ALL;

/// One encoded response body with its entity tag, and its gzip form, compressed on the first
/// request that accepts gzip and shared from then on by every request and every clone (a pool
/// whose rendered config is unchanged across a rebuild keeps its entry, gzip form included).
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The body bytes.
    pub body: Bytes,
    /// The strong entity tag, quoted.
    pub etag: String,
    gzip: Arc<OnceLock<Option<Gzipped>>>,
}

/// A body's gzip form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gzipped {
    /// The compressed bytes (one gzip member).
    pub body: Bytes,
    /// Its own strong entity tag (the plain body's with `-gzip` before the closing quote: a
    /// different representation needs a different strong tag).
    pub etag: String,
}

impl PartialEq for Encoded {
    /// Equal bodies (the gzip form follows from the body).
    fn eq(&self, other: &Self) -> bool {
        self.body == other.body && self.etag == other.etag
    }
}

impl Eq for Encoded {}

impl Encoded {
    /// Wraps a body and computes its tag.
    pub fn new(body: Vec<u8>) -> Self {
        let digest = Sha256::digest(&body);
        let etag = format!("\"{}\"", hex::encode(&digest[..16]));
        Encoded {
            body: Bytes::from(body),
            etag,
            gzip: Arc::default(),
        }
    }

    /// The gzip form, if it is smaller than the body: compressed by the first caller (which
    /// runs `compressed`; callers at the same moment wait for it) and shared by every later one.
    pub fn gzipped(&self, compressed: impl FnOnce()) -> Option<&Gzipped> {
        self.gzip
            .get_or_init(|| {
                compressed();
                let z = super::content_coding::gzip(&self.body).ok()?;
                (z.len() < self.body.len()).then(|| Gzipped {
                    body: Bytes::from(z),
                    etag: format!("{}-gzip\"", self.etag.trim_end_matches('"')),
                })
            })
            .as_ref()
    }
}

/// A pool's served configs.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolEntry {
    /// The rendered MachineConfig name served.
    pub rendered_name: String,
    /// The encoded body per version, or why that version cannot be served.
    pub versions: BTreeMap<SpecVersion, Result<Encoded, String>>,
}

/// What every pool serves, or why it cannot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServedState {
    /// Pools by name.
    pub pools: BTreeMap<String, Result<PoolEntry, String>>,
    /// The release served as: the cluster's (its ControllerConfig's, or the manifests'), else
    /// the server's own. Its Accept negotiation picks the version.
    pub profile: Profile,
}

/// Inputs besides the manifests.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Render options (controller version, naming).
    pub render: RenderOptions,
    /// The bootstrap kubeconfig handed to machines, if any.
    pub kubeconfig: Option<String>,
}

impl PoolEntry {
    /// Encodes a rendered config for every version `profile`'s release serves.
    pub fn encode(
        mc: &MachineConfig,
        cc: Option<&ControllerConfigSpec>,
        kubeconfig: Option<&str>,
        profile: Profile,
    ) -> Self {
        let input = ServeInput {
            machine_config: mc,
            controller_config: cc,
            kubeconfig,
            encapsulated: EncapsulatedVersion::Requested,
            profile,
        };
        let versions = SERVED_VERSIONS
            .iter()
            .filter(|v| **v <= profile.rendered_ignition)
            .map(|v| {
                let r = serve::served_bytes(&input, *v)
                    .map(Encoded::new)
                    .map_err(|e| e.to_string());
                (*v, r)
            })
            .collect();
        PoolEntry {
            rendered_name: mc.name().to_string(),
            versions,
        }
    }
}

impl ServedState {
    /// Renders every pool in the manifests and encodes its configs. A pool that fails to render
    /// keeps what `previous` served for it, if anything.
    pub fn build(m: &Manifests, opts: &BuildOptions, previous: Option<&ServedState>) -> Self {
        // The manifests' release, as `mco-render render` reads it; else the server's own.
        let release = m
            .release()
            .and_then(|r| r.map_or_else(|e| Release::named(&e.given), Some))
            .unwrap_or(opts.render.release);
        let profile = release.profile();
        let render = RenderOptions {
            release,
            ..opts.render.clone()
        };
        let cc = m.controller_config.as_ref().map(|(_, c)| c.spec.clone());
        let cc_default = cc.clone().unwrap_or_default();
        let configs = m.configs();
        let mut pools = BTreeMap::new();
        for (_, pool) in &m.pools {
            let name = pool.name().to_string();
            let entry = match render_pool(pool, &configs, &cc_default, &render) {
                Ok(r) => Ok(PoolEntry::encode(
                    &r.machine_config,
                    cc.as_ref(),
                    opts.kubeconfig.as_deref(),
                    profile,
                )),
                Err(f) => {
                    let msg = format!("pool {name} failed to render: {f}");
                    match previous.and_then(|p| p.pools.get(&name)) {
                        Some(Ok(prev)) => {
                            tracing::warn!(pool = %name, error = %f, "render failed; keeping the previous config");
                            Ok(prev.clone())
                        }
                        _ => Err(msg),
                    }
                }
            };
            pools.insert(name, entry);
        }
        ServedState { pools, profile }
    }
}

/// The rendered config a pool serves in cluster mode: the pool's target once at least one
/// machine has reached it (new machines then join on the newest config), else the config all
/// machines are on.
pub fn served_config_name(pool: &MachineConfigPool) -> String {
    let status = pool.status_or_default();
    if status.updated_machine_count > 0 {
        pool.spec.configuration.name.clone()
    } else {
        status.configuration.name
    }
}

/// What cluster mode reads from the API server's caches.
#[derive(Debug, Clone, Copy)]
pub struct ClusterObjects<'a> {
    /// Every MachineConfigPool.
    pub pools: &'a [MachineConfigPool],
    /// MachineConfigs by name.
    pub machine_configs: &'a BTreeMap<String, MachineConfig>,
    /// The controller's ControllerConfig, if it exists.
    pub controller_config: Option<&'a ControllerConfigSpec>,
    /// The release its ControllerConfig names, if any.
    pub release: Option<Release>,
}

impl ServedState {
    /// Cluster mode: each pool serves the rendered MachineConfig [`served_config_name`] picks,
    /// encoded as file mode encodes it (nothing is rendered here: the controller did). A pool
    /// whose config is unchanged since `previous` keeps its encoded bytes, unless
    /// `controller_changed` (the ControllerConfig feeds the served files).
    pub fn build_cluster(
        objects: ClusterObjects<'_>,
        opts: &BuildOptions,
        previous: Option<&ServedState>,
        controller_changed: bool,
    ) -> Self {
        let profile = objects.release.unwrap_or(opts.render.release).profile();
        // Another release is other bytes for every pool.
        let previous = previous.filter(|p| p.profile == profile);
        let mut pools = BTreeMap::new();
        for pool in objects.pools {
            let name = pool.name().to_string();
            let served = served_config_name(pool);
            let reuse = previous
                .filter(|_| !controller_changed)
                .and_then(|p| p.pools.get(&name))
                .and_then(|e| e.as_ref().ok())
                .filter(|e| e.rendered_name == served && !served.is_empty());
            let entry = match (reuse, objects.controller_config) {
                (Some(prev), _) => Ok(prev.clone()),
                (None, None) => Err("could not get controllerconfig: controllerconfig.machineconfiguration.openshift.io \"machine-config-controller\" not found".to_string()),
                (None, Some(cc)) => match objects.machine_configs.get(&served) {
                    Some(mc) => Ok(PoolEntry::encode(
                        mc,
                        Some(cc),
                        opts.kubeconfig.as_deref(),
                        profile,
                    )),
                    None => Err(format!(
                        "could not fetch config {served}, err: machineconfig.machineconfiguration.openshift.io \"{served}\" not found"
                    )),
                },
            };
            pools.insert(name, entry);
        }
        ServedState { pools, profile }
    }
}
