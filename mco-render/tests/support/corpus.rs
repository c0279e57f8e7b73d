// Shared by the corpus tests, included with `#[path]`: where a conformance corpus lives and
// how its gzipped cases read.
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

/// A gzipped JSON case.
pub fn load(path: &Path) -> Value {
    let file = std::fs::File::open(path).expect("open case");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gunzip case");
    serde_json::from_str(&text).expect("case JSON")
}
