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
/// removed, so a failed run leaves no partial file.
pub struct StreamFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<std::io::BufWriter<std::fs::File>>,
}

impl StreamFile {
    pub fn create(path: &Path) -> Result<StreamFile, Exit> {
        let tmp = temp_path(path);
        let file = std::fs::File::create(&tmp)
            .map_err(|e| Exit::input(format!("cannot write {}: {e}", path.display())))?;
        Ok(StreamFile {
            path: path.to_path_buf(),
            tmp,
            writer: Some(std::io::BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub fn writer(&mut self) -> &mut std::io::BufWriter<std::fs::File> {
        self.writer.as_mut().expect("written before the commit")
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<(), Exit> {
        let path = self.path.clone();
        let result = (|| {
            let w = self.writer.take().expect("committed once");
            let f = w.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            drop(f);
            std::fs::rename(&self.tmp, &self.path)
        })();
        result.map_err(|e| Exit::input(format!("cannot write {}: {e}", path.display())))
    }
}

impl Drop for StreamFile {
    fn drop(&mut self) {
        // committed: renamed away already
        if self.writer.take().is_some() {
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
