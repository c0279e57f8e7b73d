// Shared by the command-line tests, included with `#[path]` (under `support/`, so it is no test
// target of its own): runs `mco-render` and returns its exit code, stdout and stderr. Each test
// file uses one of the two entry points.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs `mco-render` from the workspace root.
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."), args)
}

/// Runs `mco-render` from `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run mco-render");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
