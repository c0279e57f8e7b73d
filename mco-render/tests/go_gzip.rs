//! `gzip_best` against the gzip data URLs Butane (built with Go) wrote in the Butane
//! conformance corpus: for each, the decompressed contents must compress to the same bytes.
//! URLs the config itself supplies (`compression: gzip` set by the user, passed through) were
//! not written by Go and are left out.

use std::io::Read;
use std::path::{Path, PathBuf};

use mco_render::gocompat::base64::std_decode;
use mco_render::gocompat::gzip::gzip_best;
use serde_json::Value;

fn corpus_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../testdata/conformance/butane"),
        manifest.join("../../shared/conformance/butane"),
    ]
    .into_iter()
    .find(|d| d.is_dir())
}

/// Every `contents` object with `compression: "gzip"` and a base64 data URL, anywhere.
fn gzip_sources<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::Object(map) => {
            if map.get("compression").and_then(Value::as_str) == Some("gzip") {
                if let Some(src) = map.get("source").and_then(Value::as_str) {
                    out.push((path.clone(), src));
                }
            }
            for (k, child) in map {
                gzip_sources(child, format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                gzip_sources(child, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn gzip_data_urls_match_go_byte_for_byte() {
    let Some(dir) = corpus_dir() else {
        eprintln!(
            "SKIP: neither testdata/conformance/butane nor ../shared/conformance/butane exists"
        );
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();

    let (mut total, mut matched, mut supplied) = (0, 0, 0);
    let mut mismatches = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("case file");
        let case: Value = serde_json::from_str(&text).expect("case JSON");
        let mut sources = Vec::new();
        gzip_sources(&case["expected"]["output"], String::new(), &mut sources);
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let config = case["butane"].as_str().unwrap_or_default();
        for (path, src) in sources {
            let b64 = src
                .strip_prefix("data:;base64,")
                .unwrap_or_else(|| panic!("{name}{path}: not a base64 data URL: {src}"));
            if config.contains(b64) {
                supplied += 1;
                continue;
            }
            let go = std_decode(b64).unwrap_or_else(|| panic!("{name}{path}: bad base64"));
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(&go[..])
                .read_to_end(&mut plain)
                .unwrap_or_else(|e| panic!("{name}{path}: not gzip: {e}"));
            total += 1;
            let ours = gzip_best(&plain);
            if ours == go {
                matched += 1;
            } else {
                let at = ours.iter().zip(&go).take_while(|(a, b)| a == b).count();
                mismatches.push(format!(
                    "{name}{path}: {} bytes in, Go wrote {} bytes, we wrote {}, first difference at byte {at}",
                    plain.len(),
                    go.len(),
                    ours.len()
                ));
            }
        }
    }
    eprintln!(
        "{matched} of {total} gzip data URLs Butane wrote in {} cases match Go byte for byte \
         ({supplied} more were supplied by the configs themselves)",
        files.len()
    );
    assert!(total > 0, "no gzip data URLs in {}", dir.display());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
