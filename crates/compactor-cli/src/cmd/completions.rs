//! `compactor completions SHELL`: the shell's completion script, generated from the same
//! clap definition that parses the command line (`clap_complete`), so it cannot drift.

use crate::error::CliError;

/// Print the completion script for a shell.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Install, e.g.:\n  compactor completions bash > ~/.local/share/bash-completion/completions/compactor\n  compactor completions zsh > \"${fpath[1]}/_compactor\"\n  compactor completions fish > ~/.config/fish/completions/compactor.fish"
)]
pub struct Args {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Writes the script for `args.shell` of `command` (the whole `compactor` command) to stdout.
pub fn run(args: Args, mut command: clap::Command) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "compactor", &mut script);
    crate::out::stdout(&String::from_utf8_lossy(&script))
}
