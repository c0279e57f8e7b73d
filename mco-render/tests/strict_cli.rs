//! Manifests read as `kubectl apply` and the API server read them: typos (a kind or version not
//! served, an unknown field, a document that is no object), an object defined in two files
//! (the later wins), warned about by every command that reads manifests and refused under
//! `--strict`; plain `validate` runs the lints and reports read, Butane and type errors in
//! every format.
//!
//! Lines: a finding about a field is at the field's line (the YAML reader records where every
//! field stands, `Location::positions`).

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run_in;
use std::path::Path;

const POOL: &str = "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: \"\"
";

/// Line 8 is `kernelArgs:`.
const TYPOS: &str = "apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-kargs
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  kernelArgs:
    - nosmt
  config:
    ignition:
      version: 3.5.0
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfg
metadata:
  name: 99-worker-typo
---
apiVersion: machineconfiguration.openshift.io/v2
kind: MachineConfig
metadata:
  name: 99-worker-v2
---
just a string
---
metadata:
  name: no-kind
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: another-group-is-left-alone
spec:
  anything: 1
";

fn mc(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: {name}\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n{spec}"
    )
}

/// Line 16 (of the MachineConfig) is `mode: 444`, line 18 `kernelArguments:`. The unit
/// names without a type suffix are `examples/invalid`'s (an error of Ignition's as well).
const LINTS: &str = "    config:
      ignition:
        version: 3.5.0
      storage:
        files:
          - path: /usr/local/bin/ok
            mode: 493
          - path: /etc/motd
            mode: 444
          - path: /usr/bin/tool
    kernelArguments:
      - rd.break
";

/// A temporary folder holding `files` (relative path, contents).
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    for (rel, text) in files {
        let path = tmp.path().join(rel);
        if let Some(dir) = path.parent() {
            if let Err(e) = std::fs::create_dir_all(dir) {
                panic!("{e}");
            }
        }
        if let Err(e) = std::fs::write(&path, text) {
            panic!("{}: {e}", path.display());
        }
    }
    tmp
}

/// `validate` in the three formats: exit code, stdout and stderr of each, one text.
fn validate_all_formats(dir: &Path, extra: &[&str]) -> String {
    let mut out = String::new();
    for format in ["text", "github", "json"] {
        let mut args = vec!["validate", "--format", format];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = run_in(dir, &args);
        out.push_str(&format!(
            "### {format}: exit {code}\n--- stdout\n{stdout}--- stderr\n{stderr}\n"
        ));
    }
    out
}

#[test]
fn typos_are_warnings_and_errors_under_strict() {
    let tmp = tree(&[("pools.yaml", POOL), ("mcs.yaml", TYPOS)]);
    insta::assert_snapshot!(validate_all_formats(tmp.path(), &["."]));
    insta::assert_snapshot!(
        "typos_strict",
        validate_all_formats(tmp.path(), &["--strict", "."])
    );
}

#[test]
fn every_command_reading_manifests_warns_and_refuses_under_strict() {
    let tmp = tree(&[("pools.yaml", POOL), ("mcs.yaml", TYPOS)]);
    let dir = tmp.path();
    let (code, stdout, stderr) = run_in(dir, &["render", "."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("kind: MachineConfig"), "{stdout}");
    assert_eq!(stderr.lines().count(), 5, "{stderr}");
    assert!(
        stderr.lines().all(|l| l.starts_with("warning: ")),
        "{stderr}"
    );
    let (code, stdout, stderr) = run_in(dir, &["render", "--strict", "."]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    insta::assert_snapshot!(stderr);

    // The other readers: the same notices, the same refusal.
    let status = ["status", "--strict", "--cluster-dir", "."];
    let schedule = ["schedule", "--strict", "--cluster-dir", ".", "mcs.yaml"];
    let report = ["report", "--strict", ".", "."];
    let templates = ["generate", "--strict", "."];
    for args in [&status[..], &schedule, &report, &templates] {
        let (code, _, stderr) = run_in(dir, args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("MachineConfg \"99-worker-typo\": no matches for kind")
                && stderr.contains("error: ./mcs.yaml:"),
            "{args:?}: {stderr}"
        );
        let without: Vec<&str> = args.iter().copied().filter(|a| *a != "--strict").collect();
        let (_, _, stderr) = run_in(dir, &without);
        assert!(
            stderr.contains("MachineConfg \"99-worker-typo\": no matches for kind")
                && stderr.contains("warning: ./mcs.yaml:"),
            "{without:?}: {stderr}"
        );
    }
}

#[test]
fn the_later_of_two_objects_with_one_name_wins() {
    let tmp = tree(&[
        ("00-pools.yaml", POOL),
        (
            "a/99-kargs.yaml",
            &mc("99-worker-kargs", "  kernelArguments: [from-a]\n"),
        ),
        (
            "b/99-kargs.yaml",
            &mc("99-worker-kargs", "  kernelArguments: [from-b]\n"),
        ),
    ]);
    let dir = tmp.path();
    let (code, stdout, stderr) = run_in(dir, &["render", "-o", "json", "."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("from-b") && !stdout.contains("from-a"),
        "{stdout}"
    );
    insta::assert_snapshot!(stderr, @r#"warning: ./b/99-kargs.yaml:4: MachineConfig "99-worker-kargs": also defined in ./a/99-kargs.yaml:4: kubectl apply -f applies both, this one last, so it replaces that one"#);
    insta::assert_snapshot!(validate_all_formats(dir, &["--strict", "."]));
}

#[test]
fn plain_validate_runs_the_lints() {
    let tmp = tree(&[("99-lints.yaml", &mc("99-worker-lints", LINTS))]);
    insta::assert_snapshot!(validate_all_formats(tmp.path(), &["99-lints.yaml"]));
}

#[test]
fn read_errors_in_every_format() {
    let bad_yaml = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-x\nspec:\n  kernelArguments: [a\n  extensions: []\n";
    let bad_type = mc("99-worker-kargs", "  kernelArguments: nosmt\n");
    let bad_butane = "variant: openshift\nversion: 4.16.0\nmetadata:\n  name: 99-worker-motd\n  labels:\n    machineconfiguration.openshift.io/role: worker\nstorage:\n  files:\n    - path: etc/motd\n      contents:\n        inline: hi\n";
    let tmp = tree(&[
        ("yaml/mc.yaml", bad_yaml),
        ("type/mc.yaml", &bad_type),
        ("butane/99-motd.bu", bad_butane),
    ]);
    let mut all = String::new();
    for case in ["yaml", "type", "butane"] {
        all.push_str(&format!("## {case}\n"));
        all.push_str(&validate_all_formats(tmp.path(), &[case]));
    }
    insta::assert_snapshot!(all);
}

/// The finding of `validate --format json` at `index`: (line, message).
fn json_finding(dir: &Path, path: &str, index: usize) -> (u64, String) {
    let (_, stdout, _) = run_in(dir, &["validate", "--format", "json", path]);
    let v: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {stdout}"),
    };
    let f = &v["findings"][index];
    (
        f["line"].as_u64().unwrap_or(0),
        f["message"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn findings_about_a_field_are_at_its_line() {
    let tmp = tree(&[
        ("mcs.yaml", TYPOS),
        (
            "type/mc.yaml",
            &mc("99-worker-kargs", "  kernelArguments: nosmt\n"),
        ),
        ("99-lints.yaml", &mc("99-worker-lints", LINTS)),
    ]);
    let dir = tmp.path();
    let (line, message) = json_finding(dir, "mcs.yaml", 0);
    assert_eq!(line, 8, "{message}");
    let (line, message) = json_finding(dir, "type", 0);
    assert_eq!(line, 8, "{message}");
    let (line, message) = json_finding(dir, "99-lints.yaml", 0);
    assert_eq!(line, 16, "{message}");
}
