//! `mco-render render --out-dir DIR --check`: exit 0 on a fresh copy, 1 with a diff on a stale,
//! incomplete or overfull one (naming the files to delete), 2 on unreadable input; nothing is
//! written. `render --out-dir DIR` itself removes the rendered configs no pool renders.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{run, run_in};

fn dir_arg(dir: &std::path::Path) -> String {
    dir.display().to_string()
}

#[test]
fn check_passes_on_a_fresh_copy_and_fails_on_a_stale_one() {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let out = tmp.path().join("rendered");
    let out_s = dir_arg(&out);
    // Nothing there yet: every pool's file is missing, and --check creates nothing.
    let (code, stdout, stderr) =
        run(&["render", "--out-dir", &out_s, "--check", "examples/cluster"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("worker.yaml (missing):\n--- /dev/null\n+++ b/worker.yaml"),
        "{stdout}"
    );
    assert!(stderr.contains("0 stale, 3 missing, 0 extra"), "{stderr}");
    assert!(!out.exists());

    let (code, _, stderr) = run(&["render", "--out-dir", &out_s, "examples/cluster"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) =
        run(&["render", "--out-dir", &out_s, "--check", "examples/cluster"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(
        stdout.ends_with("up to date (3 rendered files)\n"),
        "{stdout}"
    );

    // The sources moved on (examples/cluster-next), the copy did not: stale.
    let (code, stdout, stderr) = run(&[
        "render",
        "--out-dir",
        &out_s,
        "--check",
        "examples/cluster-next",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("worker.yaml (stale):\n--- a/worker.yaml\n+++ b/worker.yaml\n@@"),
        "{stdout}"
    );
    assert!(stdout.contains("-  name: rendered-worker-"), "{stdout}");
    assert!(stderr.contains("2 stale, 0 missing, 0 extra"), "{stderr}");

    // --pool speaks for its pool alone: the other pools' files are not extra.
    let (code, stdout, stderr) = run(&[
        "render",
        "--out-dir",
        &out_s,
        "--check",
        "--pool",
        "master",
        "examples/cluster",
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(
        stdout.ends_with("up to date (1 rendered files)\n"),
        "{stdout}"
    );
}

/// A copy of examples/cluster in `dir` without the infra pool (its MachineConfig stays).
fn cluster_without_infra(dir: &std::path::Path) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster");
    let Ok(entries) = std::fs::read_dir(&src) else {
        panic!("examples/cluster");
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        panic!("{e}");
    }
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            panic!("{}", e.path().display());
        };
        let text = if e.file_name() == "00-pools.yaml" {
            let docs: Vec<&str> = text.split("\n---\n").collect();
            assert!(docs[2].contains("name: infra"), "{text}");
            format!("{}\n---\n{}\n", docs[0], docs[1])
        } else {
            text
        };
        if let Err(e) = std::fs::write(dir.join(e.file_name()), text) {
            panic!("{e}");
        }
    }
}

#[test]
fn a_pool_that_no_longer_renders_is_named_by_check_and_removed_by_render() {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let out = tmp.path().join("rendered");
    let sources = tmp.path().join("cluster");
    cluster_without_infra(&sources);
    let (code, _, stderr) = run(&["render", "--out-dir", &dir_arg(&out), "examples/cluster"]);
    assert_eq!(code, 0, "{stderr}");
    // Files render never wrote, which stay whatever happens.
    let kustomization = "kind: Kustomization\nresources: [master.yaml, worker.yaml]\n";
    let own = [
        ("README.md", "Rendered by mco-render.\n"),
        ("kustomization.yaml", kustomization),
    ];
    for (name, text) in own {
        if let Err(e) = std::fs::write(out.join(name), text) {
            panic!("{e}");
        }
    }

    // --pool writes its pool's file and removes nothing.
    let (code, stdout, stderr) = run_in(
        tmp.path(),
        &[
            "render",
            "--out-dir",
            "rendered",
            "--pool",
            "worker",
            "cluster",
        ],
    );
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert!(out.join("infra.yaml").exists());

    // The infra pool is gone from the sources: its file is extra, and the check says which
    // files the command it names deletes.
    let check = ["render", "--out-dir", "rendered", "--check", "cluster"];
    let (code, stdout, stderr) = run_in(tmp.path(), &check);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.starts_with("Diff in rendered/infra.yaml (extra: no pool renders it):\n--- a/infra.yaml\n+++ /dev/null\n"),
        "{stdout}"
    );
    insta::assert_snapshot!("extra_pool_check", stderr);

    // That command: it removes infra.yaml, says so, and leaves the other files alone.
    let (code, stdout, stderr) =
        run_in(tmp.path(), &["render", "--out-dir", "rendered", "cluster"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!("extra_pool_render", format!("{stdout}{stderr}"));
    assert!(!out.join("infra.yaml").exists());
    for (name, text) in own {
        assert_eq!(
            std::fs::read_to_string(out.join(name)).ok().as_deref(),
            Some(text)
        );
    }
    let (code, stdout, stderr) = run_in(tmp.path(), &check);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "rendered: up to date (2 rendered files)\n");
    assert_eq!(
        stderr,
        "note: rendered/kustomization.yaml: not a rendered MachineConfig (render does not write it): neither compared nor removed\n"
    );
}

#[test]
fn check_exit_codes_for_bad_input() {
    let (code, _, stderr) = run(&[
        "render",
        "--out-dir",
        "/nonexistent",
        "--check",
        "no/such/dir",
    ]);
    assert_eq!(code, 2, "{stderr}");
    // --check without --out-dir is a usage error.
    let (code, _, _) = run(&["render", "--check", "examples/cluster"]);
    assert_eq!(code, 2);
    // Inputs that do not render are exit 1, as for render itself.
    let (code, _, stderr) = run(&[
        "render",
        "--out-dir",
        "/nonexistent",
        "--check",
        "examples/cluster",
        "examples/invalid",
    ]);
    assert_eq!(code, 1, "{stderr}");
}
