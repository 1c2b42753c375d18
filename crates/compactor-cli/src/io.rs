//! Reading inputs (`FILE` or `-` for stdin) and writing outputs (`-o FILE` or stdout).

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use llm_compactor::format::{Document, Format};

use crate::error::CliError;

/// The display name of an input argument.
pub fn source_name(input: &str) -> String {
    if input == "-" {
        "<stdin>".to_owned()
    } else {
        input.to_owned()
    }
}

/// Reads the bytes of `FILE`, or of stdin for `-`.
pub fn read_input(input: &str) -> Result<Vec<u8>, CliError> {
    if input == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::Failed(format!("<stdin>: {e}")))?;
        Ok(bytes)
    } else {
        std::fs::read(input).map_err(|e| CliError::Failed(format!("{input}: {e}")))
    }
}

/// Reads a conversation document from `FILE` or `-`.
pub fn read_document(input: &str, format: Option<Format>) -> Result<Document, CliError> {
    let bytes = read_input(input)?;
    Document::from_bytes(&bytes, format, &source_name(input)).map_err(CliError::failed)
}

/// Writes `text` (plus a newline) to `-o FILE` atomically, or to stdout. A new file
/// gets mode 0644; see [`write_output_for`] to keep a private input private.
pub fn write_output(output: Option<&Path>, text: &str) -> Result<(), CliError> {
    write_output_for(None, output, text)
}

/// The permission bits of a file `-o` writes: those of the file it replaces; for a new
/// file, 0600 when the input (`FILE`, not stdin) is private (no group or other bits),
/// else 0644. Never wider than what was there.
fn output_mode(input: Option<&str>, path: &Path) -> u32 {
    if let Ok(meta) = std::fs::metadata(path) {
        return meta.permissions().mode() & 0o7777;
    }
    let private = input
        .filter(|i| *i != "-")
        .and_then(|i| std::fs::metadata(i).ok())
        .is_some_and(|meta| meta.permissions().mode() & 0o077 == 0);
    if private { 0o600 } else { 0o644 }
}

/// [`write_output`] for a command that read `input`: the file written takes the mode of
/// the file it replaces, or (new) stays private when the input was. Temp files a killed
/// run left beside the output are swept first.
pub fn write_output_for(input: Option<&str>, output: Option<&Path>, text: &str) -> Result<(), CliError> {
    match output {
        Some(path) => write_atomic(path, text, output_mode(input, path)),
        None => crate::out::stdout_line(text),
    }
}

/// [`write_output`] for a session transcript (an export): a new file is created private
/// (0600, like every transcript this crate writes); a replaced file keeps its mode.
pub fn write_transcript_output(output: Option<&Path>, text: &str) -> Result<(), CliError> {
    match output {
        Some(path) => {
            let mode = std::fs::metadata(path).map_or(llm_compactor::session::SESSION_FILE_MODE, |meta| {
                meta.permissions().mode() & 0o7777
            });
            write_atomic(path, text, mode)
        }
        None => crate::out::stdout_line(text),
    }
}

/// Writes `text` and a newline to `path` through a temp file beside it (mode `mode`,
/// fsynced, renamed over), sweeping the temp files a killed run left first.
fn write_atomic(path: &Path, text: &str, mode: u32) -> Result<(), CliError> {
    let tmp = llm_compactor::atomic::temp_beside(path, "tmp");
    let write = || -> std::io::Result<()> {
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // The umask may have narrowed it; set exactly what the replaced file had.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError::Failed(format!("{}: {e}", path.display()))
    })
}
