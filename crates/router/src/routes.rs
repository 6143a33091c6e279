//! A router's compiled routes, in the caller's order, held in shared chunks of [`CHUNK`].
//!
//! A build after an earlier router (a change of one route on a 10,000-route config) keeps nearly every
//! route where it was. With one `Arc` per route in a flat list, the new list took a count on each kept
//! route and the old list's free gave each back: two cache misses per route on every change, a tenth of
//! a data plane's apply. Here a chunk whose routes are all kept at their places is shared whole (one count
//! per chunk), and only the chunks around a change are made again.

use crate::matcher::CompiledRoute;
use std::sync::Arc;

/// Routes per chunk.
const CHUNK: usize = 64;

/// The routes of one router.
#[derive(Default)]
pub(crate) struct Routes {
    chunks: Vec<Arc<[Arc<CompiledRoute>]>>,
    len: usize,
}

/// One route of a build: kept from the earlier router (at this position there), or new.
pub(crate) enum Slot {
    Kept(u32),
    New(Arc<CompiledRoute>),
}

impl Slot {
    /// The position in the earlier router of a kept route.
    pub fn kept(&self) -> Option<u32> {
        match self {
            Slot::Kept(at) => Some(*at),
            Slot::New(_) => None,
        }
    }
}

impl Routes {
    /// The routes of `slots`, in order; a `Kept` slot names a position of `previous`, which the caller
    /// checked exists. Every chunk of kept routes at their own positions is `previous`'s.
    pub fn build(slots: &[Slot], previous: Option<&Routes>) -> Routes {
        let chunks = (slots.chunks(CHUNK).enumerate())
            .map(|(c, part)| {
                let start = c * CHUNK;
                let kept_in_place = (part.iter().enumerate())
                    .all(|(i, s)| s.kept().is_some_and(|p| p as usize == start + i));
                let shared = previous
                    .and_then(|p| p.chunks.get(c))
                    .filter(|chunk| kept_in_place && chunk.len() == part.len());
                match shared {
                    Some(chunk) => chunk.clone(),
                    None => (part.iter())
                        .map(|s| match (s, previous) {
                            (Slot::Kept(p), Some(prev)) => prev.get(*p as usize).clone(),
                            (Slot::Kept(_), None) => {
                                unreachable!("a kept route without the router it was kept from")
                            }
                            (Slot::New(route), _) => route.clone(),
                        })
                        .collect(),
                }
            })
            .collect();
        Routes {
            chunks,
            len: slots.len(),
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> &Arc<CompiledRoute> {
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<CompiledRoute>> {
        self.chunks.iter().flat_map(|c| c.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RouteSpec;

    fn route(n: usize) -> Arc<CompiledRoute> {
        let spec = RouteSpec {
            id: n,
            paths: vec![format!("/r{n}")],
            ..Default::default()
        };
        Arc::new(CompiledRoute::compile(&spec).unwrap())
    }

    /// Chunks of routes kept at their places are the earlier router's (the same allocation); the chunk
    /// with a changed route, and every chunk after a removal, is made again with the right routes.
    #[test]
    fn kept_chunks_are_shared_and_the_others_made_again() {
        let first = Routes::build(
            &(0..200).map(|n| Slot::New(route(n))).collect::<Vec<_>>(),
            None,
        );
        let replaced = route(1000);
        let slots: Vec<Slot> = (0..200u32)
            .map(|p| match p {
                70 => Slot::New(replaced.clone()),
                p => Slot::Kept(p),
            })
            .collect();
        let second = Routes::build(&slots, Some(&first));
        assert_eq!(second.len(), 200);
        for c in [0, 2, 3] {
            assert!(
                Arc::ptr_eq(&first.chunks[c], &second.chunks[c]),
                "chunk {c}"
            );
        }
        assert!(!Arc::ptr_eq(&first.chunks[1], &second.chunks[1]));
        assert!(Arc::ptr_eq(second.get(70), &replaced));
        for p in (0..200).filter(|p| *p != 70) {
            assert!(Arc::ptr_eq(second.get(p), first.get(p)), "route {p}");
        }
        // Route 10 removed: every later route moves down one place.
        let slots: Vec<Slot> = (0..200u32).filter(|p| *p != 10).map(Slot::Kept).collect();
        let third = Routes::build(&slots, Some(&second));
        assert_eq!(third.len(), 199);
        assert!(!Arc::ptr_eq(&second.chunks[0], &third.chunks[0]));
        for p in 0..199 {
            let was = if p < 10 { p } else { p + 1 };
            assert!(Arc::ptr_eq(third.get(p), second.get(was)), "route {p}");
        }
        assert_eq!(third.iter().count(), 199);
    }
}
