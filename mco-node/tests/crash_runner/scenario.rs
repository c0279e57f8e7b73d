//! The trial kinds: for each, a host root seeded as a node would be, the two configs (A applied,
//! B the update) and what the agent is run with.

use mco_ignition::dataurl::encode_percent;
use serde_json::{json, Value};
use std::path::Path;

/// What an update changes between config A and config B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Files: contents, modes, owners, files only in A or only in B, vendor files replaced.
    Files,
    /// systemd units and drop-ins: contents, enabled and disabled, masked and unmasked,
    /// added and removed.
    Units,
    /// The `core` user's SSH keys.
    Ssh,
    /// The `core` user's password hash in `/etc/shadow`.
    Password,
    /// The OS image and kernel arguments on a simulated rpm-ostree host.
    Os,
    /// Everything above in one update.
    All,
    /// The CA files the certificate writer writes from a ControllerConfig.
    Certs,
}

impl Kind {
    /// Every kind, in the order trials cycle through them.
    pub const ALL: [Kind; 7] = [
        Kind::Files,
        Kind::Units,
        Kind::Ssh,
        Kind::Password,
        Kind::Os,
        Kind::All,
        Kind::Certs,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Files => "files",
            Kind::Units => "units",
            Kind::Ssh => "ssh",
            Kind::Password => "password",
            Kind::Os => "os",
            Kind::All => "all",
            Kind::Certs => "certs",
        }
    }

    /// Whether an update of this kind changes `part`.
    pub fn has(self, part: Kind) -> bool {
        self == part || (self == Kind::All && part != Kind::Certs)
    }
}

pub const IMAGE_A: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aaaa";
pub const IMAGE_B: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbbb";
const FILES: usize = 120;
const VENDOR: usize = 6;
const REGISTRIES: usize = 30;

/// Seeds a root as a node would have it before config A: users, shadow, vendor files, and
/// for the OS kinds the rpm-ostree marker; for certs the kubeconfig.
pub fn seed(kind: Kind, root: &Path) -> std::io::Result<()> {
    let put = |p: &str, s: &str, mode: u32| -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let hp = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(hp.parent().unwrap_or(root))?;
        std::fs::write(&hp, s)?;
        std::fs::set_permissions(&hp, std::fs::Permissions::from_mode(mode))
    };
    put(
        "/etc/passwd",
        "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\n",
        0o644,
    )?;
    put("/etc/group", "root:x:0:\ncore:x:1000:\n", 0o644)?;
    put(
        "/etc/shadow",
        "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
        0o600,
    )?;
    if kind.has(Kind::Files) {
        for i in 0..VENDOR {
            put(
                &format!("/etc/crash/vend/v{i}"),
                &format!("vendor-{i}\n"),
                0o644,
            )?;
        }
    }
    if kind.has(Kind::Units) {
        put(
            "/usr/lib/systemd/system/vendor.service",
            "[Service]\nExecStart=/bin/true\n",
            0o644,
        )?;
    }
    if kind.has(Kind::Os) {
        put("/run/ostree-booted", "", 0o644)?;
    }
    if kind == Kind::Certs {
        put("/etc/kubernetes/kubeconfig", &kubeconfig(), 0o600)?;
        for i in [0, REGISTRIES + 5] {
            // Folders no bundle names: the writer removes them.
            put(
                &format!("/etc/docker/certs.d/old{i}.example/ca.crt"),
                &pem(&format!("old{i}")),
                0o644,
            )?;
        }
        put(
            "/etc/docker/certs.d/README",
            "a plain file is kept\n",
            0o644,
        )?;
    }
    Ok(())
}

fn file(path: &str, contents: &str, mode: u32, user: Option<&str>) -> Value {
    let mut f = json!({
        "path": path,
        "mode": mode,
        "overwrite": true,
        "contents": {"source": encode_percent(contents.as_bytes())},
    });
    if let Some(u) = user {
        f["user"] = json!({"name": u});
        f["group"] = json!({"name": u});
    }
    f
}

fn files(tag: &str) -> Vec<Value> {
    let b = tag == "B";
    let mut out = Vec::new();
    for i in 0..FILES {
        let path = format!("/etc/crash/d{}/f{i}", i / 30);
        let (contents, mode, user) = match i % 4 {
            0 => (format!("same-{i}\n"), 0o644, None),
            1 => (format!("{tag}-{i}\nsecond line {tag} {i}\n"), 0o644, None),
            2 => (format!("mode-{i}\n"), if b { 0o600 } else { 0o640 }, None),
            _ => (
                format!("owner-{i}\n"),
                0o644,
                Some(if b { "core" } else { "root" }),
            ),
        };
        out.push(file(&path, &contents, mode, user));
    }
    for i in 0..20 {
        out.push(file(
            &format!("/etc/crash/{tag}only/deep{}/{i}", i % 3),
            &format!("{tag} only {i}\n"),
            0o644,
            None,
        ));
    }
    if b {
        for i in 0..VENDOR {
            out.push(file(
                &format!("/etc/crash/vend/v{i}"),
                &format!("B-vend-{i}\n"),
                0o644,
                None,
            ));
        }
    }
    out
}

fn unit(name: &str, contents: Option<String>, enabled: Option<bool>, mask: Option<bool>) -> Value {
    let mut u = json!({"name": name});
    if let Some(c) = contents {
        u["contents"] = json!(c);
    }
    if let Some(e) = enabled {
        u["enabled"] = json!(e);
    }
    if let Some(m) = mask {
        u["mask"] = json!(m);
    }
    u
}

fn service(tag: &str, n: &str) -> String {
    format!("[Unit]\nDescription={n} at {tag}\n[Service]\nExecStart=/bin/echo {tag}\n[Install]\nWantedBy=multi-user.target\n")
}

fn units(tag: &str) -> Vec<Value> {
    let b = tag == "B";
    let mut out = vec![
        // Contents change, enabled in A, disabled in B.
        unit("a.service", Some(service(tag, "a")), Some(!b), None),
        // Same contents, disabled in A, enabled in B.
        unit("b.service", Some(service("AB", "b")), Some(b), None),
        // A vendor unit enabled only in B.
        unit("vendor.service", None, Some(b), None),
    ];
    if b {
        // Only in B, with a drop-in.
        let mut d = unit("d.service", Some(service(tag, "d")), Some(true), None);
        d["dropins"] = json!([{"name": "10-d.conf", "contents": "[Service]\nEnvironment=D=1\n"}]);
        out.push(d);
        // Masked in B.
        out.push(unit("e.service", None, None, Some(true)));
        // Unmasked in B with contents.
        out.push(unit(
            "g.service",
            Some(service(tag, "g")),
            Some(true),
            Some(false),
        ));
    } else {
        // Only in A: removed (and preset) by B.
        out.push(unit("c.service", Some(service(tag, "c")), Some(true), None));
        out.push(unit("e.service", Some(service(tag, "e")), Some(true), None));
        out.push(unit("g.service", None, None, Some(true)));
    }
    // Drop-ins: one changes, one only in B.
    let mut f = unit("f.service", Some(service("AB", "f")), Some(true), None);
    let mut dropins =
        vec![json!({"name": "10-a.conf", "contents": format!("[Service]\nEnvironment=F={tag}\n")})];
    if b {
        dropins.push(json!({"name": "20-b.conf", "contents": "[Service]\nEnvironment=G=1\n"}));
    }
    f["dropins"] = json!(dropins);
    out.push(f);
    out
}

/// The rendered MachineConfig `rendered-crash-<kind>-<tag>` as JSON.
pub fn machine_config(kind: Kind, tag: &str) -> Value {
    let b = tag == "B";
    let mut ign = json!({"ignition": {"version": "3.4.0"}});
    if kind.has(Kind::Files) {
        ign["storage"] = json!({"files": files(tag)});
    }
    if kind.has(Kind::Units) {
        ign["systemd"] = json!({"units": units(tag)});
    }
    let mut core = json!({"name": "core"});
    let mut users = false;
    if kind.has(Kind::Ssh) {
        core["sshAuthorizedKeys"] = if b {
            json!([
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBBBB b1@example",
                "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABBBBB b2@example"
            ])
        } else {
            json!(["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAA a@example"])
        };
        users = true;
    }
    if kind.has(Kind::Password) {
        core["passwordHash"] = json!(format!("$6$salt{tag}$hash-of-the-{tag}-password"));
        users = true;
    }
    if users {
        ign["passwd"] = json!({"users": [core]});
    }
    let mut spec = json!({"config": ign});
    if kind.has(Kind::Os) {
        spec["osImageURL"] = json!(if b { IMAGE_B } else { IMAGE_A });
        spec["kernelArguments"] = json!(if b {
            vec!["crash=b", "both=1"]
        } else {
            vec!["crash=a", "both=1"]
        });
    }
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": config_name(kind, tag)},
        "spec": spec,
    })
}

/// The rendered config's name.
pub fn config_name(kind: Kind, tag: &str) -> String {
    format!("rendered-crash-{}-{tag}", kind.name())
}

fn b64(s: &str) -> String {
    mco_render::gocompat::base64::std_encode(s.as_bytes())
}

/// A PEM certificate block whose body names `tag` (not a real certificate: the writer only
/// splits and compares them).
pub fn pem(tag: &str) -> String {
    let body = b64(&format!("certificate {tag} {}", "x".repeat(600)));
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

fn kubeconfig() -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://api-int.example:6443\n    certificate-authority-data: {}\ncontexts:\n- name: kubelet\n  context:\n    cluster: local\n    user: kubelet\ncurrent-context: kubelet\nusers:\n- name: kubelet\n  user: {{}}\n",
        b64(&pem("installer"))
    )
}

/// The ControllerConfig at `tag`: the kubelet and cloud CAs, and registry bundles (some only
/// in A, some only in B, the shared ones with other bytes).
pub fn controller_config(tag: &str) -> Value {
    let range = if tag == "B" {
        10..REGISTRIES + 10
    } else {
        0..REGISTRIES
    };
    let bundles: Vec<Value> = range
        .map(|i| {
            json!({"file": format!("reg{i}.example..5000"), "data": b64(&pem(&format!("{tag}-reg{i}")))})
        })
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "ControllerConfig",
        "metadata": {"name": "machine-config-controller"},
        "spec": {
            "kubeAPIServerServingCAData": b64(&format!("{}{}", pem(&format!("{tag}-kube")), pem("kube-2"))),
            "cloudProviderCAData": b64(&pem(&format!("{tag}-cloud"))),
            "imageRegistryBundleData": bundles,
        },
    })
}

/// The `kubeconfig-data` CA bundle at `tag`.
pub fn kubeconfig_ca(tag: &str) -> String {
    format!("{}{}", pem(&format!("{tag}-api")), pem("api-2"))
}
