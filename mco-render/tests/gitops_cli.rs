//! examples/gitops: the committed rendered copies are what `render --out-dir` writes today, and
//! `--check` fails on a copy edited by hand.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

#[test]
fn committed_rendered_copies_are_fresh() {
    for c in ["prod", "staging"] {
        let out = format!("examples/gitops/rendered/{c}");
        let src = format!("examples/gitops/clusters/{c}");
        let (code, stdout, stderr) =
            run(&["render", "--strict", "--out-dir", &out, "--check", &src]);
        assert_eq!(
            code, 0,
            "{out} is stale: run `mco-render render --out-dir {out} {src}`\n{stdout}{stderr}"
        );
        // As the pipeline validates: each cluster on its own, strictly, without a warning.
        let (code, stdout, stderr) = run(&["validate", "--strict", "--format", "github", &src]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
        assert!(!stdout.contains("::"), "{stdout}");
    }
}

#[test]
fn check_fails_on_a_stale_copy() {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let out = tmp.path().display().to_string();
    let src = "examples/gitops/clusters/prod";
    let (code, _, stderr) = run(&["render", "--out-dir", &out, src]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, _) = run(&["render", "--out-dir", &out, "--check", src]);
    assert_eq!(code, 0);
    let worker = tmp.path().join("worker.yaml");
    let Ok(text) = std::fs::read_to_string(&worker) else {
        panic!("{}", worker.display());
    };
    if let Err(e) = std::fs::write(&worker, text.replace("hugepages=512", "hugepages=256")) {
        panic!("{e}");
    }
    let (code, stdout, _) = run(&["render", "--out-dir", &out, "--check", src]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("-  - hugepages=256\n+  - hugepages=512\n"),
        "{stdout}"
    );
}
