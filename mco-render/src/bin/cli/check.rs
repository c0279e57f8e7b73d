//! `render --out-dir DIR`: write the rendered files into DIR and remove the rendered configs no
//! pool renders any more; with `--check`, compare DIR with what would be written, write nothing.

use super::{write_stdout, Failure};
use mco_render::check::{self, Comparison, Coverage, Difference, RenderedFile};
use mco_render::load;
use std::path::Path;

/// How `dir` compares with `files`, its files as `load::read_rendered_dir` reads them.
fn compare(dir: &Path, files: &[RenderedFile], coverage: Coverage) -> Result<Comparison, Failure> {
    let actual = load::read_rendered_dir(dir).map_err(|e| Failure::input(e.to_string()))?;
    let comparison = check::compare_folder(files, &actual, coverage);
    for name in &comparison.foreign {
        eprintln!(
            "note: {}: not a rendered MachineConfig (render does not write it): neither compared nor removed",
            dir.join(name).display()
        );
    }
    Ok(comparison)
}

/// Writes `files` into `dir` (created if needed), each only when its contents change, and
/// removes the rendered configs of `dir` no pool renders now (with `Coverage::AllPools`),
/// naming each on stdout. Files render did not write are left alone.
pub(crate) fn write_out_dir(
    dir: &Path,
    files: &[RenderedFile],
    coverage: Coverage,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
    for d in compare(dir, files, coverage)?.differences {
        let path = dir.join(d.file());
        let done = match &d {
            Difference::Stale { expected, .. } | Difference::Missing { expected, .. } => {
                std::fs::write(&path, expected)
            }
            Difference::Extra { .. } => std::fs::remove_file(&path).map(|()| {
                outln!("removed {}: no pool renders it", path.display());
            }),
        };
        done.map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// Exit 0 when `dir` holds exactly `files` (its rendered configs for no pool rendered count as
/// extra with `Coverage::AllPools`); else prints a unified diff per file on stdout and fails
/// with exit code 1, naming the files to delete.
pub(crate) fn check_out_dir(
    dir: &Path,
    files: &[RenderedFile],
    coverage: Coverage,
) -> Result<(), Failure> {
    let differences = compare(dir, files, coverage)?.differences;
    if differences.is_empty() {
        outln!(
            "{}: up to date ({} rendered files)",
            dir.display(),
            files.len()
        );
        return Ok(());
    }
    let (mut stale, mut missing, mut extra) = (0, 0, Vec::new());
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
                extra.push(dir.join(d.file()).display().to_string());
                "extra: no pool renders it"
            }
        };
        outln!("Diff in {} ({what}):", dir.join(d.file()).display());
        out!("{}", d.unified());
    }
    let mut lines = vec![format!(
        "error: {} is out of date: {stale} stale, {missing} missing, {} extra; \
         rerun the same command without --check to update it{}",
        dir.display(),
        extra.len(),
        if extra.is_empty() {
            ""
        } else {
            ", which deletes the files no pool renders:"
        }
    )];
    lines.extend(extra.iter().map(|f| format!("  {f}")));
    Err(Failure { code: 1, lines })
}
