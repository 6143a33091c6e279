//! What is measured: a sluice binary (`bin:<path>`), a git ref built on demand (`git:<ref>`), or
//! a peer (`nginx`, `nginx-lua`) configured from a template.

pub mod git;
pub mod nginx;
pub mod process;
#[cfg(test)]
mod tests;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A target as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A built sluice binary.
    Bin(PathBuf),
    /// A git ref of this repository, built with `cargo build --release -p sluice` and cached.
    Git(String),
    /// nginx `proxy_pass` with an upstream keep-alive pool: the floor any proxy is measured against.
    Nginx,
    /// nginx plus an empty `access_by_lua_block`: the OpenResty stack Kong runs on.
    NginxLua,
}

impl Target {
    /// Parses `bin:<path>`, `git:<ref>`, `nginx` or `nginx-lua`.
    pub fn parse(s: &str) -> Result<Target> {
        Ok(match s {
            "nginx" => Target::Nginx,
            "nginx-lua" => Target::NginxLua,
            _ => match s.split_once(':') {
                Some(("bin", p)) if !p.is_empty() => Target::Bin(PathBuf::from(p)),
                Some(("git", r)) if !r.is_empty() => Target::Git(r.to_string()),
                _ => bail!("unknown target `{s}`: use bin:<path>, git:<ref>, nginx or nginx-lua"),
            },
        })
    }

    /// The label used in results (the command-line spelling).
    pub fn label(&self) -> String {
        match self {
            Target::Bin(p) => format!("bin:{}", p.display()),
            Target::Git(r) => format!("git:{r}"),
            Target::Nginx => "nginx".into(),
            Target::NginxLua => "nginx-lua".into(),
        }
    }

    /// Peers have no plugins: they only run the no-plugins cases, so ratios compare like with like.
    pub fn is_peer(&self) -> bool {
        matches!(self, Target::Nginx | Target::NginxLua)
    }
}

/// A target ready to start: peers, or a sluice binary resolved to a path (git refs built).
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The target as given.
    pub target: Target,
    /// The sluice binary, for `bin:` and `git:` targets.
    pub bin: Option<PathBuf>,
}

/// What a command that measures one sluice does first: makes its output directory `out` and resolves
/// `target` (a `git:` ref is built under `out/builds`). The directory, canonical, and the binary; `what`
/// names the command when the target is not a sluice.
pub fn sluice_in(out: &Path, target: &str, what: &str) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(out)?;
    let out = out.canonicalize()?;
    let resolved = resolve(&Target::parse(target)?, Path::new("."), &out.join("builds"))?;
    let bin = resolved
        .bin
        .with_context(|| format!("{what} needs a sluice target"))?;
    Ok((out, bin))
}

/// Resolves a target: checks a `bin:` path, builds a `git:` ref (cached by commit under `cache`),
/// checks that nginx (and its Lua module) is installed for peers.
pub fn resolve(target: &Target, repo: &Path, cache: &Path) -> Result<Resolved> {
    let bin = match target {
        Target::Bin(p) => Some(
            p.canonicalize()
                .with_context(|| format!("sluice binary {}", p.display()))?,
        ),
        Target::Git(r) => Some(git::build(repo, r, cache)?),
        Target::Nginx => {
            nginx::binary()?;
            None
        }
        Target::NginxLua => {
            nginx::binary()?;
            nginx::lua_modules()?;
            None
        }
    };
    Ok(Resolved {
        target: target.clone(),
        bin,
    })
}
