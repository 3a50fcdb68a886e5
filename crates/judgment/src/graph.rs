//! The supersession graph (SPEC §2.3–§2.4): resolution keys, claims, ambiguity, chains and the
//! knowledge instant.
//!
//! Owns: turning (document key, declared references) into "who supersedes whom" at a given
//! knowledge instant, and walking chains to the terminal successor. Pure: no I/O, no clock.
//! Does not own: verdicts (trust.rs) or storing edges (store/write.rs).

use rustc_hash::FxHashMap as HashMap;

/// Chain length past which a walk keeps a set of the documents it has passed.
const SHORT_CHAIN: usize = 16;

/// SPEC §2.3: trim; while ≥ 2 chars and wrapped in `[` … `]`, unwrap and trim; drop a trailing
/// `.md` in any case; keep the last `/` or `\` segment; trim.
pub fn resolution_key(reference: &str) -> String {
    let mut s = reference.trim();
    while s.chars().count() >= 2 && s.starts_with('[') && s.ends_with(']') {
        s = s[1..s.len() - 1].trim();
    }
    let lower_tail = s.len() >= 3 && s.is_char_boundary(s.len() - 3);
    if lower_tail && s[s.len() - 3..].eq_ignore_ascii_case(".md") {
        s = &s[..s.len() - 3];
    }
    let last = s.rsplit(['/', '\\']).next().unwrap_or(s);
    last.trim().to_string()
}

/// A document as the graph sees it.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub key: String,
    pub path: String,
    /// First indexing time in µs since the epoch (SPEC §2.4 transaction time); None = undated.
    pub first_indexed_us: Option<i64>,
    /// The name a reference resolves to besides the key: an identifier `#family:number`
    /// (`#adr:5`, `#:19`) compared numerically (SPEC §2.5), or an exact name.
    pub alias: Option<String>,
    /// The folder the document lives in (absolute: its source joined with its path's parent),
    /// for nearest-first resolution; empty when unknown, and once the graph is built.
    pub folder: String,
}

/// One declared edge: `declarer` names `key`. Forward (`supersedes:`, `Replaces:`): the
/// declarer supersedes what the key names. Reversed (`Superseded-By:`): what the key names
/// supersedes the declarer. Either way the edge is dated by its declarer (SPEC §2.4).
#[derive(Debug, Clone)]
pub struct Declared {
    pub declarer: usize,
    /// The resolution key; alternatives separated by `\n` are tried in order (a link's path
    /// key, then the identifier its file name carries).
    pub key: String,
    pub reversed: bool,
    /// SPEC §2.5: resolve nearest first (the declarer's folder, then up its tree, then the
    /// store). Frontmatter references follow §2.3 exactly and are not scoped.
    pub scoped: bool,
    /// The edge holds from this instant on (µs since the epoch), when its declaration is dated.
    pub since_us: Option<i64>,
}

/// The instant a graph question is asked at: the knowledge instant (SPEC §2.4) and the
/// valid-time instant a dated declaration is compared with (None: every dated edge holds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    pub known_us: Option<i64>,
    pub now_us: Option<i64>,
}

impl At {
    pub fn known(known_us: Option<i64>) -> At {
        At {
            known_us,
            now_us: None,
        }
    }
}

/// How one declared reference resolved (SPEC §2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Dangling,
    SelfReference,
    Resolved(usize),
    Ambiguous(Vec<usize>),
}

/// One declared reference and what it resolved to.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Position of the edge in the list `Graph::build` was given.
    pub edge: usize,
    pub declarer: usize,
    pub key: String,
    pub resolution: Resolution,
    /// The reference names the declarer's successor (`Superseded-By:`), not its predecessor.
    pub reversed: bool,
    pub since_us: Option<i64>,
}

impl Claim {
    /// (predecessor, successor) of a resolved claim.
    pub fn pair(&self) -> Option<(usize, usize)> {
        match self.resolution {
            Resolution::Resolved(t) if self.reversed => Some((self.declarer, t)),
            Resolution::Resolved(t) => Some((t, self.declarer)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    nodes: Vec<Node>,
    claims: Vec<Claim>,
    /// Per document: indices into `claims` that resolved to it.
    incoming: Lists,
    /// Per document: indices into `claims` that named it among several matches.
    ambiguous_in: Lists,
    /// Per document: indices into `claims` it declared.
    outgoing: Lists,
}

/// Per document, claim indices in the order they were added, held as one array and where each
/// document's run of it starts: most documents hold none, and a list per document took 24
/// bytes of each of a large store's notes three times over.
#[derive(Debug, Clone, Default)]
struct Lists {
    start: Vec<u32>,
    items: Vec<usize>,
}

impl Lists {
    /// The lists of `n` documents from (document, claim) pairs in claim order.
    fn of(n: usize, pairs: &[(usize, usize)]) -> Lists {
        let mut start = vec![0u32; n + 1];
        for &(d, _) in pairs {
            start[d + 1] += 1;
        }
        for d in 0..n {
            start[d + 1] += start[d];
        }
        let mut next = start.clone();
        let mut items = vec![0; pairs.len()];
        for &(d, id) in pairs {
            items[next[d] as usize] = id;
            next[d] += 1;
        }
        Lists { start, items }
    }

    fn get(&self, d: usize) -> &[usize] {
        &self.items[self.start[d] as usize..self.start[d + 1] as usize]
    }
}

/// SPEC §2.4: an edge applies at instant `k` unless it was recorded after it; undated edges and
/// the absence of an instant always apply.
fn applies(date: Option<i64>, k: Option<i64>) -> bool {
    match (date, k) {
        (Some(d), Some(k)) => d <= k,
        _ => true,
    }
}

/// An identifier key `#family:number` (`#adr:5`, `#:19`).
fn identifier(key: &str) -> Option<(&str, u64)> {
    let (family, number) = key.strip_prefix('#')?.split_once(':')?;
    Some((family, number.parse().ok()?))
}

/// Documents by name (key or alias): one map entry per name and a chain through `entries` for
/// the documents sharing it, so building it allocates nothing per document.
struct Names<'a> {
    heads: HashMap<&'a str, u32>,
    /// (document, the next entry of the same name or `u32::MAX`).
    entries: Vec<(usize, u32)>,
}

impl<'a> Names<'a> {
    fn with_capacity(n: usize) -> Names<'a> {
        Names {
            heads: HashMap::with_capacity_and_hasher(n, Default::default()),
            entries: Vec::with_capacity(n),
        }
    }

    fn add(&mut self, name: &'a str, document: usize) {
        let next = self
            .heads
            .insert(name, self.entries.len() as u32)
            .unwrap_or(u32::MAX);
        self.entries.push((document, next));
    }

    fn get(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.heads.get(name).copied().unwrap_or(u32::MAX);
        std::iter::from_fn(move || {
            let &(document, next) = self.entries.get(at as usize)?;
            at = next;
            Some(document)
        })
    }
}

/// Folder segments, for the distance between folders.
fn segments(folder: &str) -> Vec<&str> {
    folder
        .split(['/', '\\'])
        .filter(|s| !s.is_empty())
        .collect()
}

/// The document a relative link from `folder` names (`../adr/0007-x.md`, `./x.md#a`, a folder
/// with a trailing `/` standing for its `README.md` or `index.md`), if it is in the store.
fn linked_file(
    folder: &[&str],
    relative: &str,
    files: &HashMap<Vec<&str>, usize>,
) -> Option<usize> {
    if folder.is_empty() {
        return None;
    }
    let mut path: Vec<&str> = folder.to_vec();
    for part in relative.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                path.pop()?;
            }
            name => path.push(name),
        }
    }
    if relative.ends_with('/') {
        return ["README.md", "index.md", "readme.md"]
            .iter()
            .find_map(|index| {
                let mut file = path.clone();
                file.push(index);
                files.get(&file).copied()
            });
    }
    files.get(&path).copied()
}

/// A numbered stem (`0016-file-uploads`, `ADR_0016_File_Uploads`, `DR008`, `2433-topology-hints`)
/// as (family lower case, number, the rest after its number's separator); None when the stem is
/// not numbered (a date prefix is not a number), as `recall.status.file_alias` reads file names.
fn numbered(stem: &str) -> Option<(String, u64, &str)> {
    let b = stem.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    if (0..4).all(digit)
        && b.get(4) == Some(&b'-')
        && digit(5)
        && digit(6)
        && b.get(7) == Some(&b'-')
    {
        return None;
    }
    let separator = |i: usize| matches!(b.get(i), Some(b'-' | b'_' | b' '));
    let letters = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let mut i = letters;
    match letters {
        0 => {}
        2..=6 if separator(i) => i += 1,
        2..=6 => {}
        _ => return None,
    }
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let end = i + digits;
    if !(1..=6).contains(&digits) || !(end == b.len() || separator(end) || b[end] == b'.') {
        return None;
    }
    let number = stem[i..end].parse().ok()?;
    let rest = if end < b.len() { &stem[end + 1..] } else { "" };
    Some((stem[..letters].to_ascii_lowercase(), number, rest))
}

/// The name a numbered file's stem carries after its number (`0016-file-uploads` and
/// `ADR_0016_File_Uploads` → `file-uploads`), lower case with `-` for `_` and spaces; None when
/// the stem is not numbered or names nothing after its number.
fn numbered_name(stem: &str) -> Option<String> {
    let name: String = numbered(stem)?
        .2
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The key prefix of a link to a repository's issue or pull request (`#issue:2433`).
const ISSUE_KEY: &str = "#issue:";

/// The keys of the file names that stand for their folder (a folder-per-note tree's README).
const INDEX_NAMES: [&str; 3] = ["readme", "index", "_index"];

/// SPEC §2.5: a note named `README.md` or `index.md` takes its name and number from its folder
/// (`keps/sig-network/2433-topology-aware-hints/README.md` is `2433-topology-aware-hints`,
/// number 2433). The node's (key, alias) when it does.
fn folder_identity(node: &Node) -> Option<(String, Option<String>)> {
    if !INDEX_NAMES.contains(&node.key.to_ascii_lowercase().as_str()) {
        return None;
    }
    let folder = node.folder.trim_end_matches(['/', '\\']);
    let name = folder
        .rsplit(['/', '\\'])
        .next()
        .filter(|n| !n.is_empty())?;
    let alias = numbered(name).map(|(family, number, _)| format!("#{family}:{number}"));
    Some((name.to_string(), alias))
}

/// How many levels up from `from` the nearest folder holding `to` is (0: `to` is `from` or
/// below it).
fn distance(from: &[&str], to: &[&str]) -> usize {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    from.len() - common
}

/// What scoped references resolve against: names and numbers, folders, files, and each
/// numbered note's name after its number.
struct Places<'a> {
    lookup: &'a dyn Fn(&str) -> Vec<(usize, bool)>,
    folders: &'a [Vec<&'a str>],
    files: &'a HashMap<Vec<&'a str>, usize>,
    nodes: &'a [Node],
    names: &'a [Option<String>],
    by_name: &'a Names<'a>,
}

impl Places<'_> {
    /// SPEC §2.5: each alternative key in turn; the first that names another document resolves
    /// to the nearest of them (the declarer's folder, then up its tree, then the store); only a
    /// tie at the nearest level is ambiguous. A note found by a number (the linked file's or the
    /// link text's) while the linked file's own name is missing must not be contradicted: when
    /// the name after the file's number, or another number the link carries, names a different
    /// note at least as near, the reference names both and is ambiguous (SPEC §2.3).
    fn nearest(&self, declarer: usize, key: &str) -> Resolution {
        let mut itself = false;
        let mut linked_name: Option<String> = None;
        let alternatives: Vec<&str> = key.split('\n').filter(|k| !k.is_empty()).collect();
        for (at, alternative) in alternatives.iter().enumerate() {
            if let Some(relative) = alternative.strip_prefix('@') {
                // A relative link names one file exactly, from the declarer's folder.
                match linked_file(&self.folders[declarer], relative, self.files) {
                    Some(m) if m == declarer => itself = true,
                    Some(m) => return Resolution::Resolved(m),
                    None => {}
                }
                continue;
            }
            let Some(tied) = self.named(declarer, alternative, &mut itself) else {
                if identifier(alternative).is_none() && linked_name.is_none() {
                    linked_name = numbered_name(alternative);
                }
                continue;
            };
            let [only] = tied[..] else {
                return Resolution::Ambiguous(tied);
            };
            if identifier(alternative).is_none() {
                return Resolution::Resolved(only);
            }
            let reach = distance(&self.folders[declarer], &self.folders[only]);
            let mut found = vec![only];
            if let Some(name) = linked_name.as_deref() {
                if self.names[only].as_deref() != Some(name) {
                    found.extend(self.by_name.get(name).filter(|&m| {
                        m != declarer
                            && distance(&self.folders[declarer], &self.folders[m]) <= reach
                    }));
                }
            }
            for later in alternatives[at + 1..]
                .iter()
                .filter(|a| identifier(a).is_some())
            {
                let mut ignored = false;
                if let Some(other) = self.named(declarer, later, &mut ignored) {
                    if !other.contains(&only)
                        && distance(&self.folders[declarer], &self.folders[other[0]]) <= reach
                    {
                        found.extend(other);
                    }
                }
            }
            found.sort_unstable();
            found.dedup();
            return match found[..] {
                [only] => Resolution::Resolved(only),
                _ => Resolution::Ambiguous(found),
            };
        }
        if itself {
            Resolution::SelfReference
        } else {
            Resolution::Dangling
        }
    }

    /// The documents other than the declarer that one name or number names, the nearest level
    /// of them only; None when it names none. `itself` is set when it names the declarer.
    fn named(&self, declarer: usize, alternative: &str, itself: &mut bool) -> Option<Vec<usize>> {
        // A note named with a family (`DR019`) stands for a bare-numbered note (`0019-x.md`)
        // only where the declarer numbers its own notes bare, or in the declarer's own folder:
        // a team that writes `DR` numbers does not mean another folder's bare 19.
        let bare = self.nodes[declarer]
            .alias
            .as_deref()
            .and_then(identifier)
            .is_none_or(|(family, _)| family.is_empty());
        let folders = self.folders;
        let found = (self.lookup)(alternative);
        *itself |= found.iter().any(|&(m, _)| m == declarer);
        let matches: Vec<usize> = found
            .into_iter()
            .filter(|&(m, exact)| {
                m != declarer && (exact || bare || distance(&folders[declarer], &folders[m]) == 0)
            })
            .map(|(m, _)| m)
            .collect();
        let best = matches
            .iter()
            .map(|&m| distance(&folders[declarer], &folders[m]))
            .min()?;
        Some(
            matches
                .into_iter()
                .filter(|&m| distance(&folders[declarer], &folders[m]) == best)
                .collect(),
        )
    }
}

impl Graph {
    /// Build from documents and forward (declarer index, reference key) edges.
    pub fn build(nodes: Vec<Node>, edges: &[(usize, String)]) -> Graph {
        let declared: Vec<Declared> = edges
            .iter()
            .map(|(declarer, key)| Declared {
                declarer: *declarer,
                key: key.clone(),
                reversed: false,
                scoped: false,
                since_us: None,
            })
            .collect();
        Graph::build_declared(nodes, &declared)
    }

    /// Build from documents and declared edges of either direction. A reference matches a
    /// document by its key or its alias, exactly (SPEC §2.3).
    pub fn build_declared(mut nodes: Vec<Node>, edges: &[Declared]) -> Graph {
        // A folder-per-note tree's `README.md` is known by its folder; its own name still
        // names it (`[[README]]`).
        let mut index_names: Vec<(String, usize)> = Vec::new();
        // The notes a folder numbers, by that number: what a link to the tracking issue of the
        // same number names (`…/issues/2433` for `2433-topology-aware-hints/README.md`).
        let mut by_issue: HashMap<u64, Vec<usize>> = HashMap::default();
        for (i, n) in nodes.iter_mut().enumerate() {
            if let Some((key, alias)) = folder_identity(n) {
                if let Some((_, number, _)) = numbered(&key) {
                    by_issue.entry(number).or_default().push(i);
                }
                index_names.push((std::mem::replace(&mut n.key, key), i));
                if n.alias.is_none() {
                    n.alias = alias;
                }
            }
        }
        let nodes = nodes;
        // Names matter only to resolve edges: a store without any builds none.
        let mut by_key = Names::with_capacity(if edges.is_empty() { 0 } else { nodes.len() });
        for (name, i) in index_names.iter().filter(|_| !edges.is_empty()) {
            by_key.add(name.as_str(), *i);
        }
        let mut by_number: HashMap<u64, Vec<(&str, usize)>> = HashMap::default();
        for (i, n) in nodes.iter().enumerate().filter(|_| !edges.is_empty()) {
            by_key.add(n.key.as_str(), i);
            if let Some(alias) = n.alias.as_deref().filter(|a| *a != n.key) {
                match identifier(alias) {
                    Some((family, number)) => {
                        by_number.entry(number).or_default().push((family, i))
                    }
                    None => by_key.add(alias, i),
                }
            }
        }
        // SPEC §2.5: `ADR 7` names a note numbered 7 of the family `adr` (exactly), or of none
        // (`0007-x`); a reference with no family (`#0007`) names a note of any family.
        let lookup = |key: &str| -> Vec<(usize, bool)> {
            // `#issue:N` (a link to an issue or pull request numbered N) names only a note whose
            // folder carries that number, never another note numbered N.
            if let Some(number) = key.strip_prefix(ISSUE_KEY) {
                let numbered = number.parse().ok().and_then(|n: u64| by_issue.get(&n));
                return numbered
                    .map_or_else(Vec::new, |ds| ds.iter().map(|&i| (i, true)).collect());
            }
            let mut found: Vec<(usize, bool)> = by_key.get(key).map(|i| (i, true)).collect();
            if let Some((family, number)) = identifier(key) {
                if let Some(numbered) = by_number.get(&number) {
                    found.extend(numbered.iter().filter_map(|&(f, i)| {
                        (family.is_empty() || f.is_empty() || f == family)
                            .then_some((i, f == family))
                    }));
                }
            }
            found.sort_unstable();
            found.dedup_by_key(|m| m.0);
            found
        };
        // Folders and files matter only to declarations in a note's own words (scoped): a store
        // whose edges are all frontmatter builds neither.
        let scoped = edges.iter().any(|e| e.scoped);
        let folders: Vec<Vec<&str>> = if scoped {
            nodes.iter().map(|n| segments(&n.folder)).collect()
        } else {
            Vec::new()
        };
        // Each document's file, as folder segments and its name, for links by relative path.
        let mut files: HashMap<Vec<&str>, usize> = HashMap::default();
        for (i, n) in nodes.iter().enumerate().filter(|_| scoped) {
            if let Some(name) = n
                .path
                .rsplit(['/', '\\'])
                .next()
                .filter(|_| !n.folder.is_empty())
            {
                let mut file = folders[i].clone();
                file.push(name);
                files.entry(file).or_insert(i);
            }
        }
        // Each numbered note's name after its number, to tell whether a link's number and its
        // file name name the same note (SPEC §2.3: an edge is never guessed).
        let names: Vec<Option<String>> = if scoped {
            nodes.iter().map(|n| numbered_name(&n.key)).collect()
        } else {
            Vec::new()
        };
        let mut by_name = Names::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            if let Some(name) = name {
                by_name.add(name.as_str(), i);
            }
        }
        let places = Places {
            lookup: &lookup,
            folders: &folders,
            files: &files,
            nodes: &nodes,
            names: &names,
            by_name: &by_name,
        };
        let n = nodes.len();
        let mut claims = Vec::with_capacity(edges.len());
        let (mut incoming, mut ambiguous_in, mut outgoing) = (Vec::new(), Vec::new(), Vec::new());
        for (edge, e) in edges.iter().enumerate() {
            let (declarer, key, reversed) = (e.declarer, e.key.clone(), e.reversed);
            if declarer >= n {
                continue;
            }
            let resolution = if e.scoped {
                places.nearest(declarer, &key)
            } else {
                let matches: Vec<usize> = lookup(key.split('\n').next().unwrap_or_default())
                    .into_iter()
                    .map(|(i, _)| i)
                    .collect();
                match matches.as_slice() {
                    [] => Resolution::Dangling,
                    [only] if *only == declarer => Resolution::SelfReference,
                    [only] => Resolution::Resolved(*only),
                    many => Resolution::Ambiguous(many.to_vec()),
                }
            };
            let id = claims.len();
            match &resolution {
                // A reversed claim supersedes its declarer; a forward one, its target.
                Resolution::Resolved(_) if reversed => incoming.push((declarer, id)),
                Resolution::Resolved(t) => incoming.push((*t, id)),
                // SPEC §2.3: the edge is never guessed. A forward reference shared by several
                // documents marks them; a successor that cannot be told apart marks the declarer.
                Resolution::Ambiguous(_) if reversed => ambiguous_in.push((declarer, id)),
                Resolution::Ambiguous(ts) => ambiguous_in.extend(ts.iter().map(|&t| (t, id))),
                Resolution::Dangling | Resolution::SelfReference => {}
            }
            outgoing.push((declarer, id));
            claims.push(Claim {
                edge,
                declarer,
                key,
                resolution,
                reversed,
                since_us: e.since_us,
            });
        }
        let mut g = Graph {
            claims,
            incoming: Lists::of(n, &incoming),
            ambiguous_in: Lists::of(n, &ambiguous_in),
            outgoing: Lists::of(n, &outgoing),
            nodes,
        };
        // Folders were needed only to resolve: a large store's notes do not hold them.
        for node in &mut g.nodes {
            node.folder = String::new();
        }
        g
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    pub fn claim(&self, id: usize) -> &Claim {
        &self.claims[id]
    }

    /// Claims declared by `d` (all resolutions, for explain).
    pub fn outgoing(&self, d: usize) -> &[usize] {
        self.outgoing.get(d)
    }

    /// Claims that resolved to `d` or named it ambiguously (for explain).
    pub fn incoming(&self, d: usize) -> impl Iterator<Item = usize> + '_ {
        self.incoming
            .get(d)
            .iter()
            .chain(self.ambiguous_in.get(d))
            .copied()
    }

    /// Whether claim `id` is in force at `at`: recorded by the knowledge instant, and its
    /// declaration's date (if any) reached by the valid-time instant (SPEC §2.5).
    pub fn claim_applies_at(&self, id: usize, at: At) -> bool {
        let c = &self.claims[id];
        applies(self.nodes[c.declarer].first_indexed_us, at.known_us)
            && match (c.since_us, at.now_us) {
                (Some(since), Some(now)) => since <= now,
                _ => true,
            }
    }

    /// SPEC §2.3: an applying edge names this document among two or more matches.
    pub fn is_ambiguous_at(&self, d: usize, at: At) -> bool {
        self.ambiguous_in
            .get(d)
            .iter()
            .any(|&id| self.claim_applies_at(id, at))
    }

    /// SPEC §2.4 fan-in: among the applying claims on `t`, the one recorded last wins (undated
    /// counts as earliest); ties go to the lexicographically smallest declaring path.
    pub fn successor_at(&self, t: usize, at: At) -> Option<usize> {
        self.incoming
            .get(t)
            .iter()
            .filter(|&&id| self.claim_applies_at(id, at))
            .filter_map(|&id| {
                let c = &self.claims[id];
                let recorded = self.nodes[c.declarer].first_indexed_us.unwrap_or(i64::MIN);
                c.pair().map(|(_, successor)| (recorded, successor))
            })
            .max_by(|&(da, a), &(db, b)| {
                da.cmp(&db)
                    .then_with(|| self.nodes[b].path.cmp(&self.nodes[a].path))
            })
            .map(|(_, successor)| successor)
    }

    /// The chain walk from `d`: `d`, its successor, … stopping before the first revisit (SPEC
    /// §2.4). Every step uses only the edges that apply at `at`.
    pub fn walk_at(&self, d: usize, at: At) -> Vec<usize> {
        let mut path = vec![d];
        // A revisit is looked for in the path itself while it is short (chains are: a search
        // walks several per query, and a mark per document would clear the whole corpus each
        // time), then in a set.
        let mut seen: Option<rustc_hash::FxHashSet<usize>> = None;
        let mut cur = d;
        while let Some(next) = self.successor_at(cur, at) {
            let revisit = match seen.as_mut() {
                Some(set) => !set.insert(next),
                None => path.contains(&next),
            };
            if revisit {
                break;
            }
            path.push(next);
            if seen.is_none() && path.len() > SHORT_CHAIN {
                seen = Some(path.iter().copied().collect());
            }
            cur = next;
        }
        path
    }

    /// The terminal successor of `d` (a→b→c: c), or None when nothing supersedes it.
    pub fn terminal_at(&self, d: usize, at: At) -> Option<usize> {
        let path = self.walk_at(d, at);
        (path.len() > 1).then(|| path[path.len() - 1])
    }
}

/// The knowledge-instant-only forms of the graph's questions, for tests.
#[cfg(test)]
impl Graph {
    pub fn claim_applies(&self, id: usize, k: Option<i64>) -> bool {
        self.claim_applies_at(id, At::known(k))
    }
    pub fn is_ambiguous(&self, d: usize, k: Option<i64>) -> bool {
        self.is_ambiguous_at(d, At::known(k))
    }
    pub fn successor(&self, t: usize, k: Option<i64>) -> Option<usize> {
        self.successor_at(t, At::known(k))
    }
    pub fn walk(&self, d: usize, k: Option<i64>) -> Vec<usize> {
        self.walk_at(d, At::known(k))
    }
    pub fn terminal(&self, d: usize, k: Option<i64>) -> Option<usize> {
        self.terminal_at(d, At::known(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(docs: &[(&str, Option<i64>)], edges: &[(usize, &str)]) -> Graph {
        let nodes = docs
            .iter()
            .map(|(p, t)| Node {
                key: resolution_key(p),
                path: p.to_string(),
                first_indexed_us: *t,
                alias: None,
                folder: String::new(),
            })
            .collect();
        let edges: Vec<(usize, String)> =
            edges.iter().map(|(d, r)| (*d, resolution_key(r))).collect();
        Graph::build(nodes, &edges)
    }

    #[test]
    fn spec_keys() {
        for (input, want) in [
            ("v1.md", "v1"),
            ("  [[v1]] ", "v1"),
            ("[v1.MD]", "v1"),
            ("[[ notes/v1.md ]]", "v1"),
            ("a\\b\\c.Md", "c"),
            ("[", "["),
            ("[]", ""),
            ("x.markdown", "x.markdown"),
            ("dir/", ""),
            ("été.md", "été"),
        ] {
            assert_eq!(resolution_key(input), want, "input {input:?}");
        }
    }

    #[test]
    fn chain_reports_terminal() {
        // b supersedes a, c supersedes b.
        let g = graph(
            &[("a.md", None), ("b.md", None), ("c.md", None)],
            &[(1, "a"), (2, "[[b]]")],
        );
        assert_eq!(g.terminal(0, None), Some(2));
        assert_eq!(g.terminal(1, None), Some(2));
        assert_eq!(g.terminal(2, None), None);
    }

    #[test]
    fn cycle_stops_on_first_revisit() {
        let g = graph(&[("a.md", None), ("b.md", None)], &[(0, "b"), (1, "a")]);
        assert_eq!(g.terminal(0, None), Some(1));
        assert_eq!(g.terminal(1, None), Some(0));
    }

    #[test]
    fn a_long_chain_walks_to_its_end_and_stops_on_a_revisit() {
        // d0 → d1 → … → d39, and d39 back to d20: past the short-chain length.
        let names: Vec<String> = (0..40).map(|i| format!("d{i}.md")).collect();
        let docs: Vec<(&str, Option<i64>)> = names.iter().map(|n| (n.as_str(), None)).collect();
        let mut edges: Vec<(usize, String)> = (0..39).map(|i| (i + 1, format!("d{i}"))).collect();
        edges.push((20, "d39".into()));
        let edges: Vec<(usize, &str)> = edges.iter().map(|(d, r)| (*d, r.as_str())).collect();
        let g = graph(&docs, &edges);
        let walk = g.walk(0, None);
        assert_eq!(walk, (0..40).collect::<Vec<_>>());
        assert_eq!(g.terminal(0, None), Some(39));
        assert_eq!(g.walk(25, None), (25..40).chain(20..25).collect::<Vec<_>>());
    }

    #[test]
    fn self_dangling_and_ambiguous() {
        let g = graph(
            &[("x/run.md", None), ("y/run.md", None), ("z.md", None)],
            &[(2, "run"), (2, "z.md"), (2, "missing")],
        );
        assert!(g.is_ambiguous(0, None) && g.is_ambiguous(1, None) && !g.is_ambiguous(2, None));
        assert_eq!(g.terminal(0, None), None);
        assert_eq!(g.terminal(2, None), None);
        let kinds: Vec<_> = g
            .outgoing(2)
            .iter()
            .map(|&i| g.claim(i).resolution.clone())
            .collect();
        assert_eq!(
            kinds,
            vec![
                Resolution::Ambiguous(vec![0, 1]),
                Resolution::SelfReference,
                Resolution::Dangling
            ]
        );
    }

    #[test]
    fn per_step_knowledge_instant() {
        // a→b recorded at 10, b→c at 30: at instant 20 a resolves to b.
        let g = graph(
            &[("a.md", Some(0)), ("b.md", Some(10)), ("c.md", Some(30))],
            &[(1, "a"), (2, "b")],
        );
        assert_eq!(g.terminal(0, Some(20)), Some(1));
        assert_eq!(g.terminal(0, None), Some(2));
        assert_eq!(g.terminal(0, Some(5)), None);
    }

    #[test]
    fn reversed_edges_and_aliases() {
        // pep-0001.rst says `Superseded-By: 2`, which names pep-0002.rst by its alias.
        let nodes = vec![
            Node {
                key: "pep-0001.rst".into(),
                path: "pep-0001.rst".into(),
                alias: Some("pep-0001".into()),
                ..Node::default()
            },
            Node {
                key: "pep-0002.rst".into(),
                path: "pep-0002.rst".into(),
                alias: Some("pep-0002".into()),
                ..Node::default()
            },
            Node {
                key: "adr".into(),
                path: "x/adr.md".into(),
                ..Node::default()
            },
            Node {
                key: "adr".into(),
                path: "y/adr.md".into(),
                ..Node::default()
            },
        ];
        let edge = |declarer: usize, key: &str, reversed: bool| Declared {
            declarer,
            key: key.into(),
            reversed,
            scoped: false,
            since_us: None,
        };
        let g = Graph::build_declared(
            nodes,
            &[
                edge(0, "pep-0002", true),
                edge(1, "pep-0001", false),
                edge(1, "adr", true),
            ],
        );
        assert_eq!(
            g.terminal(0, None),
            Some(1),
            "both directions name one successor"
        );
        assert_eq!(g.successor(1, None), None);
        assert!(
            g.is_ambiguous(1, None),
            "a successor that cannot be told apart"
        );
        assert!(!g.is_ambiguous(2, None) && !g.is_ambiguous(3, None));
        assert_eq!(g.claim(0).pair(), Some((0, 1)));
        assert_eq!(g.claim(1).pair(), Some((0, 1)));
    }

    #[test]
    fn fan_in_latest_claim_then_path() {
        let g = graph(
            &[("t.md", Some(0)), ("b.md", Some(5)), ("a.md", Some(9))],
            &[(1, "t"), (2, "t")],
        );
        assert_eq!(g.successor(0, None), Some(2), "recorded last wins");
        let g = graph(
            &[("t.md", Some(0)), ("b.md", Some(5)), ("a.md", Some(5))],
            &[(1, "t"), (2, "t")],
        );
        assert_eq!(g.successor(0, None), Some(2), "tie: smallest path wins");
        let g = graph(
            &[("t.md", Some(0)), ("b.md", None), ("a.md", Some(1))],
            &[(1, "t"), (2, "t")],
        );
        assert_eq!(g.successor(0, None), Some(2), "undated counts as earliest");
    }

    /// Documents (folder, key, alias) and scoped reversed edges (declarer, key).
    fn scoped(docs: &[(&str, &str, Option<&str>)], edges: &[(usize, &str)]) -> Graph {
        let nodes = docs
            .iter()
            .map(|(folder, key, alias)| Node {
                key: key.to_string(),
                path: format!("{folder}/{key}.md"),
                alias: alias.map(str::to_string),
                folder: folder.to_string(),
                ..Node::default()
            })
            .collect();
        let edges: Vec<Declared> = edges
            .iter()
            .map(|(declarer, key)| Declared {
                declarer: *declarer,
                key: key.to_string(),
                reversed: true,
                scoped: true,
                since_us: None,
            })
            .collect();
        Graph::build_declared(nodes, &edges)
    }

    #[test]
    fn numbers_resolve_nearest_folder_first() {
        let g = scoped(
            &[
                ("/r/team-a/adr", "0016-a", Some("#:16")),
                ("/r/team-b/adr", "ADR-0016-b", Some("#adr:16")),
                ("/r/team-b/adr", "ADR-0003-c", Some("#adr:3")),
                ("/r/team-a/adr/archive", "0002-d", Some("#:2")),
                ("/r/team-a/adr", "0009-e", Some("#:9")),
            ],
            &[(2, "#adr:16"), (3, "#adr:9"), (4, "#:16")],
        );
        assert_eq!(g.successor(2, None), Some(1), "team-b's own ADR 16 wins");
        assert_eq!(g.successor(3, None), Some(4), "one folder up");
        assert_eq!(g.successor(4, None), Some(0), "a bare number, same folder");
    }

    #[test]
    fn ties_at_the_nearest_level_are_ambiguous_and_families_stay_apart() {
        let g = scoped(
            &[
                ("/r/a", "0012-x", Some("#:12")),
                ("/r/a", "0012-y", Some("#:12")),
                ("/r/a", "0001-z", Some("#:1")),
                ("/r/b", "0012-w", Some("#:12")),
                ("/r/c", "DR016-v", Some("#dr:16")),
                ("/r/d", "0019-u", Some("#:19")),
                ("/r/a", "PEP-0012", Some("#pep:12")),
            ],
            &[(2, "#adr:12"), (4, "#dr:19"), (2, "#rfc:77\n#adr:1")],
        );
        assert_eq!(
            g.claim(0).resolution,
            Resolution::Ambiguous(vec![0, 1]),
            "a tie in the folder; the other folder's 12 and the PEP are not candidates"
        );
        assert!(g.is_ambiguous(2, None));
        assert_eq!(
            g.claim(1).resolution,
            Resolution::Dangling,
            "DR019 is not another folder's bare 0019"
        );
        assert_eq!(
            g.claim(2).resolution,
            Resolution::SelfReference,
            "alternatives are tried in order"
        );
    }

    #[test]
    fn a_number_and_a_name_that_name_two_notes_prove_nothing() {
        // "Superseded by [ADR 16](0016-compliance-documentation.md)": no such file; the folder's
        // 16 is `0016-file-uploads`, and `0025-compliance-documentation` holds that name.
        let g = scoped(
            &[
                ("/r/adr", "0003-old", Some("#:3")),
                ("/r/adr", "0016-file-uploads", Some("#:16")),
                ("/r/adr", "0025-compliance-documentation", Some("#:25")),
                ("/r/adr", "0004-also-old", Some("#:4")),
                ("/r/adr", "0005-renamed", Some("#:5")),
                ("/r/other", "0030-audit-trail", Some("#:30")),
                ("/r/adr", "0006-x", Some("#:6")),
            ],
            &[
                (
                    0,
                    "@0016-compliance-documentation.md\n0016-compliance-documentation\n#:16\n#adr:16",
                ),
                // A renamed file: its number stands when its old name names no other note.
                (3, "0016-file-upload-limits\n#:16"),
                // A name found only in a farther folder does not contradict a nearer number.
                (4, "0016-audit-trail\n#:16"),
                // The link's number and its text's number disagree.
                (6, "0016-gone\n#:16\n#adr:25"),
            ],
        );
        assert_eq!(g.claim(0).resolution, Resolution::Ambiguous(vec![1, 2]));
        assert_eq!(g.successor(0, None), None, "no successor is promoted");
        assert!(g.is_ambiguous(0, None));
        assert_eq!(g.claim(1).resolution, Resolution::Resolved(1));
        assert_eq!(g.claim(2).resolution, Resolution::Resolved(1));
        assert_eq!(g.claim(3).resolution, Resolution::Ambiguous(vec![1, 2]));
    }

    #[test]
    fn a_folder_per_note_readme_is_known_by_its_folder() {
        let node = |folder: &str, name: &str, alias: Option<&str>| Node {
            key: resolution_key(name),
            path: format!("x/{name}"),
            folder: folder.into(),
            alias: alias.map(str::to_string),
            ..Node::default()
        };
        let nodes = vec![
            node(
                "/r/keps/sig-node/2433-topology-aware-hints",
                "README.md",
                None,
            ),
            node(
                "/r/keps/sig-auth/1205-bound-tokens",
                "README.md",
                Some("#kep:1205"),
            ),
            node("/r/keps/sig-auth/1234-token-volumes", "README.md", None),
            node("/r/keps/sig-auth/5000-x", "notes.md", None),
        ];
        let edge = |declarer: usize, key: &str| Declared {
            declarer,
            key: key.into(),
            reversed: true,
            scoped: true,
            since_us: None,
        };
        let g = Graph::build_declared(
            nodes,
            &[
                // `/keps/sig-node/2433-topology-aware-hints/`: the folder's name and number.
                edge(2, "2433-topology-aware-hints\n#:2433"),
                // "replaced by [KEP 1205](…)": its title's identifier.
                edge(2, "#kep:1205"),
                // A bare number names the folder's number; `[[README]]` its own name.
                edge(3, "#kep:2433"),
                edge(0, "README"),
                // "[Topology hints](https://…/issues/2433)": the tracking issue's number.
                edge(3, "#issue:2433"),
                // No folder is numbered 5000: a note numbered so is not an issue's.
                edge(2, "#issue:5000"),
            ],
        );
        assert_eq!(g.node(0).key, "2433-topology-aware-hints");
        assert_eq!(g.node(0).alias.as_deref(), Some("#:2433"));
        assert_eq!(
            g.node(1).alias.as_deref(),
            Some("#kep:1205"),
            "its own alias stays"
        );
        assert_eq!(
            g.node(3).key,
            "notes",
            "only an index name stands for its folder"
        );
        let got: Vec<_> = (0..6).map(|id| g.claim(id).resolution.clone()).collect();
        assert_eq!(
            got[4],
            Resolution::Resolved(0),
            "the tracking issue's number"
        );
        assert_eq!(
            got[5],
            Resolution::Dangling,
            "only a folder's number is an issue's"
        );
        assert_eq!(got[0], Resolution::Resolved(0));
        assert_eq!(got[1], Resolution::Resolved(1));
        assert_eq!(got[2], Resolution::Resolved(0));
        assert!(
            matches!(got[3], Resolution::Ambiguous(_)),
            "three READMEs share the name"
        );
    }

    #[test]
    fn numbered_names() {
        for (stem, want) in [
            ("0016-file-uploads", Some("file-uploads")),
            ("ADR_0016_File_Uploads", Some("file-uploads")),
            ("adr-0005-x", Some("x")),
            ("DR008-use kafka", Some("use-kafka")),
            ("pep-0008", None),
            ("2021-05-01-meeting", None),
            ("notes", None),
            ("0016", None),
            ("LONGFAMILY-0016-x", None),
        ] {
            assert_eq!(numbered_name(stem).as_deref(), want, "stem {stem:?}");
        }
    }

    #[test]
    fn dated_edges_hold_from_their_date() {
        let nodes = vec![
            Node {
                key: "a".into(),
                ..Node::default()
            },
            Node {
                key: "b".into(),
                ..Node::default()
            },
        ];
        let g = Graph::build_declared(
            nodes,
            &[Declared {
                declarer: 0,
                key: "b".into(),
                reversed: true,
                scoped: true,
                since_us: Some(100),
            }],
        );
        let at = |now| At {
            known_us: None,
            now_us: Some(now),
        };
        assert_eq!(g.terminal_at(0, at(99)), None);
        assert_eq!(g.terminal_at(0, at(100)), Some(1));
        assert_eq!(
            g.terminal(0, None),
            Some(1),
            "no valid-time instant: it holds"
        );
    }

    #[test]
    fn a_relative_link_names_one_file() {
        // Two teams hold `0005-use-postgres.md`; each links its own by a relative path, and a
        // link to a folder stands for its README.
        let node = |folder: &str, name: &str| Node {
            key: resolution_key(name),
            path: format!("x/{name}"),
            folder: folder.into(),
            ..Node::default()
        };
        let nodes = vec![
            node("/r/a/adr", "0005-use-postgres.md"),
            node("/r/b/adr", "0005-use-postgres.md"),
            node("/r/b/adr", "0006-b.md"),
            node("/r/a/adr", "0006-a.md"),
            node("/r/a/adr/spec", "README.md"),
        ];
        let edge = |declarer: usize, key: &str| Declared {
            declarer,
            key: key.into(),
            reversed: false,
            scoped: true,
            since_us: None,
        };
        let g = Graph::build_declared(
            nodes,
            &[
                edge(2, "@0005-use-postgres.md\n0005-use-postgres"),
                edge(3, "@./0005-use-postgres.md\n0005-use-postgres"),
                edge(3, "@spec/"),
                edge(3, "@../../b/adr/0006-b.md"),
                edge(3, "@gone.md"),
            ],
        );
        let got: Vec<_> = (0..5).map(|id| g.claim(id).resolution.clone()).collect();
        assert_eq!(
            got,
            vec![
                Resolution::Resolved(1),
                Resolution::Resolved(0),
                Resolution::Resolved(4),
                Resolution::Resolved(2),
                Resolution::Dangling
            ]
        );
    }

    #[test]
    fn keys_unwrap_only_brackets_that_close() {
        assert_eq!(resolution_key("[ab"), "[ab");
        assert_eq!(resolution_key("ab]"), "ab]");
        assert_eq!(resolution_key(" [[ a/b.MD ]] "), "b");
        assert_eq!(
            resolution_key("é.md"),
            "é",
            "a multi-byte name keeps its last letter"
        );
    }

    #[test]
    fn a_numbered_stem_is_read_with_its_family_and_a_date_is_not_a_number() {
        for (stem, want) in [
            ("2026-03-01-notes", None),
            ("1234-56-rest", None),
            ("1234-5x-rest", Some(("", 1234, "5x-rest"))),
            ("12345-67-x", Some(("", 12345, "67-x"))),
            ("1234-567-x", Some(("", 1234, "567-x"))),
            ("adr12", Some(("adr", 12, ""))),
            ("adr12.5", Some(("adr", 12, "5"))),
            ("adr12x", None),
            ("ADR_0016_File", Some(("adr", 16, "File"))),
        ] {
            let got = numbered(stem);
            let got = got.as_ref().map(|(f, n, r)| (f.as_str(), *n, *r));
            assert_eq!(got, want, "stem {stem:?}");
        }
    }

    #[test]
    fn a_link_to_its_own_file_is_a_self_reference() {
        let node = |folder: &str, name: &str| Node {
            key: resolution_key(name),
            path: format!("x/{name}"),
            folder: folder.into(),
            ..Node::default()
        };
        let g = Graph::build_declared(
            vec![node("/r/adr", "0001-a.md"), node("/r/adr", "0002-b.md")],
            &[Declared {
                declarer: 0,
                key: "@./0001-a.md".into(),
                reversed: false,
                scoped: true,
                since_us: None,
            }],
        );
        assert_eq!(g.claim(0).resolution, Resolution::SelfReference);
    }

    #[test]
    fn the_first_missing_name_of_a_link_is_the_one_that_must_not_be_contradicted() {
        let g = scoped(
            &[
                ("/r/adr", "0003-old", Some("#:3")),
                ("/r/adr", "0016-file-uploads", Some("#:16")),
                ("/r/adr", "0025-compliance-documentation", Some("#:25")),
                ("/r/other", "0030-audit-trail", Some("#:30")),
            ],
            &[
                // The link's own file name (missing) is the name that counts, not a later one.
                (0, "0016-compliance-documentation\n0016-gone-name\n#:16"),
                // A later number that names a note farther than the first does not contradict.
                (0, "0016-gone\n#:16\n#:30"),
            ],
        );
        assert_eq!(g.claim(0).resolution, Resolution::Ambiguous(vec![1, 2]));
        assert_eq!(g.claim(1).resolution, Resolution::Resolved(1));
    }

    #[test]
    fn incoming_claims_are_the_resolved_and_the_ambiguous_ones() {
        let g = graph(
            &[
                ("x/a.md", None),
                ("y/a.md", None),
                ("b.md", None),
                ("c.md", None),
            ],
            &[(2, "a"), (3, "b")],
        );
        assert_eq!(g.incoming(0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(g.incoming(1).collect::<Vec<_>>(), vec![0]);
        assert_eq!(g.incoming(2).collect::<Vec<_>>(), vec![1]);
        assert_eq!(g.incoming(3).count(), 0);
        assert!(!g.is_empty() && Graph::default().is_empty());
    }
}
