//! Writing results: the one writer of every output of npusim (docs/cli.md, "Output files").
//!
//! A regular file (or a path that does not exist yet) is written to a temporary file that
//! `tempfile` creates exclusively, under an unpredictable name, in the target's directory,
//! and renamed over the target once it is complete: a reader never sees a partial file, and a
//! link planted at a guessable name is never followed. A symlink is written through to the
//! file it points to (the link stays a link); an existing file keeps its permissions; a file
//! with several hard links is refused (renaming would split it from its other names). Anything
//! else that exists (a device such as /dev/null, a FIFO) is written directly, never replaced.
//!
//! SIGINT and SIGTERM ([`on_signals`]) remove every temporary file still open and end the
//! process with 130 or 143. Stdout ([`stdout`], [`stdout_result`]): a closed or failing stdout
//! is an error (exit 2); a broken pipe (the reader stopped, as `| head` does) is not.

use crate::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The temporary files not yet renamed into place: what a signal removes. Held while a file
/// is created and while it is renamed, so a signal sees either the temporary file (and removes
/// it: the target is unchanged) or the finished target.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Set before `main` when fd 1 was closed (`npusim ... >&-`): Rust's runtime then puts
/// /dev/null on it, where every write would succeed unseen.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

// runs from the ELF constructors, before Rust's runtime opens /dev/null on a closed fd 1
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = {
    extern "C" fn note() {
        // SAFETY: F_GETFD only asks whether descriptor 1 is open
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
    note
};

/// Removes the temporary files and exits with 128 + the signal's number on SIGINT or SIGTERM.
/// `signal-hook` runs the handler on a thread of its own, where taking a lock and removing
/// files is allowed (a bare signal handler may do neither).
pub fn on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        // without a handler the default action stays: the process ends, a temporary file may
        // stay behind (hidden, with an unpredictable name)
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // the lock is never released: no file is created or renamed after this
            let pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
            for tmp in pending.iter() {
                let _ = std::fs::remove_file(tmp);
            }
            std::process::exit(128 + signal);
        }
    });
}

/// Prints `content` to stdout, or writes it to `path` whole ([`OutFile`]).
pub fn emit(path: Option<&Path>, content: &str) -> Result<(), Exit> {
    match path {
        None => {
            let mut out = stdout()?;
            stdout_result(out.write_all(content.as_bytes()).and_then(|_| out.flush()))
        }
        Some(path) => {
            let mut f = OutFile::create(path)?;
            let written = f.file.write_all(content.as_bytes());
            written.map_err(|e| cannot_write(path, e))?;
            f.commit()
        }
    }
}

/// Stdout, locked; an error when it was closed before npusim started.
pub fn stdout() -> Result<std::io::StdoutLock<'static>, Exit> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Err(Exit::input("cannot write to stdout: it is closed"));
    }
    Ok(std::io::stdout().lock())
}

/// The outcome of writing to stdout: a broken pipe (the reader stopped, as `| head` does) ends
/// the output quietly and the command keeps its own exit code; any other failure (a full disk,
/// an I/O error) is exit 2.
pub fn stdout_result(written: std::io::Result<()>) -> Result<(), Exit> {
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::input(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

fn cannot_write(path: &Path, e: impl std::fmt::Display) -> Exit {
    Exit::input(format!("cannot write {}: {e}", path.display()))
}

/// An output file being written: a temporary file that [`OutFile::commit`] renames over the
/// target, or the target itself when it is a device or a FIFO. Dropped without a commit, the
/// temporary file is removed.
pub struct OutFile {
    file: std::fs::File,
    /// `None` when the target is written directly.
    pending: Option<Pending>,
    shown: PathBuf,
}

/// A temporary file and the target it is renamed over.
struct Pending {
    tmp: tempfile::TempPath,
    target: PathBuf,
}

impl OutFile {
    /// Opens `path` for writing by the rules of this module; the error names `path`.
    pub fn create(path: &Path) -> Result<OutFile, Exit> {
        let shown = path.to_path_buf();
        let direct = || {
            // appending: a descriptor's file (`>> log`) keeps what is already in it
            let file = std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(|e| cannot_write(path, e))?;
            Ok(OutFile {
                file,
                pending: None,
                shown: shown.clone(),
            })
        };
        let Some(target) = resolve(path).map_err(|e| cannot_write(path, e))? else {
            return direct();
        };
        let found = match std::fs::metadata(&target) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(cannot_write(path, e)),
        };
        let mut permissions = None;
        if let Some(m) = &found {
            if m.is_dir() {
                return Err(cannot_write(path, "it is a directory"));
            }
            if !m.is_file() {
                // a device or a FIFO: a stream to write into, not a file to replace
                return direct();
            }
            let links = hard_links(m);
            if links > 1 {
                return Err(cannot_write(
                    path,
                    format!(
                        "it has {links} hard links, and npusim replaces a file by renaming a \
                         new one over it, which would leave the other links with the old \
                         content; write to another path, or remove the other links"
                    ),
                ));
            }
            permissions = Some(m.permissions());
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".npusim.tmp");
        // a new file gets what the umask allows of rw-rw-rw-, as any created file does
        #[cfg(unix)]
        builder.permissions(
            permissions
                .clone()
                .unwrap_or_else(|| std::os::unix::fs::PermissionsExt::from_mode(0o666)),
        );
        let mut pending_files = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        let (file, tmp) = builder
            .tempfile_in(dir)
            .map_err(|e| cannot_write(path, e))?
            .into_parts();
        pending_files.push(tmp.to_path_buf());
        drop(pending_files);
        let out = OutFile {
            file,
            pending: Some(Pending { tmp, target }),
            shown,
        };
        if let Some(p) = permissions {
            // the umask narrowed the mode the file was created with: the target's, exactly
            out.file
                .set_permissions(p)
                .map_err(|e| cannot_write(path, e))?;
        }
        Ok(out)
    }

    /// Puts the written file in place: the temporary file renamed over the target.
    pub fn commit(mut self) -> Result<(), Exit> {
        let Some(pending) = self.pending.take() else {
            return self.file.flush().map_err(|e| cannot_write(&self.shown, e));
        };
        let mut pending_files = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        let path = pending.tmp.to_path_buf();
        pending_files.retain(|p| *p != path);
        match pending.tmp.persist(&pending.target) {
            Ok(()) => Ok(()),
            // dropping the returned path removes the temporary file
            Err(e) => Err(cannot_write(&self.shown, e.error)),
        }
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        // not committed: the temporary file goes (TempPath removes it when dropped)
        if let Some(p) = self.pending.take() {
            let mut pending_files = PENDING.lock().unwrap_or_else(|p| p.into_inner());
            let path = p.tmp.to_path_buf();
            pending_files.retain(|q| *q != path);
            drop(p);
        }
    }
}

#[cfg(unix)]
fn hard_links(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(m)
}

#[cfg(not(unix))]
fn hard_links(_: &std::fs::Metadata) -> u64 {
    1
}

/// `path` with every symlink at its end followed (relative links against the link's
/// directory): the file a write goes to. A dangling link gives the path it points to.
/// `None` for a path that is, or goes through, an open descriptor (`/dev/stdout`,
/// `/proc/self/fd/1`): its "link" names no file to replace (`pipe:[1234]`, or a file the
/// shell opened, which a rename would take from under it), so it is written directly.
fn resolve(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut p = path.to_path_buf();
    // as many links as Linux follows before ELOOP
    for _ in 0..40 {
        if is_descriptor(&p) {
            return Ok(None);
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(Some(p)),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/PID/fd/N`: a name of an open descriptor.
fn is_descriptor(p: &Path) -> bool {
    let parts: Vec<&str> = p
        .components()
        .map(|c| c.as_os_str().to_str().unwrap_or(""))
        .collect();
    matches!(
        parts.as_slice(),
        ["/", "dev", "stdout" | "stderr" | "stdin"]
            | ["/", "dev", "fd", _]
            | ["/", "proc", _, "fd", _]
    )
}

/// Refuses, before anything runs, an output that is the same file as an input or as another
/// output of the command: the same device and inode, or the same path however it is spelled
/// (`./x`, `a/../x`, a symlink to it), which catches an output that does not exist yet too.
/// Every clash is reported (naming both), then exit 2. Devices and FIFOs are streams, not
/// files a write would clobber: `--config /dev/stdin -o /dev/stdout` on one terminal is fine.
/// `inputs` and `outputs` pair what the command line calls the file (`the program`, `-o`) with
/// its path.
pub fn refuse_clashes(inputs: &[(String, &Path)], outputs: &[(&str, &Path)]) -> Result<(), Exit> {
    let ids: Vec<Option<FileId>> = outputs.iter().map(|(_, p)| FileId::of(p)).collect();
    let mut clashes = Vec::new();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        let Some(id) = &ids[i] else { continue };
        for (what, input) in inputs {
            if FileId::of(input).is_some_and(|other| other.same(id)) {
                clashes.push(format!(
                    "{flag} {} is the same file as {what} {}: writing it would destroy the input; \
                     write the output to another file",
                    path.display(),
                    input.display()
                ));
            }
        }
        for (j, (other_flag, other)) in outputs.iter().enumerate().take(i) {
            if ids[j].as_ref().is_some_and(|o| o.same(id)) {
                clashes.push(format!(
                    "{other_flag} {} and {flag} {} are the same file; give each output its own file",
                    other.display(),
                    path.display()
                ));
            }
        }
    }
    if clashes.is_empty() {
        return Ok(());
    }
    for c in &clashes {
        err_line!("error: {c}");
    }
    Err(Exit(2))
}

/// What makes two paths one file: the device and inode of a file that exists, and the path
/// with every link and `.`/`..` resolved (for a file that does not exist yet: its directory's).
struct FileId {
    inode: Option<(u64, u64)>,
    path: PathBuf,
}

impl FileId {
    /// `None` for a device, a FIFO or an open descriptor (see [`refuse_clashes`]).
    fn of(path: &Path) -> Option<FileId> {
        let target = match resolve(path) {
            Ok(Some(target)) => target,
            Ok(None) => return None,
            Err(_) => path.to_path_buf(),
        };
        let meta = std::fs::metadata(&target).ok();
        if meta.as_ref().is_some_and(|m| !m.is_file() && !m.is_dir()) {
            return None;
        }
        let path = std::fs::canonicalize(&target).unwrap_or_else(|_| {
            // not there yet: its directory resolved, its name as given
            let dir = match target.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            match target.file_name() {
                Some(name) => dir.join(name),
                None => dir,
            }
        });
        Some(FileId {
            inode: meta.as_ref().and_then(inode),
            path,
        })
    }

    fn same(&self, other: &FileId) -> bool {
        self.path == other.path || (self.inode.is_some() && self.inode == other.inode)
    }
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// A file written as a stream (a trace, a sweep's rows) through an [`OutFile`]: dropped
/// without a commit, the temporary file is removed, so a failed run leaves no partial file.
/// The writes happen on a thread of their own, so the run goes on while the kernel copies the
/// bytes (a trace of a long run is hundreds of megabytes); at most a few chunks wait in
/// between, so memory stays flat.
pub struct StreamFile {
    path: PathBuf,
    writer: ChunkWriter,
    thread: Option<std::thread::JoinHandle<(OutFile, std::io::Result<()>)>>,
}

/// Collects bytes into chunks and hands each full one to the writing thread.
pub struct ChunkWriter {
    chunk: Vec<u8>,
    tx: Option<crossbeam::channel::Sender<Vec<u8>>>,
}

const CHUNK: usize = 1 << 20;

impl ChunkWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        let gone = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the writer stopped");
        self.tx
            .as_ref()
            .ok_or_else(gone)?
            .send(full)
            .map_err(|_| gone())
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.chunk.extend_from_slice(buf);
        if self.chunk.len() >= CHUNK {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl StreamFile {
    pub fn create(path: &Path) -> Result<StreamFile, Exit> {
        let mut out = OutFile::create(path)?;
        let (tx, rx) = crossbeam::channel::bounded::<Vec<u8>>(4);
        let thread = std::thread::spawn(move || {
            let mut written = Ok(());
            for chunk in rx {
                written = out.file.write_all(&chunk);
                if written.is_err() {
                    // the channel closes with `rx`: the sender sees the writer stopped
                    break;
                }
            }
            // no fsync: the rename keeps readers from a partial file; forcing hundreds of
            // megabytes to disk would cost more than the run
            (out, written)
        });
        Ok(StreamFile {
            path: path.to_path_buf(),
            writer: ChunkWriter {
                chunk: Vec::with_capacity(CHUNK),
                tx: Some(tx),
            },
            thread: Some(thread),
        })
    }

    pub fn writer(&mut self) -> &mut ChunkWriter {
        &mut self.writer
    }

    /// Waits for the last bytes and puts the file in place.
    pub fn commit(mut self) -> Result<(), Exit> {
        let sent = self.writer.send();
        let (out, written) = self.finish_thread();
        // the writing thread's own error is the one worth showing (a full disk)
        written.and(sent).map_err(|e| cannot_write(&self.path, e))?;
        match out {
            Some(out) => out.commit(),
            None => Err(cannot_write(&self.path, "the writing thread panicked")),
        }
    }

    /// Closes the channel and waits for the thread: the file and its first error, if any.
    fn finish_thread(&mut self) -> (Option<OutFile>, std::io::Result<()>) {
        self.writer.tx = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok((out, written))) => (Some(out), written),
            Some(Err(_)) => (None, Ok(())),
            None => (None, Ok(())),
        }
    }
}

impl Drop for StreamFile {
    fn drop(&mut self) {
        // not committed: the file is dropped with the thread's result, its temporary file
        // removed
        let _ = self.finish_thread();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("npusim-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_temporary_file_sits_beside_the_target_and_goes_on_drop() {
        let dir = scratch("beside");
        let target = dir.join("report.json");
        let f = OutFile::create(&target).unwrap();
        let tmp = f.pending.as_ref().unwrap().tmp.to_path_buf();
        assert_eq!(tmp.parent(), Some(dir.as_path()));
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".report.json.") && name.ends_with(".npusim.tmp"));
        assert!(PENDING.lock().unwrap().contains(&tmp));
        drop(f);
        assert!(!tmp.exists(), "an uncommitted file is removed");
        assert!(!PENDING.lock().unwrap().contains(&tmp));
        assert!(!target.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_relative_link_resolves_against_its_own_directory() {
        let dir = scratch("resolve");
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("real.txt", dir.join("sub/link")).unwrap();
        let target = resolve(&dir.join("sub/link")).unwrap();
        assert_eq!(target, Some(dir.join("sub/real.txt")));
        for fd in ["/dev/stdout", "/dev/stderr", "/dev/fd/3", "/proc/self/fd/1"] {
            assert_eq!(resolve(Path::new(fd)).unwrap(), None, "{fd}");
        }
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        assert!(resolve(&dir.join("loop")).is_err(), "a loop is an error");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
