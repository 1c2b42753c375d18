//! Reading inputs (`FILE` or `-` for stdin) and writing outputs (`-o FILE` or stdout).

use std::io::{Read, Write};
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

/// Writes `text` (plus a newline) to `-o FILE` atomically, or to stdout.
pub fn write_output(output: Option<&Path>, text: &str) -> Result<(), CliError> {
    match output {
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let tmp = dir.join(format!(
                ".{}.tmp-{}",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("out"),
                std::process::id()
            ));
            let write = || -> std::io::Result<()> {
                let mut file = std::fs::File::create(&tmp)?;
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
        None => {
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
                // A reader that stopped early (`| head`) is not our failure.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(|e| CliError::Failed(format!("<stdout>: {e}"))),
            }
        }
    }
}
