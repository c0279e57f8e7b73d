//! `mco-render generate` and `render` on the cluster-config example: an Image config, an
//! ImageDigestMirrorSet and an ImageTagMirrorSet (our own template content).

use serde_json::Value;

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{list_items, only_item, run};

const EXAMPLE: &str = "examples/cluster-config";

fn file_text(mc: &Value, path: &str) -> Option<String> {
    let files = mc.pointer("/spec/config/storage/files")?.as_array()?;
    let f = files.iter().rev().find(|f| f["path"] == path)?;
    let src = f["contents"]["source"].as_str()?;
    let bytes = mco_ignition::dataurl::decode_contents(src, None).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[test]
fn generate_cluster_config_snapshot() {
    let (code, out, err) = run(&["generate", EXAMPLE]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("generate_cluster_config_yaml", out);
}

/// The generated files, decoded, for reading.
#[test]
fn generate_cluster_config_files_snapshot() {
    let (code, out, err) = run(&["generate", "-o", "json", EXAMPLE]);
    assert_eq!(code, 0, "{err}");
    let v = list_items(&out);
    let mut text = String::new();
    for mc in &v {
        let name = mc["metadata"]["name"].as_str().unwrap_or("");
        for f in mc["spec"]["config"]["storage"]["files"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let path = f["path"].as_str().unwrap_or("");
            text.push_str(&format!("=== {name} {path}\n"));
            text.push_str(&file_text(mc, path).unwrap_or_default());
        }
    }
    insta::assert_snapshot!("generate_cluster_config_files", text);
}

#[test]
fn only_built_in_pools_get_a_registries_config() {
    let (code, out, err) = run(&["generate", "-o", "json", EXAMPLE]);
    assert_eq!(code, 0, "{err}");
    let v = list_items(&out);
    let names: Vec<&str> = v
        .iter()
        .filter_map(|m| m.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(
        names,
        [
            "99-master-generated-registries",
            "99-worker-generated-registries"
        ]
    );
    assert_eq!(v[1]["metadata"]["ownerReferences"][0]["kind"], "Image");
}

#[test]
fn render_folds_the_registries_config_into_the_pools() {
    let (code, out, err) = run(&["generate", "-o", "json", EXAMPLE]);
    assert_eq!(code, 0, "{err}");
    let generated = list_items(&out);
    let want = file_text(&generated[1], "/etc/containers/registries.conf").expect("generated");
    for pool in ["worker", "infra"] {
        let (code, out, err) = run(&["render", "--pool", pool, "-o", "json", EXAMPLE]);
        assert_eq!(code, 0, "{err}");
        let (rendered, _) = only_item(&out);
        assert_eq!(
            file_text(&rendered, "/etc/containers/registries.conf").as_deref(),
            Some(want.as_str()),
            "{pool}"
        );
    }
}

#[test]
fn a_bad_mirror_set_names_itself_and_fails() {
    let dir = std::env::temp_dir().join(format!("mco-cluster-config-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(EXAMPLE);
    for e in std::fs::read_dir(&root).expect("example").flatten() {
        std::fs::copy(e.path(), dir.join(e.file_name())).expect("copy");
    }
    std::fs::write(
        dir.join("30-bad.yaml"),
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  name: bad\nspec:\n  imageDigestMirrors:\n  - source: quay.io//app\n    mirrors: [mirror.example.net/app]\n",
    )
    .expect("write");
    let dir_arg = dir.to_string_lossy().into_owned();
    let (code, out, err) = run(&["generate", "-o", "json", &dir_arg]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ImageDigestMirrorSet \"bad\": could not Create/Update MachineConfig: could not update registries config with new changes: invalid format for source \"quay.io//app\""),
        "{err}"
    );
    assert!(list_items(&out).is_empty(), "{out}");
}
