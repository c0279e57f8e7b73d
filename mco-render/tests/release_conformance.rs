//! Every render case of each release's corpus (`testdata/conformance/releases/4.NN`, and its
//! `ign34/` variant for 4.14 to 4.18): rendered as that release, the error or success, source
//! order, rendered spec and rendered name must be that release's.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/render_case.rs"]
mod render_case;

use mco_render::release::Release;
use mco_render::RenderOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn folders(release: Release) -> Vec<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/conformance/releases")
        .join(release.to_string());
    [base.clone(), base.join("ign34")]
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

fn cases(dir: &Path) -> Vec<Value> {
    corpus::case_files(dir, |n| n != "accept-headers.json")
        .iter()
        .map(|p| corpus::read(p))
        .collect()
}

#[test]
fn each_release_renders_as_that_release_does() {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for release in Release::all().filter(|r| *r != Release::NEWEST) {
        let opts = RenderOptions {
            release,
            controller_version: corpus::release_controller_version(release).to_string(),
            ..RenderOptions::default()
        };
        for dir in folders(release) {
            let cases = cases(&dir);
            assert!(
                cases.len() >= 300,
                "{}: {} cases",
                dir.display(),
                cases.len()
            );
            let mut failed = 0;
            for case in &cases {
                total += 1;
                if let Err(e) = render_case::run_case_as(case, &opts, true) {
                    failed += 1;
                    failures.push(format!("{release} {}: {e}", case["name"]));
                }
            }
            let folder = dir.strip_prefix(dir.parent().and_then(Path::parent).unwrap_or(&dir));
            report.push(format!(
                "{}: {}/{}",
                folder.unwrap_or(&dir).display(),
                cases.len() - failed,
                cases.len()
            ));
        }
    }
    eprintln!("release conformance: {}", report.join(", "));
    for f in failures.iter().take(40) {
        eprintln!("FAIL {f}\n");
    }
    assert!(total > 0, "no release corpus found");
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ from their release",
        failures.len()
    );
}
