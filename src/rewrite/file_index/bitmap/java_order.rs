//! The order a Java `HashMap` (OpenJDK's; checked with 17) iterates its keys in when they are
//! added one by one with `computeIfAbsent`, as Paimon's bitmap writer adds a column's values:
//! the order in which that writer lists the values and their bitmaps.
//!
//! The table starts with 16 buckets and doubles when a call finds more keys than three
//! quarters of it (the check comes first in every call, so a table that overflows on its last
//! key only grows if another call follows). A key's bucket is its hash code with the upper half
//! folded into the lower, masked by the table size. A new key goes in front of its bucket's
//! list. A list that already holds 7 or more keys when one joins it doubles the table while
//! that has under 64 buckets, and otherwise becomes a red-black tree ordered by folded hash,
//! then by the keys' own order; a tree's iteration follows a linked list in which a new key
//! comes right after its parent and the root is moved to the front. Growing the table splits
//! each bucket in two, keeping the relative order; a half of 6 keys or fewer becomes a plain
//! list again, a larger one is rebuilt as a tree when the other half is not empty.

use std::cmp::Ordering;

const NONE: usize = usize::MAX;

struct Table<'a, C: Fn(usize, usize) -> Ordering> {
    /// Folded hash of each key, compared as a signed int.
    hash: &'a [i32],
    cmp: C,
    buckets: Vec<usize>,
    next: Vec<usize>,
    prev: Vec<usize>,
    parent: Vec<usize>,
    left: Vec<usize>,
    right: Vec<usize>,
    red: Vec<bool>,
    tree: Vec<bool>,
    size: usize,
    /// Set when two keys with equal hashes compare equal: Java then breaks the tie by identity
    /// hash codes, which nothing here can know.
    unknowable: bool,
}

/// The iteration order of keys `0..hashes.len()` (their Java `hashCode`s, added in index
/// order), with `cmp` their `compareTo`; `call_after_last` when another `computeIfAbsent`
/// (of a key already present) follows the last new key. `None` when Java's own order depends
/// on identity hash codes.
pub(super) fn iteration_order(
    hashes: &[i32],
    cmp: impl Fn(usize, usize) -> Ordering,
    call_after_last: bool,
) -> Option<Vec<usize>> {
    let n = hashes.len();
    let folded: Vec<i32> = hashes
        .iter()
        .map(|&h| h ^ ((h as u32) >> 16) as i32)
        .collect();
    let mut t = Table {
        hash: &folded,
        cmp,
        buckets: vec![NONE; 16],
        next: vec![NONE; n],
        prev: vec![NONE; n],
        parent: vec![NONE; n],
        left: vec![NONE; n],
        right: vec![NONE; n],
        red: vec![false; n],
        tree: vec![false; n],
        size: 0,
        unknowable: false,
    };
    for key in 0..n {
        if t.size > t.threshold() {
            t.resize();
        }
        t.insert(key);
    }
    if call_after_last && t.size > t.threshold() {
        t.resize();
    }
    if t.unknowable {
        return None;
    }
    let mut order = Vec::with_capacity(n);
    for &first in &t.buckets {
        let mut e = first;
        while e != NONE {
            order.push(e);
            e = t.next[e];
        }
    }
    Some(order)
}

impl<C: Fn(usize, usize) -> Ordering> Table<'_, C> {
    fn threshold(&self) -> usize {
        self.buckets.len() / 4 * 3
    }

    fn index(&self, key: usize) -> usize {
        self.hash[key] as u32 as usize & (self.buckets.len() - 1)
    }

    fn insert(&mut self, key: usize) {
        let at = self.index(key);
        let first = self.buckets[at];
        if first != NONE && self.tree[first] {
            self.tree[key] = true;
            self.put_tree(first, key);
        } else {
            let mut count = 0;
            let mut e = first;
            while e != NONE {
                count += 1;
                e = self.next[e];
            }
            self.next[key] = first;
            self.buckets[at] = key;
            if count >= 7 {
                if self.buckets.len() < 64 {
                    self.resize();
                } else {
                    self.treeify_bucket(at);
                }
            }
        }
        self.size += 1;
    }

    /// Which side of `p` the key `x` goes: negative left.
    fn dir(&mut self, x: usize, p: usize) -> Ordering {
        match self.hash[p].cmp(&self.hash[x]) {
            Ordering::Greater => Ordering::Less,
            Ordering::Less => Ordering::Greater,
            Ordering::Equal => {
                let d = (self.cmp)(x, p);
                if d == Ordering::Equal {
                    self.unknowable = true;
                }
                d
            }
        }
    }

    fn put_tree(&mut self, first: usize, x: usize) {
        let mut root = first;
        while self.parent[root] != NONE {
            root = self.parent[root];
        }
        let mut p = root;
        loop {
            let left = self.dir(x, p) != Ordering::Greater;
            let child = if left { self.left[p] } else { self.right[p] };
            if child == NONE {
                let pn = self.next[p];
                self.next[x] = pn;
                if left {
                    self.left[p] = x;
                } else {
                    self.right[p] = x;
                }
                self.next[p] = x;
                self.parent[x] = p;
                self.prev[x] = p;
                if pn != NONE {
                    self.prev[pn] = x;
                }
                let root = self.balance_insertion(root, x);
                self.move_root_to_front(root);
                return;
            }
            p = child;
        }
    }

    fn treeify_bucket(&mut self, at: usize) {
        let mut e = self.buckets[at];
        let mut before = NONE;
        while e != NONE {
            self.tree[e] = true;
            self.prev[e] = before;
            before = e;
            e = self.next[e];
        }
        self.treeify(self.buckets[at]);
    }

    /// Builds a tree of the list starting at `head`, in list order.
    fn treeify(&mut self, head: usize) {
        let mut root = NONE;
        let mut x = head;
        while x != NONE {
            let following = self.next[x];
            self.left[x] = NONE;
            self.right[x] = NONE;
            if root == NONE {
                self.parent[x] = NONE;
                self.red[x] = false;
                root = x;
            } else {
                let mut p = root;
                loop {
                    let left = self.dir(x, p) != Ordering::Greater;
                    let child = if left { self.left[p] } else { self.right[p] };
                    if child == NONE {
                        self.parent[x] = p;
                        if left {
                            self.left[p] = x;
                        } else {
                            self.right[p] = x;
                        }
                        root = self.balance_insertion(root, x);
                        break;
                    }
                    p = child;
                }
            }
            x = following;
        }
        self.move_root_to_front(root);
    }

    fn move_root_to_front(&mut self, root: usize) {
        let at = self.index(root);
        let first = self.buckets[at];
        if root == first {
            return;
        }
        self.buckets[at] = root;
        let (rp, rn) = (self.prev[root], self.next[root]);
        if rn != NONE {
            self.prev[rn] = rp;
        }
        if rp != NONE {
            self.next[rp] = rn;
        }
        if first != NONE {
            self.prev[first] = root;
        }
        self.next[root] = first;
        self.prev[root] = NONE;
    }

    fn rotate_left(&mut self, mut root: usize, p: usize) -> usize {
        let r = self.right[p];
        if r == NONE {
            return root;
        }
        let rl = self.left[r];
        self.right[p] = rl;
        if rl != NONE {
            self.parent[rl] = p;
        }
        let pp = self.parent[p];
        self.parent[r] = pp;
        if pp == NONE {
            root = r;
            self.red[r] = false;
        } else if self.left[pp] == p {
            self.left[pp] = r;
        } else {
            self.right[pp] = r;
        }
        self.left[r] = p;
        self.parent[p] = r;
        root
    }

    fn rotate_right(&mut self, mut root: usize, p: usize) -> usize {
        let l = self.left[p];
        if l == NONE {
            return root;
        }
        let lr = self.right[l];
        self.left[p] = lr;
        if lr != NONE {
            self.parent[lr] = p;
        }
        let pp = self.parent[p];
        self.parent[l] = pp;
        if pp == NONE {
            root = l;
            self.red[l] = false;
        } else if self.right[pp] == p {
            self.right[pp] = l;
        } else {
            self.left[pp] = l;
        }
        self.right[l] = p;
        self.parent[p] = l;
        root
    }

    /// Red-black insertion fix-up, as the JDK's (returns the root).
    fn balance_insertion(&mut self, mut root: usize, mut x: usize) -> usize {
        self.red[x] = true;
        loop {
            let mut xp = self.parent[x];
            if xp == NONE {
                self.red[x] = false;
                return x;
            }
            let mut xpp = self.parent[xp];
            if !self.red[xp] || xpp == NONE {
                return root;
            }
            let xppl = self.left[xpp];
            if xp == xppl {
                let xppr = self.right[xpp];
                if xppr != NONE && self.red[xppr] {
                    self.red[xppr] = false;
                    self.red[xp] = false;
                    self.red[xpp] = true;
                    x = xpp;
                } else {
                    if x == self.right[xp] {
                        x = xp;
                        root = self.rotate_left(root, x);
                        xp = self.parent[x];
                        xpp = if xp == NONE { NONE } else { self.parent[xp] };
                    }
                    if xp != NONE {
                        self.red[xp] = false;
                        if xpp != NONE {
                            self.red[xpp] = true;
                            root = self.rotate_right(root, xpp);
                        }
                    }
                }
            } else if xppl != NONE && self.red[xppl] {
                self.red[xppl] = false;
                self.red[xp] = false;
                self.red[xpp] = true;
                x = xpp;
            } else {
                if x == self.left[xp] {
                    x = xp;
                    root = self.rotate_right(root, x);
                    xp = self.parent[x];
                    xpp = if xp == NONE { NONE } else { self.parent[xp] };
                }
                if xp != NONE {
                    self.red[xp] = false;
                    if xpp != NONE {
                        self.red[xpp] = true;
                        root = self.rotate_left(root, xpp);
                    }
                }
            }
        }
    }

    fn resize(&mut self) {
        let old = std::mem::take(&mut self.buckets);
        let bit = old.len();
        self.buckets = vec![NONE; bit * 2];
        for (j, &first) in old.iter().enumerate() {
            if first == NONE {
                continue;
            }
            if self.next[first] == NONE {
                let at = self.index(first);
                self.buckets[at] = first;
                continue;
            }
            let is_tree = self.tree[first];
            // Split in list order: (head, tail, count) of each half.
            let mut halves = [(NONE, NONE, 0usize); 2];
            let mut e = first;
            while e != NONE {
                let following = self.next[e];
                self.next[e] = NONE;
                let half = &mut halves[usize::from(self.hash[e] as u32 as usize & bit != 0)];
                if is_tree {
                    self.prev[e] = half.1;
                }
                if half.1 == NONE {
                    half.0 = e;
                } else {
                    self.next[half.1] = e;
                }
                half.1 = e;
                half.2 += 1;
                e = following;
            }
            for (side, &(head, _, count)) in halves.iter().enumerate() {
                if head == NONE {
                    continue;
                }
                self.buckets[j + side * bit] = head;
                if !is_tree {
                    continue;
                }
                if count <= 6 {
                    let mut e = head;
                    while e != NONE {
                        self.tree[e] = false;
                        e = self.next[e];
                    }
                } else if halves[1 - side].0 != NONE {
                    self.treeify(head);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(keys: &[i32], call_after_last: bool) -> Vec<i32> {
        iteration_order(keys, |a, b| keys[a].cmp(&keys[b]), call_after_last)
            .unwrap()
            .into_iter()
            .map(|i| keys[i])
            .collect()
    }

    #[test]
    fn buckets_list_newest_first_and_grow_lazily() {
        // Integer keys hash to themselves.
        assert_eq!(order(&[0, 16, 32, 1], false), vec![32, 16, 0, 1]);
        let mut keys = vec![16, 0];
        keys.extend(1..=11);
        // 13 keys overflow 16 buckets, but the table grows only on a later call.
        let mut kept = vec![0, 16];
        kept.extend(1..=11);
        assert_eq!(order(&keys, false), kept);
        let mut grown: Vec<i32> = (0..=11).collect();
        grown.push(16);
        assert_eq!(order(&keys, true), grown);
    }

    #[test]
    fn a_crowded_bucket_grows_the_table_then_becomes_a_tree() {
        let keys: Vec<i32> = (0..9).map(|k| k * 64).collect();
        let mut newest_first = keys.clone();
        newest_first.reverse();
        assert_eq!(order(&keys, false), newest_first);
        // A tenth key in that bucket makes it a tree: its root goes in front, the rest keep
        // their order, the new key right after its parent. (Orders recorded from OpenJDK 17.)
        let keys: Vec<i32> = (0..10).map(|k| k * 64).collect();
        assert_eq!(
            order(&keys, false),
            [384, 576, 512, 448, 320, 256, 192, 128, 64, 0]
        );
        let keys: Vec<i32> = (0..40).map(|k| k * 64).collect();
        let mut want = vec![640, 384, 576];
        want.extend((11..40).map(|k| k * 64));
        want.extend([512, 448, 320, 256, 192, 128, 64, 0]);
        assert_eq!(order(&keys, false), want);
        // Trees split, rebuilt and turned back into lists as the table grows.
        let keys: Vec<i32> = (0..200).map(|k| (k % 3) * 64 + k * 4096).collect();
        let got = order(&keys, false);
        assert_eq!(
            got[..12],
            [36864, 24576, 49152, 61440, 12288, 0, 98304, 110592, 122880, 86016, 73728, 159744]
        );
        assert_eq!(got[66..72], [786432, 41024, 53312, 28736, 16448, 4160]);
        assert_eq!(got[195..], [745600, 733312, 721024, 807040, 794752]);
    }
}
