//! `compactor completions SHELL` and `compactor man` (issue 44 item 6): generated from the
//! clap definition, so every subcommand and flag is in them; the bash script is valid
//! bash, the man pages cover every subcommand.

use crate::support::{run, stderr, stdout};

#[test]
fn completion_scripts_name_every_subcommand_and_flag() {
    for (shell, marker) in [
        ("bash", "_compactor()"),
        ("zsh", "#compdef compactor"),
        ("fish", "complete -c compactor"),
        ("elvish", "edit:completion:arg-completer[compactor]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let output = run(&["completions", shell], None);
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for word in ["proxy", "session", "simulate", "ui-token-env", "completions", "man"] {
            assert!(script.contains(word), "{shell}: no {word:?}");
        }
    }
    let unknown = run(&["completions", "tcsh"], None);
    assert_eq!(unknown.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn the_bash_script_is_valid_bash_and_completes_subcommands() {
    let script = stdout(&run(&["completions", "bash"], None));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("compactor.bash");
    std::fs::write(&file, &script).unwrap();
    // Load it and ask for the completions of `compactor pro`, as bash would.
    let probe = format!(
        "source '{}'; COMP_WORDS=(compactor pro); COMP_CWORD=1; COMP_LINE='compactor pro'; COMP_POINT=13; \
         _compactor compactor pro compactor; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        file.display()
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &probe])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let words = String::from_utf8_lossy(&output.stdout);
    assert_eq!(words.trim(), "proxy", "completions of `compactor pro`: {words:?}");
}

#[test]
fn the_man_page_and_one_page_per_subcommand() {
    let output = run(&["man"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(
        page.contains(".TH compactor 1"),
        "roff title: {}",
        &page[..page.len().min(300)]
    );
    assert!(page.contains("proxy"), "the subcommands are listed");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let written = run(&["man", "--dir", out.to_str().unwrap()], None);
    assert!(written.status.success(), "{}", stderr(&written));
    for name in [
        "compactor",
        "compactor-proxy",
        "compactor-proxy-sessions",
        "compactor-session-replay",
        "compactor-completions",
    ] {
        let path = out.join(format!("{name}.1"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            text.contains(&format!(".TH {name} 1")),
            "{name}: {}",
            &text[..text.len().min(200)]
        );
    }
    let proxy = std::fs::read_to_string(out.join("compactor-proxy.1")).unwrap();
    assert!(
        proxy.contains("ui\\-token\\-env") || proxy.contains("ui-token-env"),
        "the proxy's page has its flags"
    );
}
