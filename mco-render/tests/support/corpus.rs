// Shared by the corpus tests, included with `#[path]`: where a conformance corpus lives and
// how its cases read.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `shared/conformance/<name>`: `shared/` beside the repository (CI), or beside the worktree
/// folder; `None` when absent (the caller skips, loudly).
pub fn corpus(name: &str) -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../../shared", "../../../shared"]
        .iter()
        .map(|up| manifest.join(up).join("conformance").join(name))
        .find(|p| p.is_dir())
}

/// `testdata/conformance/<name>` (`""` for the folder itself): the corpora the README lets
/// the repository carry (render cases, Accept headers, plan, Butane).
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/conformance")
        .join(name)
}

/// A gzipped JSON case.
pub fn load(path: &Path) -> Value {
    let file = std::fs::File::open(path).expect("open case");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gunzip case");
    serde_json::from_str(&text).expect("case JSON")
}

/// A case, plain (`.json`) or gzipped (`.json.gz`).
pub fn read(path: &Path) -> Value {
    if path.to_string_lossy().ends_with(".gz") {
        return load(path);
    }
    serde_json::from_slice(&std::fs::read(path).expect("read case")).expect("case JSON")
}

/// The case files of a folder (`.json` and `.json.gz`, not the README), sorted by name;
/// `keep` picks among them by file name.
pub fn case_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read corpus folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| {
                (n.ends_with(".json") || n.ends_with(".json.gz")) && p.is_file() && keep(&n)
            })
        })
        .collect();
    paths.sort();
    paths
}

/// The controller version each release's corpus (`testdata/conformance/releases/4.NN`) was
/// made with: the release branch's head, which `releases/README.md` names (main's commit for
/// 4.22).
pub fn release_controller_version(release: mco_render::release::Release) -> &'static str {
    match release.minor() {
        14 => "00b2e0b1cc83e119995bbbe2ae06665c3d1655d7",
        15 => "1ffa8341fb18365b72398fc4eedffcbe4d423256",
        16 => "7327bb2359dd01f5b98c6bc3bd43ae134b080d02",
        17 => "3bdd678e83da52e0754b393b82435eea968af3ed",
        18 => "f313997e0ba83edd79b1d0091e85d6e25c793274",
        19 => "1a6905d980fd4c4f3869492b98cb696f09a46cff",
        20 => "afed09939d80d86cafd38e9f733cc49ed16af092",
        21 => "db84d8368ef78e50f3bc0961dcf2b27a7975e053",
        _ => mco_render::CONTROLLER_VERSION,
    }
}
