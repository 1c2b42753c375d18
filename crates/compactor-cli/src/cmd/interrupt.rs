//! Ctrl-C (SIGINT) and SIGTERM during a pass.
//!
//! Both mean "stop now": the pass is cancelled (summarizer calls, their process groups
//! and backoff waits stop at once), it ends in the hard trim, and the command still
//! writes that best valid result before exiting with 128 + the signal number (130 for
//! SIGINT, 143 for SIGTERM), as shells report a signal. A supervisor's `timeout`, which
//! sends SIGTERM, therefore gets a usable result instead of nothing. A second signal
//! exits at once without writing anything.
//!
//! The handlers are registered synchronously, before the pass starts, so a signal that
//! arrives while the summarizer is starting is never met by the default disposition
//! (which would kill the process with nothing written).

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// The signal that interrupted a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM (`kill`, `timeout`, a supervisor).
    Term,
}

impl Interrupt {
    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Interrupt::Int => "SIGINT",
            Interrupt::Term => "SIGTERM",
        }
    }

    /// 128 + the signal number.
    pub fn exit_code(self) -> i32 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
        }
    }
}

/// Watches for SIGINT and SIGTERM while a pass runs; dropping it stops watching.
pub struct Watch {
    fired: Arc<OnceLock<Interrupt>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    /// Starts watching (inside a runtime): the first signal cancels `cancel`, a second
    /// one exits the process at once.
    ///
    /// # Errors
    /// When the handlers cannot be installed.
    pub fn start(cancel: CancellationToken) -> std::io::Result<Watch> {
        let fired = Arc::new(OnceLock::new());
        let mut signals = Signals::install()?;
        let seen = Arc::clone(&fired);
        let task = tokio::spawn(async move {
            let Some(first) = signals.next().await else { return };
            let _ = seen.set(first);
            crate::out::stderr_best_effort(&format!(
                "compactor: {}: cancelling the pass; it ends in the hard trim (again to quit at once)",
                first.name()
            ));
            cancel.cancel();
            if let Some(second) = signals.next().await {
                crate::out::stderr_best_effort(&format!("compactor: {}: quitting", second.name()));
                std::process::exit(second.exit_code());
            }
        });
        Ok(Watch { fired, task })
    }

    /// Stops watching; the signal that interrupted the pass, if one did.
    pub fn stop(self) -> Option<Interrupt> {
        self.task.abort();
        self.fired.get().copied()
    }
}

#[cfg(unix)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn next(&mut self) -> Option<Interrupt> {
        tokio::select! {
            got = self.int.recv() => got.map(|()| Interrupt::Int),
            got = self.term.recv() => got.map(|()| Interrupt::Term),
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals)
    }

    async fn next(&mut self) -> Option<Interrupt> {
        tokio::signal::ctrl_c().await.ok().map(|()| Interrupt::Int)
    }
}
