//! `mco-render man [--out-dir DIR]`: the manual pages, generated from the command line's own
//! definition (clap_mangen): `mco-render(1)` and one page per command, `mco-render-render(1)`...

use super::{write_stdout, Cli, Failure};
use clap::CommandFactory;
use clap_mangen::Man;
use std::path::{Path, PathBuf};

/// Print mco-render's man page, or write one page per command into a folder.
///
/// `mco-render man | man -l -` reads the main page; `mco-render man --out-dir
/// /usr/local/share/man/man1` installs them all (`man mco-render-render`).
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Write `mco-render.1` and `mco-render-COMMAND.1` for every command here (created if
    /// missing) and print their paths, instead of printing the main page.
    #[arg(long)]
    out_dir: Option<PathBuf>,
}

fn page(cmd: clap::Command) -> Result<Vec<u8>, Failure> {
    let mut roff = Vec::new();
    Man::new(cmd)
        .render(&mut roff)
        .map_err(|e| Failure::input(format!("cannot write the man page: {e}")))?;
    Ok(roff)
}

/// The command line with every command's name as its page names it (`mco-render-render`),
/// without `help`.
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn write(dir: &Path, cmd: clap::Command) -> Result<PathBuf, Failure> {
    let name = cmd
        .get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string();
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page(cmd)?)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    Ok(path)
}

pub(crate) fn run(a: &Args) -> Result<(), Failure> {
    let cmd = command();
    let Some(dir) = &a.out_dir else {
        write_stdout(&String::from_utf8_lossy(&page(cmd)?));
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
    let mut written = vec![write(dir, cmd.clone())?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.push(write(dir, sub.clone())?);
    }
    for p in written {
        write_stdout(&format!("{}\n", p.display()));
    }
    Ok(())
}
