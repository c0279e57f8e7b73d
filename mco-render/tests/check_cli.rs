//! `mco-render render --out-dir DIR --check`: exit 0 on a fresh copy, 1 with a diff on a stale,
//! incomplete or overfull one, 2 on unreadable input; nothing is written.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

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

    // A pool that no longer renders leaves an extra file.
    let (code, stdout, stderr) = run(&[
        "render",
        "--out-dir",
        &out_s,
        "--check",
        "--pool",
        "worker",
        "examples/cluster",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("master.yaml (extra: no pool renders it)"),
        "{stdout}"
    );
    assert!(stderr.contains("0 stale, 0 missing, 2 extra"), "{stderr}");
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
