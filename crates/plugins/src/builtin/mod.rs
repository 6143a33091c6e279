//! The plugins of this build, one file each. Adding a plugin = one file + one line in [`all`].

use crate::registry::Builtin;

pub mod request_termination;

/// Every plugin this build implements.
pub fn all() -> Vec<Builtin> {
    vec![request_termination::builtin()]
}
