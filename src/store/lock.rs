//! The run-folder lock: one process per run folder.
//!
//! Two processes on one run folder would each pick the same unqueried pairs, pay for them twice,
//! append both verdicts, and keep a budget each (so together spend up to twice `max_usd`). A run
//! therefore holds an exclusive lock on `<run folder>/.lock` from before it writes anything until
//! it ends; a second process fails at once, naming the folder and the holder's process id (which
//! the holder writes into the file).
//!
//! The lock is the operating system's advisory whole-file lock (`flock` on Unix, `LockFileEx` on
//! Windows) through `std::fs::File::try_lock` (Rust 1.89). The kernel releases it when the holder
//! exits in any way, including SIGKILL, so a crash never leaves a stale lock behind. The file is
//! never removed (removing a lock file races with a process opening it); a clean release empties
//! it, so an empty `.lock` means no process holds the folder. Network file systems may
//! not honour the lock; keep run folders on a local disk.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Name of the lock file inside a run folder.
pub const LOCK_FILE: &str = ".lock";

/// Errors taking the run-folder lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(
        "run folder {dir} is in use by another topk-judge process ({}); two processes on one run would pay for the same pairs twice and each keep its own budget: wait for that one to finish or stop it, or give this run another `name`",
        holder.map_or_else(|| "process id unknown".to_string(), |p| format!("pid {p}"))
    )]
    Held {
        /// The run folder.
        dir: PathBuf,
        /// Process id of the holder, as it wrote it into the lock file.
        holder: Option<u32>,
    },
    /// The lock file could not be opened, locked or written.
    #[error("run folder lock {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
}

/// An exclusive lock on a run folder, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    path: PathBuf,
}

impl RunLock {
    /// Take the lock of the run folder `dir` (which must exist) without waiting, and write this
    /// process's id into the lock file.
    ///
    /// # Errors
    /// [`LockError::Held`] when another process (or another open handle in this one) holds it;
    /// [`LockError::Io`] otherwise.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| LockError::Io { path: path.clone(), source };
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held { dir: dir.to_owned(), holder: holder(&path) });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether another process holds the lock of run folder `dir` now (`Some(holder's pid, when it
/// wrote it)`), without taking it for longer than the test and without writing the file;
/// `None` when no process holds it, or there is no lock file.
pub fn held_by(dir: &Path) -> Option<Option<u32>> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new().read(true).open(&path).ok()?;
    match file.try_lock() {
        // Taken for the test: released when `file` is dropped.
        Ok(()) => None,
        Err(TryLockError::WouldBlock) => Some(holder(&path)),
        Err(TryLockError::Error(_)) => None,
    }
}

impl Drop for RunLock {
    /// A clean release empties the file (no dead process id is left in it); the file itself
    /// stays, since removing it would race with a process opening it (module docs).
    fn drop(&mut self) {
        let _ = self._file.set_len(0);
    }
}

/// The process id written in a held lock file (the holder writes it right after locking, so a
/// few short retries cover the moment in between).
fn holder(path: &Path) -> Option<u32> {
    for _ in 0..20 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_fails_naming_the_folder_and_holder_then_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        let written = std::fs::read_to_string(first.path()).unwrap();
        assert_eq!(written, format!("{}\n", std::process::id()));
        let e = RunLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(&e, LockError::Held { holder: Some(p), .. } if *p == std::process::id()), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(&dir.path().display().to_string()) && msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        let path = first.path().to_owned();
        drop(first);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "a clean release leaves no process id");
        let again = RunLock::acquire(dir.path()).unwrap();
        assert!(again.path().exists());
    }

    /// `held_by` tells a held folder (with the holder's pid) from a free one, and leaves the
    /// lock and its file as they were.
    #[test]
    fn held_by_sees_the_holder_without_taking_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(held_by(dir.path()), None, "no lock file");
        let lock = RunLock::acquire(dir.path()).unwrap();
        assert_eq!(held_by(dir.path()), Some(Some(std::process::id())));
        assert_eq!(std::fs::read_to_string(lock.path()).unwrap(), format!("{}\n", std::process::id()));
        drop(lock);
        assert_eq!(held_by(dir.path()), None, "released");
        RunLock::acquire(dir.path()).unwrap();
    }
}
