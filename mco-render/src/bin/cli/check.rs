//! `render --out-dir DIR --check`: compare DIR with what would be written, write nothing.

use super::{write_stdout, Failure};
use mco_render::check::{Difference, RenderedFile};
use mco_render::load;
use std::path::Path;

/// Exit 0 when `dir` holds exactly `files` (its other rendered-looking files count as extra);
/// else prints a unified diff per file on stdout and fails with exit code 1.
pub(crate) fn check_out_dir(dir: &Path, files: &[RenderedFile]) -> Result<(), Failure> {
    let differences =
        load::compare_with_dir(dir, files).map_err(|e| Failure::input(e.to_string()))?;
    if differences.is_empty() {
        outln!(
            "{}: up to date ({} rendered files)",
            dir.display(),
            files.len()
        );
        return Ok(());
    }
    let (mut stale, mut missing, mut extra) = (0, 0, 0);
    for d in &differences {
        let what = match d {
            Difference::Stale { .. } => {
                stale += 1;
                "stale"
            }
            Difference::Missing { .. } => {
                missing += 1;
                "missing"
            }
            Difference::Extra { .. } => {
                extra += 1;
                "extra: no pool renders it"
            }
        };
        outln!("Diff in {} ({what}):", dir.join(d.file()).display());
        out!("{}", d.unified());
    }
    Err(Failure {
        code: 1,
        lines: vec![format!(
            "error: {} is out of date: {stale} stale, {missing} missing, {extra} extra; \
             rerun the same command without --check to update it",
            dir.display()
        )],
    })
}
