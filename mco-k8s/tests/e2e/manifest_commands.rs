//! The containers in manifests/ run this crate's binaries with arguments those binaries
//! accept: each command is started (with no reachable cluster, and the server moved to
//! 127.0.0.1 and a free port) and must fail for want of a cluster, not on its arguments.

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// This crate's binaries, by the name a manifest runs.
fn binary(name: &str) -> Option<&'static str> {
    match name {
        "machine-config-controller" => Some(env!("CARGO_BIN_EXE_machine-config-controller")),
        "machine-config-server" => Some(env!("CARGO_BIN_EXE_machine-config-server")),
        "machine-config-operator" => Some(env!("CARGO_BIN_EXE_machine-config-operator")),
        _ => None,
    }
}

/// Every container command in manifests/ (file, command).
fn commands() -> Vec<(String, Vec<String>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).unwrap();
            let containers = v
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for c in containers {
                let cmd: Vec<String> = c["command"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                let name = f.file_name().unwrap().to_string_lossy().to_string();
                out.push((name, cmd));
            }
        }
    }
    out
}

/// Keeps listeners on loopback and free ports.
fn localised(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => {
                it.next();
                out.extend(["--listen".into(), "127.0.0.1".into()]);
            }
            "--insecure-port" | "--secure-port" => {
                it.next();
                out.extend([a.clone(), "0".into()]);
            }
            _ => out.push(a.clone()),
        }
    }
    if out.iter().any(|a| a == "--cluster") {
        out.extend(["--insecure-port".into(), "0".into()]);
    }
    out
}

#[test]
fn manifest_commands_are_accepted_by_the_binaries() {
    let cmds = commands();
    let ours: Vec<_> = cmds
        .iter()
        .filter(|(_, c)| c.first().is_some_and(|p| binary(p).is_some()))
        .collect();
    assert!(ours.len() >= 3, "{cmds:?}");
    let dir = std::env::temp_dir();
    for (file, cmd) in ours {
        let bin = binary(&cmd[0]).unwrap();
        let mut child = Command::new(bin)
            .args(localised(&cmd[1..]))
            .env("KUBECONFIG", dir.join("mco-test-no-such-kubeconfig"))
            .env("HOME", dir.join("mco-test-no-such-home"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        // clap refuses arguments with a usage line and a pointer to --help.
        let status = status.unwrap_or_else(|| panic!("{file}: {cmd:?} did not stop: {err}"));
        assert!(
            !err.contains("Usage:") && !err.contains("try '--help'"),
            "{file}: {cmd:?}: {err}"
        );
        assert!(
            err.contains("kubeconfig") || err.contains("API server"),
            "{file}: {cmd:?} failed for another reason: {err}"
        );
        assert!(!status.success(), "{file}: {cmd:?} ran without a cluster");
    }
}
