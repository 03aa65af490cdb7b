//! Writing results: to stdout, or to a file through a temporary file in the same directory
//! that is renamed over the target, so a reader never sees a partial file.

use crate::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prints `content` to stdout, or writes it to `path` atomically.
pub fn emit(path: Option<&Path>, content: &str) -> Result<(), Exit> {
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            // a closed pipe (`npusim run x | head`) is not an error worth a message
            let _ = out.write_all(content.as_bytes()).and_then(|_| out.flush());
            Ok(())
        }
        Some(path) => write_atomic(path, content)
            .map_err(|e| Exit::input(format!("cannot write {}: {e}", path.display()))),
    }
}

fn write_atomic(path: &Path, content: &str) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A file written as a stream (a trace), through a temporary file beside the target that
/// [`StreamFile::commit`] renames over it; dropped without a commit, the temporary file is
/// removed, so a failed run leaves no partial file. The writes happen on a thread of their
/// own, so the run goes on while the kernel copies the bytes (a trace of a long run is
/// hundreds of megabytes); at most a few chunks wait in between, so memory stays flat.
pub struct StreamFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: ChunkWriter,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
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
        let tmp = temp_path(path);
        let mut file = std::fs::File::create(&tmp)
            .map_err(|e| Exit::input(format!("cannot write {}: {e}", path.display())))?;
        let (tx, rx) = crossbeam::channel::bounded::<Vec<u8>>(4);
        let thread = std::thread::spawn(move || {
            for chunk in rx {
                file.write_all(&chunk)?;
            }
            // no fsync: the rename keeps readers from a partial file; forcing hundreds of
            // megabytes to disk would cost more than the run
            Ok(())
        });
        Ok(StreamFile {
            path: path.to_path_buf(),
            tmp,
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

    /// Waits for the last bytes and renames the file into place.
    pub fn commit(mut self) -> Result<(), Exit> {
        let shown = self.path.display().to_string();
        let failed = |e: std::io::Error| Exit::input(format!("cannot write {shown}: {e}"));
        let sent = self.writer.send();
        let written = self.finish_thread();
        sent.and(written).map_err(failed)?;
        std::fs::rename(&self.tmp, &self.path).map_err(failed)?;
        Ok(())
    }

    /// Closes the channel and waits for the thread: its first error, if any.
    fn finish_thread(&mut self) -> std::io::Result<()> {
        self.writer.tx = None;
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the writing thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for StreamFile {
    fn drop(&mut self) {
        // not committed (or the rename failed): no partial file stays behind
        if self.thread.is_some() || self.tmp.exists() {
            let _ = self.finish_thread();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// `DIR/.NAME.npusim-PID.tmp` beside the target.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let tmp_name = format!(".{name}.npusim-{}.tmp", std::process::id());
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(tmp_name),
        _ => PathBuf::from(tmp_name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_file_sits_beside_the_target() {
        let t = temp_path(Path::new("out/report.json"));
        assert_eq!(t.parent(), Some(Path::new("out")));
        assert!(t
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".report.json.npusim-"));
        assert_eq!(temp_path(Path::new("r.txt")).parent(), Some(Path::new("")));
    }
}
