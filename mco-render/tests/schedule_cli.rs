//! `mco-render schedule`: the rollout preview of a cluster dump and a change, with `--now` so
//! the windows give the same schedule every run.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

const CLUSTER: &str = "examples/rollout/cluster";
const CHANGE: &str = "examples/rollout/changes/99-worker-kargs.yaml";
const NOW: &str = "2026-12-05T12:00:00Z";

fn transcript(args: &[&str]) -> String {
    let (code, stdout, stderr) = run(args);
    format!(
        "$ mco-render {}\n{stderr}{stdout}exit {code}\n",
        args.join(" ")
    )
}

#[test]
fn schedule_text() {
    let mut out = transcript(&[
        "schedule",
        "--cluster-dir",
        CLUSTER,
        "--now",
        NOW,
        "--node-minutes",
        "15",
        CHANGE,
    ]);
    out.push('\n');
    // Without a change nothing rolls out.
    out.push_str(&transcript(&[
        "schedule",
        "--cluster-dir",
        CLUSTER,
        "--now",
        NOW,
    ]));
    insta::assert_snapshot!(out);
}

#[test]
fn schedule_json() {
    let (code, stdout, stderr) = run(&[
        "schedule",
        "--cluster-dir",
        CLUSTER,
        "--pool",
        "worker",
        "--now",
        NOW,
        "-o",
        "json",
        CHANGE,
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let v: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {stdout}"),
    };
    insta::assert_json_snapshot!(v);
}

#[test]
fn schedule_refuses_an_unknown_pool_and_reports_a_broken_policy() {
    let (code, _, stderr) = run(&[
        "schedule",
        "--cluster-dir",
        CLUSTER,
        "--pool",
        "infra",
        "--now",
        NOW,
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no MachineConfigPool named \"infra\""),
        "{stderr}"
    );
    let dir = std::env::temp_dir().join(format!("mco-schedule-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let bad = dir.join("policy.yaml");
    let text = "apiVersion: rollout.mco.dev/v1alpha1\nkind: RolloutPolicy\nmetadata:\n  name: worker\nspec:\n  canary:\n    soak: soon\n";
    assert!(std::fs::write(&bad, text).is_ok());
    let bad = bad.to_string_lossy().into_owned();
    let (code, _, stderr) = run(&[
        "schedule",
        "--cluster-dir",
        CLUSTER,
        "--now",
        NOW,
        CHANGE,
        &bad,
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: pool worker: RolloutPolicy worker: spec.canary.soak:"),
        "{stderr}"
    );
}
