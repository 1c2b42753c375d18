//! A child's process group, killed as a whole.
//!
//! A summarizer command run through `sh -c` is often a pipeline or a script that starts
//! children of its own; killing only the direct child (what `kill_on_drop` does) leaves
//! those running, holding the stdout pipe open and burning CPU. So the exec summarizer
//! starts its command as the leader of a new process group and this guard sends
//! `SIGKILL` to the whole group when the call ends for any reason: the command
//! finished, timed out, printed too much, the pass was cancelled (Ctrl-C, SIGTERM), or
//! the future was dropped. On platforms without process groups it does nothing and
//! `kill_on_drop` remains the only cleanup.

/// Kills a process group (once) when told to or when dropped.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    /// The group id (the leader's pid), until the group has been killed.
    id: Option<u32>,
}

impl ProcessGroup {
    /// The group led by `child` (which must have been spawned with `process_group(0)`).
    pub(crate) fn led_by(child: &tokio::process::Child) -> Self {
        ProcessGroup { id: child.id() }
    }

    /// Sends `SIGKILL` to every process left in the group; later calls do nothing.
    pub(crate) fn kill(&mut self) {
        let Some(id) = self.id.take() else { return };
        #[cfg(unix)]
        {
            // Never 0 or 1: `kill(-1)` would signal every process we may signal.
            let pid = i32::try_from(id)
                .ok()
                .filter(|&id| id > 1)
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                match rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
                    Ok(()) => tracing::debug!(group = id, "killed the summarizer command's process group"),
                    // Everyone in it has already exited.
                    Err(rustix::io::Errno::SRCH) => {}
                    Err(error) => {
                        tracing::warn!(group = id, %error, "cannot kill the summarizer command's process group")
                    }
                }
            }
        }
        #[cfg(not(unix))]
        let _ = id;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
