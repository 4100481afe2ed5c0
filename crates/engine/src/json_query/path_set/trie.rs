//! A path set compiled for the quick scan ([`super::scan`]): its paths merged into
//! a tree of the members and elements they name, each node knowing which paths end
//! at it and which run through it, its members' keys held as bytes. It is built
//! once per set (once per scenario), so that the scan of each event compares an
//! object's key with the few keys its node names (length first) instead of asking
//! every path still followed whether its next step names that key.

use super::Seg;

/// A node of the tree: one value a path may reach.
#[derive(Debug, Default)]
pub(super) struct Node {
    /// The paths that end at this value (bit `i` for path `i`).
    pub(super) ends: u64,
    /// The paths that end at or run through this value: what a later duplicate
    /// of the key that led here starts again from nothing.
    pub(super) under: u64,
    /// The members paths name here: the key's bytes and the node it leads to.
    members: Box<[(Box<[u8]>, u32)]>,
    /// The elements paths name here, by index: the index and its node.
    elements: Box<[(usize, u32)]>,
}

impl Node {
    /// The node of the member named `key`, when a path names it.
    #[inline]
    pub(super) fn member(&self, key: &[u8]) -> Option<u32> {
        self.members
            .iter()
            .find(|(k, _)| k.len() == key.len() && k.iter().zip(key).all(|(a, b)| a == b))
            .map(|&(_, n)| n)
    }

    /// The elements paths name here, by index.
    #[inline]
    pub(super) fn elements(&self) -> &[(usize, u32)] {
        &self.elements
    }
}

/// The tree of a set's paths; node 0 is the document itself.
#[derive(Debug)]
pub(super) struct Trie {
    nodes: Box<[Node]>,
}

/// A node while the tree is built (its children still growing).
#[derive(Default)]
struct Building {
    ends: u64,
    under: u64,
    members: Vec<(Box<[u8]>, u32)>,
    elements: Vec<(usize, u32)>,
}

impl Trie {
    /// The tree of `paths` (at most 64: bit `i` stands for path `i`).
    pub(super) fn new(paths: &[Box<[Seg]>]) -> Trie {
        let mut nodes = vec![Building::default()];
        for (i, path) in paths.iter().enumerate() {
            let bit = 1u64 << i;
            let mut at = 0usize;
            nodes[0].under |= bit;
            for seg in path.iter() {
                let found = match seg {
                    Seg::Key(k) => nodes[at]
                        .members
                        .iter()
                        .find(|(m, _)| **m == *k.as_bytes())
                        .map(|&(_, n)| n),
                    Seg::Index(x) => nodes[at]
                        .elements
                        .iter()
                        .find(|(e, _)| e == x)
                        .map(|&(_, n)| n),
                };
                let next = match found {
                    Some(n) => n as usize,
                    None => {
                        let n = nodes.len();
                        // At most 64 paths of a few steps each: far below u32.
                        let id = n as u32;
                        match seg {
                            Seg::Key(k) => nodes[at].members.push((k.as_bytes().into(), id)),
                            Seg::Index(x) => nodes[at].elements.push((*x, id)),
                        }
                        nodes.push(Building::default());
                        n
                    }
                };
                nodes[next].under |= bit;
                at = next;
            }
            nodes[at].ends |= bit;
        }
        let nodes = nodes
            .into_iter()
            .map(|mut b| {
                b.elements.sort_unstable();
                Node {
                    ends: b.ends,
                    under: b.under,
                    members: b.members.into(),
                    elements: b.elements.into(),
                }
            })
            .collect();
        Trie { nodes }
    }

    /// The node of the document itself.
    #[inline]
    pub(super) fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// Node `id` (one a node's member or element named).
    #[inline]
    pub(super) fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }
}
