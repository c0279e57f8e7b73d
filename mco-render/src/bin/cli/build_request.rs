//! `mco-render build-request`: the objects upstream's build controller creates for a
//! MachineOSConfig (its MachineOSBuild, ConfigMaps, Secrets and builder Job), as a `List`.

use super::{load, to_json, to_yaml, write_stdout, Failure, Format};
use mco_render::api::{MachineConfig, MachineConfigPool};
use mco_render::controllers::build::{build_request, RequestInputs};
use mco_render::controllers::render_sync::release_of;
use mco_render::manifests::expand::{expand_manifests, ClusterOptions};
use mco_render::manifests::Manifests;
use mco_render::render::{render_pool, RenderOptions};
use serde_json::{json, Value};
use std::path::PathBuf;

/// The `build-request` command's arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The MachineOSConfig to build (required when the manifests hold several).
    #[arg(long = "machine-os-config")]
    machine_os_config: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: Format,
    /// The MCO release to render the pool's config as (4.14 to 4.22); default: the release
    /// the manifests' ControllerConfig or rendered configs name, else the newest.
    #[arg(long)]
    release: Option<mco_render::release::Release>,
    /// Manifest files or folders: the MachineOSConfig, its pool, the rendered
    /// MachineConfig, the ControllerConfig, and the Secrets and ConfigMaps the build reads.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

fn missing(what: String) -> Failure {
    Failure {
        code: 1,
        lines: vec![format!("error: {what}")],
    }
}

/// A core object upstream returns without `apiVersion`/`kind`, typed for `kubectl apply`.
fn typed(kind: &str, mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!(kind));
    }
    v
}

/// The pool rendered from the manifests' MachineConfigs (and those the cluster's controllers
/// generate from them) as the controller renders it (the ControllerConfig's release image
/// version on it), with its `spec.configuration` the controller sets (the result and its sources).
fn render_sources(
    m: &Manifests,
    pool: &MachineConfigPool,
    release: mco_render::release::Release,
) -> Result<(MachineConfigPool, MachineConfig), Failure> {
    let opts = RenderOptions {
        release,
        ..RenderOptions::default()
    };
    let mut m = m.clone();
    let errors = expand_manifests(
        &mut m,
        &ClusterOptions {
            controller_version: opts.controller_version.clone(),
            templates: None,
            release: opts.release,
        },
    );
    if !errors.is_empty() {
        return Err(Failure {
            code: 1,
            lines: errors.iter().map(|e| format!("error: {e}")).collect(),
        });
    }
    let Some((_, cc)) = m.controller_config.as_ref() else {
        return Err(missing("no ControllerConfig in the manifests".into()));
    };
    let opts = release_of(cc, &opts);
    let r = render_pool(pool, &m.configs(), &cc.spec, &opts).map_err(|f| Failure {
        code: 1,
        lines: vec![format!(
            "error: pool {:?} failed to render: {f}",
            pool.name()
        )],
    })?;
    let mut pool = pool.clone();
    pool.spec.configuration = r.configuration;
    Ok((pool, r.machine_config))
}

/// The MachineConfig `name` as `file` holds it (JSON, `List` items included), for what Go's
/// encoding keeps that the typed value does not (`null` versus `[]`); `None` when the file
/// cannot be read again as manifests (a Butane config).
fn as_read(file: &str, name: &str) -> Option<Value> {
    fn find(v: Value, name: &str) -> Option<Value> {
        match v["kind"].as_str() {
            Some("MachineConfig") if v["metadata"]["name"].as_str() == Some(name) => Some(v),
            Some(k) if k.ends_with("List") => match v {
                Value::Object(mut o) => match o.remove("items") {
                    Some(Value::Array(items)) => items.into_iter().find_map(|i| find(i, name)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    let docs = mco_render::manifests::documents(&text).ok()?;
    docs.into_iter().find_map(|d| find(d, name))
}

/// Runs the command: 0 with the `List` printed, 1 naming the object upstream fails on,
/// 2 for unreadable input.
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let m = load(&args.paths)?;
    let moscs: Vec<_> = m
        .machine_os_configs
        .iter()
        .map(|(_, c)| c)
        .filter(|c| {
            args.machine_os_config
                .as_ref()
                .is_none_or(|n| *n == c.metadata.name)
        })
        .collect();
    let mosc =
        match (moscs.as_slice(), &args.machine_os_config) {
            ([one], _) => *one,
            ([], Some(n)) => {
                return Err(missing(format!(
                    "no MachineOSConfig {n:?} in the manifests"
                )))
            }
            ([], None) => return Err(missing("no MachineOSConfig in the manifests".into())),
            (_, _) => return Err(missing(
                "several MachineOSConfigs in the manifests: choose one with --machine-os-config"
                    .into(),
            )),
        };
    let pool_name = &mosc.spec.machine_config_pool.name;
    // The pool named, else the only one (upstream then reports the mismatch).
    let only = |n: usize| n == 1;
    let pool = m
        .pools
        .iter()
        .map(|(_, p)| p)
        .find(|p| p.metadata.name == *pool_name)
        .or_else(|| {
            m.pools
                .first()
                .map(|(_, p)| p)
                .filter(|_| only(m.pools.len()))
        })
        .ok_or_else(|| {
            missing(format!(
                "MachineOSConfig {:?}: MachineConfigPool {pool_name:?} not in the manifests",
                mosc.metadata.name
            ))
        })?;
    let (_, controller_config) = m
        .controller_config
        .as_ref()
        .ok_or_else(|| missing("no ControllerConfig in the manifests".into()))?;
    let rendered_name = &pool.spec.configuration.name;
    let found = m
        .machine_configs
        .iter()
        .map(|(_, c)| c)
        .find(|c| c.metadata.name == *rendered_name);
    // A folder of sources (the pool names no rendered config): the pool rendered from it, as
    // the controller would before building.
    let from_sources = match found {
        None if rendered_name.is_empty() => Some(render_sources(
            &m,
            pool,
            super::release::release_for(args.release, &m)?,
        )?),
        _ => None,
    };
    let pool = &from_sources
        .as_ref()
        .map_or_else(|| pool.clone(), |(p, _)| p.clone());
    let rendered = found
        .or(from_sources.as_ref().map(|(_, r)| r))
        // Else the only MachineConfig (upstream then checks it is a rendered one).
        .or_else(|| {
            m.machine_configs.first().map(|(_, c)| c).filter(|_| only(m.machine_configs.len()))
        })
        .ok_or_else(|| {
            missing(format!(
                "MachineConfigPool {pool_name:?}: rendered MachineConfig {rendered_name:?} not in the manifests"
            ))
        })?;
    // A rendered config read from the manifests is encoded as read; one rendered here holds
    // the lists the render made.
    let rendered_here = from_sources
        .as_ref()
        .is_some_and(|(_, r)| std::ptr::eq(r, rendered));
    let source = m
        .file_of(rendered.name())
        .filter(|_| !rendered_here)
        .and_then(|f| as_read(f, rendered.name()));
    let mut objects = m.others_of_kind("Secret");
    objects.extend(m.others_of_kind("ConfigMap"));
    let out = build_request(&RequestInputs {
        mosc,
        pool,
        rendered,
        rendered_source: source.as_ref(),
        controller_config,
        objects: &objects,
    });
    if let Some(e) = &out.error {
        return Err(Failure {
            code: 1,
            lines: vec![format!(
                "error: MachineOSConfig {:?} ({}): {e}",
                mosc.metadata.name,
                e.stage().upstream_name()
            )],
        });
    }
    let mut items = Vec::new();
    if let Some(mosb) = &out.machine_os_build {
        items.push(serde_json::to_value(mosb).map_err(|e| Failure::input(e.to_string()))?);
    }
    items.extend(
        out.config_maps
            .into_iter()
            .flatten()
            .map(|c| typed("ConfigMap", c)),
    );
    items.extend(
        out.secrets
            .into_iter()
            .flatten()
            .map(|s| typed("Secret", s)),
    );
    items.extend(out.job);
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": items });
    let text = match args.output {
        Format::Yaml => to_yaml(&list)?,
        Format::Json => format!("{}\n", to_json(&list)?),
    };
    write_stdout(&text);
    Ok(())
}
