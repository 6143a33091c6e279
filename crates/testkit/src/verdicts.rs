//! The differential suites' verdicts (`crates/sluice/tests/differential*.rs`): each vector's outcome on
//! Sluice and on nginx, compared; a difference not listed as known, or a known one that no longer
//! differs, is collected, and one assertion at the end names them all.

use std::fmt::Debug;

/// Collected disagreements of one suite.
#[derive(Default)]
pub struct Verdicts {
    differ: Vec<String>,
}

impl Verdicts {
    /// Compares one vector's outcomes; `known` lists (vector name, reason) pairs allowed to differ.
    pub fn record<T: PartialEq + Debug>(
        &mut self,
        name: &str,
        sluice: &T,
        nginx: &T,
        known: &[(&str, &str)],
    ) {
        println!("{name:45} sluice {sluice:?}\n{:45} nginx  {nginx:?}", "");
        let listed = known.iter().any(|(k, _)| *k == name);
        match (sluice == nginx, listed) {
            (true, true) => self
                .differ
                .push(format!("{name}: listed in KNOWN but now agrees; remove it")),
            (false, false) => self
                .differ
                .push(format!("{name}:\n  sluice {sluice:?}\n  nginx  {nginx:?}")),
            _ => {}
        }
    }

    /// Fails with every disagreement collected.
    pub fn assert_agree(self) {
        assert!(
            self.differ.is_empty(),
            "{} vectors differ from nginx:\n{}",
            self.differ.len(),
            self.differ.join("\n")
        );
    }
}
