//! `mco-render completions SHELL`: the shell's completion script for every command and
//! option, generated from the command line's own definition (clap_complete).

use super::{write_stdout, Cli, Failure};
use clap::CommandFactory;
use clap_complete::Shell;

/// Print the completion script of a shell for mco-render.
///
/// bash: `mco-render completions bash > /etc/bash_completion.d/mco-render` (or source it from
/// ~/.bashrc); zsh: write `_mco-render` into a folder of `$fpath`; fish: `mco-render completions
/// fish > ~/.config/fish/completions/mco-render.fish`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(a: &Args) -> Result<(), Failure> {
    let mut cmd = Cli::command();
    let name = cmd.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, name, &mut script);
    write_stdout(&String::from_utf8_lossy(&script));
    Ok(())
}
