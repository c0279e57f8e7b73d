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
