//! Each binary of the crate, run as a user runs it, says what it reproduces (`--version`: the
//! releases, the default one, the Butane version matched, the upstream commit) and what it is
//! (`--help`).

use std::process::Command;

/// Each binary, the name it gives itself, and words of its `--help` that say what it is.
const BINARIES: [(&str, &str, &[&str]); 4] = [
    (
        env!("CARGO_BIN_EXE_machine-config-controller"),
        "machine-config-controller",
        &[
            "The machine-config-controller: renders each MachineConfigPool's MachineConfigs",
            "admission webhook (--webhook-listen)",
        ],
    ),
    (
        env!("CARGO_BIN_EXE_machine-config-server"),
        "machine-config-server",
        &[
            "The machine-config-server: serves each pool's rendered Ignition config",
            "Two modes: --dir DIR",
            "--cluster serves the cluster's pools",
        ],
    ),
    (
        env!("CARGO_BIN_EXE_machine-config-operator"),
        "machine-config-operator",
        &[
            "The machine-config-operator: deploys the machine-config-controller, -server and -daemon",
            "--release-version <RELEASE_VERSION>",
        ],
    ),
    (
        env!("CARGO_BIN_EXE_kubectl-mco"),
        "kubectl mco",
        &["Where each pool's rollout stands, why it is stuck"],
    ),
];

fn run(bin: &str, arg: &str) -> String {
    let out = Command::new(bin).arg(arg).output().unwrap();
    assert!(out.status.success(), "{bin} {arg}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_binary_names_the_releases_it_reproduces_and_the_butane_it_matches() {
    for (bin, name, _) in BINARIES {
        let text = run(bin, "--version");
        assert_eq!(
            text,
            format!("{name} {}\n", mco_render::about::long_version()),
            "{name}"
        );
        assert!(
            text.contains("releases reproduced: 4.14, 4.15, 4.16, 4.17, 4.18, 4.19, 4.20, 4.21, 4.22 (default 4.22)\n")
                && text.contains("Butane matched: v0.29.0-3-gcb34e120")
                && text.contains(mco_render::CONTROLLER_VERSION),
            "{name}: {text}"
        );
        // `-V` is the short form: the name and the crate version.
        assert_eq!(
            run(bin, "-V"),
            format!("{name} {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn every_binary_says_what_it_is() {
    for (bin, name, words) in BINARIES {
        let help = run(bin, "--help");
        for w in words {
            assert!(help.contains(w), "{name} --help lacks {w:?}:\n{help}");
        }
    }
    // The operator's release version is `--release-version`; `--version VALUE`, the spelling
    // of earlier builds, still sets it (a deployment passing it keeps running, warned), where
    // a bare `--version` prints the build's.
    let out = Command::new(env!("CARGO_BIN_EXE_machine-config-operator"))
        .args([
            "--version",
            "1.2.3",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "machine-config-operator: --version 1.2.3 is the older spelling of --release-version 1.2.3\n"
        ) && stderr.contains("/nonexistent/kubeconfig"),
        "{out:?}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_machine-config-operator"))
        .args(["--version", "1.2.3", "--release-version", "1.2.4"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{out:?}"
    );
}
