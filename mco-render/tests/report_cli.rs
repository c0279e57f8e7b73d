//! `mco-render report BASE HEAD`: the change report in its three formats, on the examples:
//! `examples/cluster` -> `examples/cluster-next` (machineCount, no policy), the admission dump
//! with a kernel-arguments change (the plain estimate), and the rollout dump with the same kind
//! of change (Nodes and a RolloutPolicy: the schedule's summary), and the GitOps repository's
//! prod cluster with a kernel-arguments change (manifests only: the node count is unknown until
//! `--nodes` or `--cluster-dir` gives it).

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;
use std::path::{Path, PathBuf};

const NOW: &str = "2026-12-05T12:00:00Z";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// A head tree: `base`'s files plus `changes`, in a temp dir.
fn head_tree(base: &str, changes: &[&str]) -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let copy = |from: &Path| {
        let Some(name) = from.file_name() else {
            panic!("{} has no name", from.display());
        };
        if let Err(e) = std::fs::copy(from, tmp.path().join(name)) {
            panic!("{}: {e}", from.display());
        }
    };
    let Ok(entries) = std::fs::read_dir(repo(base)) else {
        panic!("{base}");
    };
    for e in entries.flatten() {
        copy(&e.path());
    }
    for c in changes {
        copy(&repo(c));
    }
    tmp
}

/// Copies `from` into `to`, folders and all.
fn copy_tree(from: &Path, to: &Path) {
    if let Err(e) = std::fs::create_dir_all(to) {
        panic!("{}: {e}", to.display());
    }
    let Ok(entries) = std::fs::read_dir(from) else {
        panic!("{}", from.display());
    };
    for e in entries.flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else if let Err(err) = std::fs::copy(e.path(), &target) {
            panic!("{}: {err}", e.path().display());
        }
    }
}

const GITOPS_PROD: &str = "examples/gitops/clusters/prod";

/// The GitOps repository's prod cluster with fewer huge pages on the workers, in a temp dir.
fn gitops_head() -> tempfile::TempDir {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    copy_tree(&repo(GITOPS_PROD), tmp.path());
    let mc = tmp
        .path()
        .join("machineconfigs/05-worker-kernelarg-hugepages.yaml");
    let Ok(text) = std::fs::read_to_string(&mc) else {
        panic!("{}", mc.display());
    };
    let changed = text.replace("hugepages=512", "hugepages=128");
    assert_ne!(changed, text, "{} changes", mc.display());
    if let Err(e) = std::fs::write(&mc, changed) {
        panic!("{}: {e}", mc.display());
    }
    tmp
}

fn transcript(args: &[&str]) -> String {
    let (code, stdout, stderr) = run(args);
    let shown: Vec<&str> = args
        .iter()
        .map(|a| if a.starts_with('/') { "HEAD" } else { a })
        .collect();
    format!(
        "$ mco-render {}\n{stderr}{stdout}exit {code}\n",
        shown.join(" ")
    )
}

fn all_formats(base: &str, head: &str, extra: &[&str]) -> String {
    let mut out = String::new();
    for format in ["text", "markdown", "json"] {
        let mut args = vec!["report", base, head, "-o", format];
        args.extend_from_slice(extra);
        out.push_str(&transcript(&args));
        out.push('\n');
    }
    out
}

#[test]
fn report_cluster_to_cluster_next() {
    insta::assert_snapshot!(all_formats(
        "examples/cluster",
        "examples/cluster-next",
        &["--node-minutes", "10"]
    ));
}

#[test]
fn report_admission_kernel_arguments() {
    let head = head_tree(
        "examples/admission/cluster",
        &["examples/admission/changes/99-worker-kargs.yaml"],
    );
    let head_s = head.path().display().to_string();
    insta::assert_snapshot!(all_formats("examples/admission/cluster", &head_s, &[]));
}

#[test]
fn report_rollout_policy_schedule() {
    let head = head_tree(
        "examples/rollout/cluster",
        &["examples/rollout/changes/99-worker-kargs.yaml"],
    );
    let head_s = head.path().display().to_string();
    insta::assert_snapshot!(all_formats(
        "examples/rollout/cluster",
        &head_s,
        &["--now", NOW, "--node-minutes", "15"]
    ));
}

#[test]
fn report_exit_codes() {
    // A head that fails to render: the report says so, exit 1.
    let head = head_tree(
        "examples/admission/cluster",
        &["examples/admission/changes/99-worker-broken.yaml"],
    );
    let head_s = head.path().display().to_string();
    let (code, stdout, stderr) = run(&["report", "examples/admission/cluster", &head_s]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("pool worker: fails to render"), "{stdout}");
    // Unreadable trees and unknown pools are input errors.
    let (code, _, _) = run(&["report", "no/such/tree", "examples/cluster"]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&[
        "report",
        "examples/cluster",
        "examples/cluster",
        "--pool",
        "nope",
    ]);
    assert_eq!(code, 2);
    // No change: exit 0.
    let (code, stdout, _) = run(&["report", "examples/cluster", "examples/cluster"]);
    assert_eq!(code, 0);
    assert!(
        stdout.lines().all(|l| l.contains(": unchanged (")),
        "{stdout}"
    );
}

#[test]
fn report_gitops_unknown_node_count() {
    let head = gitops_head();
    let head_s = head.path().display().to_string();
    let out = all_formats(GITOPS_PROD, &head_s, &["--now", NOW]);
    assert!(!out.contains(" 0 nodes"), "{out}");
    assert!(!out.contains("every node is on"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn report_gitops_nodes_given() {
    let head = gitops_head();
    let head_s = head.path().display().to_string();
    insta::assert_snapshot!(all_formats(
        GITOPS_PROD,
        &head_s,
        &["--now", NOW, "--nodes", "worker=30"]
    ));
}

#[test]
fn report_gitops_node_count_from_a_dump() {
    let head = gitops_head();
    let head_s = head.path().display().to_string();
    // The rollout dump has 7 worker Nodes; `--nodes` takes precedence over it.
    let args = [
        "report",
        GITOPS_PROD,
        &head_s,
        "--now",
        NOW,
        "--cluster-dir",
        "examples/rollout/cluster",
    ];
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  nodes: 7 nodes\n"), "{stdout}");
    assert!(
        stdout.contains("1 canary, soak 1h, 6 batches of 1 at maxUnavailable 10% (1)"),
        "{stdout}"
    );
    let mut given = args.to_vec();
    given.extend(["--nodes", "worker=12"]);
    let (code, stdout, stderr) = run(&given);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  nodes: 12 nodes (given)\n"), "{stdout}");
    // A dump that cannot be read, a malformed count and an unknown pool are input errors.
    for bad in [
        &["--cluster-dir", "no/such/dump"][..],
        &["--nodes", "worker"],
        &["--nodes", "worker=-1"],
        &["--nodes", "nope=3"],
    ] {
        let mut a = vec!["report", GITOPS_PROD, &head_s];
        a.extend_from_slice(bad);
        let (code, _, stderr) = run(&a);
        assert_eq!(code, 2, "{bad:?}: {stderr}");
    }
}
