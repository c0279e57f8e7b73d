//! Workload generators shared by the benchmarks, the examples and the fuzz corpus.
//!
//! A workload is a pool (`worker`), a ControllerConfig and `machine_configs` MachineConfigs
//! holding `files` files between them, shaped like the measurements: files of 100 B to
//! 1.2 KB, one in five gzip-compressed, one in ten overriding a path an earlier MachineConfig
//! wrote; every MachineConfig carries two units (one with contents, one a drop-in), an SSH key
//! and a kernel argument; Ignition configs are spec 3.2. Everything comes from a fixed-seed
//! xorshift, so the same sizes give the same bytes on every run and machine.

use base64::Engine as _;
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::manifests::{ManifestError, Manifests};
use mco_render::plan::reconcile::RenderedInput;
use mco_render::render::{render_pool_owned, RenderFailure, RenderOptions, Rendered};
use serde_json::{json, Value};
use std::io::Write as _;

/// The seed every workload starts from.
pub const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The three pool sizes: (MachineConfigs, files).
pub const SIZES: [(usize, usize); 3] = [(5, 10), (50, 1_000), (500, 20_000)];

/// A small xorshift64* generator: deterministic, no dependency.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a seed (zero is replaced, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Self {
        XorShift(if seed == 0 { SEED } else { seed })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// Which variant of a workload to generate: the diff benchmark renders two of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The base cluster.
    Base,
    /// The same cluster after an update: one file in seven has new contents, every MachineConfig
    /// a second kernel argument, and one unit in three a changed drop-in.
    Updated,
}

/// A generated cluster: its manifests as JSON documents and their total size.
#[derive(Debug, Clone)]
pub struct Workload {
    /// MachineConfig count.
    pub machine_configs: usize,
    /// Total file count across all MachineConfigs.
    pub files: usize,
    /// The pool manifest.
    pub pool: Value,
    /// The ControllerConfig manifest.
    pub controller_config: Value,
    /// The MachineConfig manifests, in generation order.
    pub configs: Vec<Value>,
}

const WORDS: [&str; 16] = [
    "enabled",
    "timeout",
    "listen",
    "address",
    "retries",
    "log-level",
    "socket",
    "driver",
    "registry",
    "mirror",
    "insecure",
    "limit",
    "memory",
    "cpu",
    "interval",
    "path",
];

fn text(rng: &mut XorShift, len: usize) -> String {
    let mut s = String::with_capacity(len + 32);
    while s.len() < len {
        let k = WORDS[rng.range(0, WORDS.len() - 1)];
        let v = rng.next_u64() % 100_000;
        s.push_str(&format!("{k} = {v}\n"));
    }
    s.truncate(len);
    s
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Generates a workload of `machine_configs` MachineConfigs holding `files` files in total.
pub fn generate(machine_configs: usize, files: usize, variant: Variant) -> Workload {
    let mut rng = XorShift::new(SEED ^ ((machine_configs as u64) << 32) ^ files as u64);
    let mut change = XorShift::new(SEED.rotate_left(17));
    let n = machine_configs.max(1);
    let mut written: Vec<String> = Vec::with_capacity(files);
    let mut configs = Vec::with_capacity(n);
    let mut file_no = 0usize;
    for i in 0..n {
        let count = files / n + usize::from(i < files % n);
        let mut file_list = Vec::with_capacity(count);
        // Overrides reach only into earlier MachineConfigs: a repeated path inside one config
        // is a validation error.
        let earlier = written.len();
        let mut taken = std::collections::HashSet::new();
        for j in 0..count {
            let pick = (file_no % 10 == 9 && earlier > 0)
                .then(|| written[rng.range(0, earlier - 1)].clone())
                .filter(|p| taken.insert(p.clone()));
            let overrides = pick.is_some();
            let path = if let Some(p) = pick {
                p
            } else {
                format!("/etc/bench/mc-{i:04}/file-{j:05}.conf")
            };
            let len = rng.range(100, 1_200);
            let mut body = text(&mut rng, len);
            let changed = change.next_u64().is_multiple_of(7);
            if variant == Variant::Updated && changed {
                body.push_str("updated = true\n");
            }
            let mut contents = serde_json::Map::new();
            if file_no % 5 == 4 {
                contents.insert(
                    "source".into(),
                    Value::String(format!("data:;base64,{}", b64(&gzip(body.as_bytes())))),
                );
                contents.insert("compression".into(), Value::String("gzip".into()));
            } else {
                contents.insert(
                    "source".into(),
                    Value::String(format!(
                        "data:text/plain;charset=utf-8;base64,{}",
                        b64(body.as_bytes())
                    )),
                );
            }
            file_list.push(json!({
                "path": path,
                "mode": 420,
                "overwrite": true,
                "contents": contents,
            }));
            if !overrides {
                written.push(path);
            }
            file_no += 1;
        }
        let dropin_env = if variant == Variant::Updated && i % 3 == 0 {
            format!("[Service]\nEnvironment=BENCH_MC_{i}=2\n")
        } else {
            format!("[Service]\nEnvironment=BENCH_MC_{i}=1\n")
        };
        let mut kargs = vec![format!("bench.mc{i}=1")];
        if variant == Variant::Updated {
            kargs.push(format!("bench.updated{i}=1"));
        }
        let key = format!(
            "ssh-ed25519 {} bench-{i}@example.net",
            b64(&rng.next_u64().to_le_bytes().repeat(4))
        );
        configs.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {
                "name": format!("50-worker-bench-{i:04}"),
                "labels": {"machineconfiguration.openshift.io/role": "worker"},
            },
            "spec": {
                "config": {
                    "ignition": {"version": "3.2.0"},
                    "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [key]}]},
                    "storage": {"files": file_list},
                    "systemd": {"units": [
                        {
                            "name": format!("bench-{i:04}.service"),
                            "enabled": true,
                            "contents": format!(
                                "[Unit]\nDescription=Bench unit {i}\n\n[Service]\nType=oneshot\nExecStart=/usr/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
                            ),
                        },
                        {
                            "name": "crio.service",
                            "dropins": [{"name": format!("50-bench-{i:04}.conf"), "contents": dropin_env}],
                        },
                    ]},
                },
                "kernelArguments": kargs,
            },
        }));
    }
    Workload {
        machine_configs,
        files,
        pool: json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": "worker", "uid": "00000000-0000-0000-0000-000000000001"},
            "spec": {"machineConfigSelector": {"matchLabels": {
                "machineconfiguration.openshift.io/role": "worker"}}},
        }),
        controller_config: json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "ControllerConfig",
            "metadata": {"name": "machine-config-controller"},
            "spec": {
                "baseOSContainerImage": "registry.example.net/os/coreos@sha256:6d1b3b0f5e1c4a2e8e4b9f0a7c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d",
                "baseOSExtensionsContainerImage": "registry.example.net/os/extensions@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
            },
        }),
        configs,
    }
}

impl Workload {
    /// Every manifest as one JSON list (`kind: List`), compact: the bytes the benchmarks decode.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut items = Vec::with_capacity(self.configs.len() + 2);
        items.push(self.pool.clone());
        items.push(self.controller_config.clone());
        items.extend(self.configs.iter().cloned());
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        serde_json::to_vec(&list).unwrap_or_default()
    }

    /// One file per manifest (name, compact JSON bytes), as the CLI reads a folder.
    pub fn to_files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.configs.len() + 2);
        let enc = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
        out.push(("00-pool.json".to_string(), enc(&self.pool)));
        out.push((
            "01-controllerconfig.json".to_string(),
            enc(&self.controller_config),
        ));
        for (i, c) in self.configs.iter().enumerate() {
            out.push((format!("50-worker-bench-{i:04}.json"), enc(c)));
        }
        out
    }

    /// A short label: `50mc-1000f`.
    pub fn label(&self) -> String {
        format!("{}mc-{}f", self.machine_configs, self.files)
    }
}

/// Decoded cluster objects, ready to render.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The pool.
    pub pool: MachineConfigPool,
    /// The ControllerConfig spec.
    pub controller: ControllerConfigSpec,
    /// The MachineConfigs.
    pub machine_configs: Vec<MachineConfig>,
}

/// Decodes manifest bytes (one JSON document or list) into the objects a render needs.
pub fn decode(bytes: &[u8]) -> Result<Cluster, ManifestError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ManifestError {
        line: 1,
        file: "workload".into(),
        message: e.to_string(),
    })?;
    let mut m = Manifests::default();
    m.add_file("workload", text)?;
    let pool = m.pools.pop().map(|(_, p)| p).unwrap_or_default();
    let controller = m
        .controller_config
        .take()
        .map(|(_, c)| c.spec)
        .unwrap_or_default();
    Ok(Cluster {
        pool,
        controller,
        machine_configs: m.machine_configs.into_iter().map(|(_, mc)| mc).collect(),
    })
}

/// Render options for benchmarks: upstream's, without the 1.5 MB limit the largest pool exceeds.
pub fn options() -> RenderOptions {
    RenderOptions {
        check_size: false,
        ..RenderOptions::default()
    }
}

/// The whole in-process pipeline upstream was measured on: decode, select, validate, merge, name.
pub fn render_bytes(bytes: &[u8]) -> Result<Rendered, String> {
    let c = decode(bytes).map_err(|e| e.to_string())?;
    render_pool_owned(&c.pool, c.machine_configs, &c.controller, &options())
        .map_err(|e: RenderFailure| e.to_string())
}

/// The baseline: parse into a `serde_json::Value` and serialise it back.
pub fn baseline(bytes: &[u8]) -> usize {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => serde_json::to_vec(&v).map(|b| b.len()).unwrap_or(0),
        Err(_) => 0,
    }
}

/// A rendered MachineConfig as the diff and plan take it (as the CLI builds it).
pub fn rendered_input(r: &Rendered) -> Result<RenderedInput, String> {
    let mc = &r.machine_config;
    let typed = r.typed_config().map_err(|e| e.to_string())?;
    Ok(RenderedInput {
        name: mc.metadata.name.clone(),
        os_image_url: mc.spec.os_image_url.clone(),
        base_os_extensions_container_image: mc.spec.base_os_extensions_container_image.clone(),
        fips: mc.spec.fips,
        kernel_arguments: mc.spec.kernel_arguments.clone(),
        extensions: mc.spec.extensions.clone(),
        kernel_type: mc.spec.kernel_type.clone(),
        config: typed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic() {
        let a = generate(5, 10, Variant::Base).to_json_bytes();
        let b = generate(5, 10, Variant::Base).to_json_bytes();
        assert_eq!(a, b);
    }

    #[test]
    fn small_workload_renders_with_every_file() {
        let w = generate(5, 10, Variant::Base);
        let r = render_bytes(&w.to_json_bytes());
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("render failed: {e}"),
        };
        assert_eq!(r.source.len(), 5);
        // One file in ten overrides an earlier path, so nine distinct paths remain.
        assert_eq!(
            r.ignition()["storage"]["files"]
                .as_array()
                .map_or(0, Vec::len),
            9
        );
        assert_eq!(r.machine_config.spec.kernel_arguments.len(), 5);
        assert!(r
            .machine_config
            .metadata
            .name
            .starts_with("rendered-worker-"));
    }

    #[test]
    fn updated_variant_differs() {
        let a = generate(5, 10, Variant::Base).to_json_bytes();
        let b = generate(5, 10, Variant::Updated).to_json_bytes();
        assert_ne!(a, b);
        assert!(baseline(&a) > 0);
    }
}
