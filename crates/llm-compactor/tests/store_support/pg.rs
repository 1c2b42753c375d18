//! A real, throwaway PostgreSQL cluster for tests: `initdb` into a temp dir owned by a
//! non-root user, `pg_ctl start` on a free 127.0.0.1 port, `pg_ctl stop` on drop (also
//! when a test panics). `scripts/postgres.sh` installs the server when it is absent.
//!
//! When the server cannot be started the tests skip with a printed notice, except under
//! `CI=true`, where that is a failure: CI must run them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The password in every test URL (trust auth ignores it; it is there to prove that
/// errors never show it).
pub const PASSWORD: &str = "pw-never-shown-7f3a";

/// A running cluster; stopped on drop.
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    port: u16,
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips (None, with a notice) or, in CI, fails.
fn unavailable(why: String) -> Option<PgCluster> {
    if in_ci() {
        panic!("CI=true and no PostgreSQL cluster could be started: {why} (run scripts/postgres.sh)");
    }
    eprintln!("NOTICE: skipping the PostgreSQL store tests: {why} (run scripts/postgres.sh)");
    None
}

fn find_bin() -> Option<PathBuf> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_initdb(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|dir| has_initdb(dir))
        .collect();
    versions.sort();
    if let Some(dir) = versions.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|dir| has_initdb(dir))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn ids_of(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, user]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

impl PgCluster {
    /// Starts a cluster, or returns None (skip) when PostgreSQL is unavailable outside CI.
    pub fn start() -> Option<PgCluster> {
        let Some(bin) = find_bin() else {
            return unavailable("initdb/pg_ctl not found".to_owned());
        };
        let dir = tempfile::Builder::new().prefix("llmc-pg-").tempdir().expect("temp dir");
        let run_as = if is_root() {
            // PostgreSQL refuses to run as root: the cluster belongs to `postgres`.
            let Some((uid, gid)) = ids_of("postgres") else {
                return unavailable("running as root and there is no `postgres` user".to_owned());
            };
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the cluster dir");
            Some("postgres".to_owned())
        } else {
            None
        };
        let cluster = PgCluster {
            dir,
            bin,
            run_as,
            port: free_port(),
        };
        let data = cluster.data();
        let init = cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        if !init.status.success() {
            return unavailable(format!("initdb failed: {}", String::from_utf8_lossy(&init.stderr)));
        }
        if let Err(why) = cluster.pg_ctl_start() {
            return unavailable(why);
        }
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let program = self.bin.join(tool);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        command.args(args).current_dir(self.dir.path());
        command
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", program.display()))
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let options = format!(
            "-c port={} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c max_connections=300 -c shared_buffers=32MB",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log");
        let data = self.data();
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl start failed: {}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            ))
        }
    }

    /// Stops the server (fast shutdown: open connections are closed).
    pub fn stop(&self) {
        let data = self.data();
        let out = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]);
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the stopped server again on the same port.
    pub fn start_again(&self) {
        self.pg_ctl_start().unwrap_or_else(|e| panic!("{e}"));
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for database `db` (with a password that trust auth ignores).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a database and returns its URL.
    pub fn database(&self, name: &str) -> String {
        let port = self.port.to_string();
        let sql = format!("CREATE DATABASE {name}");
        let out = self.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                &sql,
            ],
        );
        assert!(
            out.status.success(),
            "create database: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.url(name)
    }

    /// Runs SQL on a database through psql and returns its unaligned output.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let port = self.port.to_string();
        let out = self.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-d",
                db,
                "-v",
                "ON_ERROR_STOP=1",
                "-At",
                "-c",
                sql,
            ],
        );
        assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self.run(
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"],
        );
    }
}
