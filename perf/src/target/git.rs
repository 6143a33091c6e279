//! `git:<ref>` targets: the repository at a commit, built once with
//! `cargo build --release -p sluice` and cached by commit hash under `~/.cache/sluice-perf`.
//!
//! The source is checked out with `git worktree add --detach` into the cache (and the worktree is
//! removed after the build); all builds share one target directory, so only what changed between
//! commits is rebuilt.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default cache directory: `$HOME/.cache/sluice-perf`.
pub fn default_cache() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
        .join(".cache/sluice-perf")
}

/// The commit a ref names in `repo`.
pub fn resolve_commit(repo: &Path, reference: &str) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{reference}^{{commit}}"))
        .output()
        .context("running git")?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || sha.is_empty() {
        bail!("`{reference}` is not a commit of {}", repo.display());
    }
    Ok(sha)
}

/// Builds `reference` and returns the cached binary `<cache>/<commit>/sluice`.
pub fn build(repo: &Path, reference: &str, cache: &Path) -> Result<PathBuf> {
    let sha = resolve_commit(repo, reference)?;
    let bin = cache.join(&sha).join("sluice");
    if bin.is_file() {
        crate::progress(format!(
            "git:{reference} = {sha}: cached build {}",
            bin.display()
        ));
        return Ok(bin);
    }
    let tree = cache.join(format!("worktree-{sha}"));
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .arg(&tree)
            .status()
    };
    let _ = git(&["worktree", "remove", "--force"]);
    let added = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["worktree", "add", "--detach"])
        .arg(&tree)
        .arg(&sha)
        .status()
        .context("running git worktree add")?;
    if !added.success() {
        bail!("git worktree add failed for {sha}");
    }
    crate::progress(format!(
        "building git:{reference} ({sha}) in {}",
        tree.display()
    ));
    let built = Command::new("cargo")
        .args(["build", "--release", "-p", "sluice"])
        .current_dir(&tree)
        .env("CARGO_TARGET_DIR", cache.join("target"))
        .status()
        .context("running cargo build");
    let result = match built {
        Ok(s) if s.success() => std::fs::create_dir_all(cache.join(&sha))
            .and_then(|_| std::fs::copy(cache.join("target/release/sluice"), &bin))
            .map(|_| bin)
            .context("caching the built binary"),
        Ok(s) => Err(anyhow::anyhow!(
            "cargo build failed for git:{reference} ({s})"
        )),
        Err(e) => Err(e),
    };
    let _ = git(&["worktree", "remove", "--force"]);
    result
}
