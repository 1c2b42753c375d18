//! `compactor man`: the manual page, generated from the clap definition (`clap_mangen`).
//! Without `--dir` it prints compactor(1) on stdout; with it, it writes one page per
//! command and subcommand (`compactor.1`, `compactor-proxy.1`, `compactor-proxy-sessions.1`, ...).

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Print the manual page (roff), or write every command's page into a directory.
#[derive(clap::Args, Debug)]
#[command(after_help = "Read it:  compactor man | man -l -\nInstall:  compactor man --dir ~/.local/share/man/man1")]
pub struct Args {
    /// Write `compactor.1` and one page per subcommand into this directory (created if
    /// absent) instead of printing compactor(1).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Renders the pages of `command` (the whole `compactor` command).
pub fn run(args: Args, command: clap::Command) -> Result<(), CliError> {
    let command = command.name("compactor");
    match args.dir {
        None => crate::out::stdout(&render(&command)?),
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| CliError::Failed(format!("{}: {e}", dir.display())))?;
            write_tree(&command, "compactor", &dir)
        }
    }
}

/// One page, as roff text.
fn render(command: &clap::Command) -> Result<String, CliError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut page)
        .map_err(CliError::failed)?;
    Ok(String::from_utf8_lossy(&page).into_owned())
}

/// Writes `NAME.1` for `command` and, recursively, `NAME-SUB.1` for each subcommand.
fn write_tree(command: &clap::Command, name: &str, dir: &Path) -> Result<(), CliError> {
    let page = dir.join(format!("{name}.1"));
    // clap names are `&'static str` (without its `string` feature); one small string per
    // page, in a process that exits when the pages are written.
    let command = command.clone().name(&*Box::leak(name.to_owned().into_boxed_str()));
    std::fs::write(&page, render(&command)?).map_err(|e| CliError::Failed(format!("{}: {e}", page.display())))?;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        write_tree(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(())
}
