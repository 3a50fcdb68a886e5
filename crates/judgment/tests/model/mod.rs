//! A reference reading of the trust rules (SPEC §2.2–§2.5, §5, §6, §7), written for clarity, not
//! speed: every question is answered by looking at every document and every edge again. The
//! property suite (`tests/properties.rs`) compares `trust::judge` over `Graph::build_declared`
//! with it on random corpora. It reads what `tests/oracle.py` reads and more: declared direction,
//! dated declarations, aliases and numbered identifiers, retirement, lexical and identifier
//! evidence, a passage lacking the asked value, and a retired best match.

use recall_judgment::answer::Lack;

pub const DAY_US: i64 = 86_400_000_000;
/// SPEC §6: how far a retired note's cosine must lead every `ok` hit's.
pub const RETIRED_LEAD: f32 = 0.10;

/// A document as the model sees it.
#[derive(Debug, Clone)]
pub struct Doc {
    pub path: String,
    pub key: String,
    pub alias: Option<String>,
    pub first_indexed_us: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub metadata_error: bool,
    pub retired: bool,
    pub retired_since: Option<String>,
}

/// A declared edge: `declarer` names `key`; reversed: the key names the declarer's successor.
#[derive(Debug, Clone)]
pub struct Edge {
    pub declarer: usize,
    pub key: String,
    pub reversed: bool,
    pub since_us: Option<i64>,
}

/// A retrieved (or fetchable) passage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cand {
    pub doc: usize,
    pub score: f32,
    pub lexical: f32,
    pub identifiers_held: bool,
    pub identifier_match: bool,
    pub lacks: Option<Lack>,
}

#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub now_us: i64,
    pub known_us: Option<i64>,
    pub threshold: f64,
    pub scale: f64,
    pub unverified: bool,
    pub lexical_weight: f64,
    pub identifier_weight: f64,
}

/// One judged hit: (doc, verdict, confidence, successor, promoted, fetched, promoted_from,
/// displaced_by).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub verdict: &'static str,
    pub confidence: f64,
    pub successor: Option<usize>,
    pub promoted: bool,
    pub fetched: bool,
    pub promoted_from: Option<usize>,
    pub displaced_by: Option<usize>,
    score: f32,
    proven: bool,
    lacks: Option<Lack>,
}

/// 00:00 UTC of a strict `YYYY-MM-DD` (a real date, year ≥ 1) in µs, else None (SPEC §2.2).
pub fn day_start_us(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    let digits = [0, 1, 2, 3, 5, 6, 8, 9];
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits.iter().all(|&i| b[i].is_ascii_digit())
    {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (
        raw[0..4].parse().ok()?,
        raw[5..7].parse().ok()?,
        raw[8..10].parse().ok()?,
    );
    let leap = y % 400 == 0 || (y % 4 == 0 && y % 100 != 0);
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if y < 1 || !(1..=12).contains(&m) || d < 1 || d > days_in[m as usize - 1] {
        return None;
    }
    // Days since 0001-01-01, then shifted to the epoch (719,162 days later).
    let years = y - 1;
    let mut days = years * 365 + years / 4 - years / 100 + years / 400;
    days += days_in[..m as usize - 1].iter().sum::<u32>() as i64 + i64::from(d) - 1;
    Some((days - 719_162) * DAY_US)
}

/// `#family:number`, the number read as a number.
fn identifier(name: &str) -> Option<(&str, u64)> {
    let (family, number) = name.strip_prefix('#')?.split_once(':')?;
    Some((family, number.parse().ok()?))
}

/// SPEC §2.3, §2.5: the documents a key names: by key or alias exactly, and an identifier names
/// every document whose alias has its number and a family that agrees (either one empty, or
/// the same).
pub fn named_by(docs: &[Doc], key: &str) -> Vec<usize> {
    (0..docs.len())
        .filter(|&i| {
            let d = &docs[i];
            let alias = d.alias.as_deref();
            d.key == key
                || alias == Some(key)
                || match (identifier(key), alias.and_then(identifier)) {
                    (Some((f, n)), Some((g, m))) => {
                        n == m && (f.is_empty() || g.is_empty() || f == g)
                    }
                    _ => false,
                }
        })
        .collect()
}

/// SPEC §2.4, §2.5: an edge is in force when its declarer was known by the knowledge instant
/// (undated: always) and its declaration's date, if any, has come.
fn in_force(docs: &[Doc], e: &Edge, r: &Rules) -> bool {
    let known = match (docs[e.declarer].first_indexed_us, r.known_us) {
        (Some(first), Some(k)) => first <= k,
        _ => true,
    };
    known && e.since_us.is_none_or(|since| since <= r.now_us)
}

/// SPEC §2.3: an edge in force that names several documents is never followed. A forward one
/// marks every document it names; a reversed one, its declarer.
pub fn ambiguous(docs: &[Doc], edges: &[Edge], d: usize, r: &Rules) -> bool {
    edges.iter().filter(|e| in_force(docs, e, r)).any(|e| {
        let named = named_by(docs, &e.key);
        named.len() >= 2
            && if e.reversed {
                e.declarer == d
            } else {
                named.contains(&d)
            }
    })
}

/// SPEC §2.4: the documents claiming to supersede `t` by an edge in force, each with the date
/// the claim was recorded (its declarer's first indexing).
fn claims_on(docs: &[Doc], edges: &[Edge], t: usize, r: &Rules) -> Vec<(Option<i64>, usize)> {
    let mut out = Vec::new();
    for e in edges.iter().filter(|e| in_force(docs, e, r)) {
        let named = named_by(docs, &e.key);
        let [only] = named.as_slice() else { continue };
        if *only == e.declarer {
            continue; // a self-reference is ignored
        }
        let (pred, succ) = if e.reversed {
            (e.declarer, *only)
        } else {
            (*only, e.declarer)
        };
        if pred == t {
            out.push((docs[e.declarer].first_indexed_us, succ));
        }
    }
    out
}

/// SPEC §2.4 fan-in: the claim recorded last wins (undated counts as earliest); ties go to the
/// smallest successor path.
pub fn successor(docs: &[Doc], edges: &[Edge], t: usize, r: &Rules) -> Option<usize> {
    let claims = claims_on(docs, edges, t, r);
    let latest = claims.iter().map(|c| c.0.unwrap_or(i64::MIN)).max()?;
    claims
        .iter()
        .filter(|c| c.0.unwrap_or(i64::MIN) == latest)
        .map(|c| c.1)
        .min_by(|&a, &b| docs[a].path.cmp(&docs[b].path))
}

/// SPEC §2.4 chains: follow successors to the end; a cycle stops before the first revisit.
pub fn terminal(docs: &[Doc], edges: &[Edge], start: usize, r: &Rules) -> Option<usize> {
    let mut visited = vec![start];
    let mut cur = start;
    while let Some(next) = successor(docs, edges, cur, r) {
        if visited.contains(&next) {
            break;
        }
        visited.push(next);
        cur = next;
    }
    (cur != start).then_some(cur)
}

fn sigmoid_confidence(relevance: f64, r: &Rules) -> f64 {
    let z = ((relevance - r.threshold) / r.scale).clamp(-60.0, 60.0);
    1.0 / (1.0 + (-z).exp())
}

fn relevance(c: &Cand, r: &Rules) -> f64 {
    f64::from(c.score)
        + r.lexical_weight * f64::from(c.lexical)
        + if c.identifier_match {
            r.identifier_weight
        } else {
            0.0
        }
}

/// SPEC §7: proven relevance: the asked identifiers held and the threshold cleared.
fn proven(c: &Cand, r: &Rules) -> bool {
    c.identifiers_held && relevance(c, r) >= r.threshold
}

/// A retirement declared in force at `now` (undated or unreadable: always).
fn retired_now(d: &Doc, now: i64) -> bool {
    d.retired
        && d.retired_since
            .as_deref()
            .and_then(day_start_us)
            .is_none_or(|since| now >= since)
}

/// SPEC §5.2: first match wins.
pub fn verdict(docs: &[Doc], edges: &[Edge], c: &Cand, r: &Rules) -> &'static str {
    let d = &docs[c.doc];
    let from = d.valid_from.as_deref().map(day_start_us);
    let until = d.valid_until.as_deref().map(day_start_us);
    let broken = d.metadata_error
        || matches!(from, Some(None))
        || matches!(until, Some(None))
        || matches!((from, until), (Some(Some(f)), Some(Some(u))) if f > u);
    let v = if broken {
        "invalid_metadata"
    } else if matches!((r.known_us, d.first_indexed_us), (Some(k), Some(t)) if t > k) {
        "not_yet_known"
    } else if ambiguous(docs, edges, c.doc, r) {
        "ambiguous_supersession"
    } else if terminal(docs, edges, c.doc, r).is_some() {
        "superseded"
    } else if matches!(until, Some(Some(u)) if r.now_us > u + DAY_US - 1)
        || retired_now(d, r.now_us)
    {
        "expired"
    } else if matches!(from, Some(Some(f)) if r.now_us < f) {
        "not_yet_valid"
    } else if proven(c, r) {
        "ok"
    } else {
        "low_confidence"
    };
    match v {
        "ok" | "low_confidence" if r.unverified => "unverified",
        v => v,
    }
}

fn hit(docs: &[Doc], edges: &[Edge], c: &Cand, r: &Rules, fetched: bool) -> Hit {
    let own = sigmoid_confidence(relevance(c, r), r);
    Hit {
        doc: c.doc,
        verdict: verdict(docs, edges, c, r),
        confidence: if c.identifiers_held { own } else { own / 2.0 },
        successor: terminal(docs, edges, c.doc, r),
        promoted: false,
        fetched,
        promoted_from: None,
        displaced_by: None,
        score: c.score,
        proven: proven(c, r),
        lacks: c.lacks,
    }
}

/// The judgment of a retrieval: one hit per document (its first candidate), successors promoted
/// and fetched (SPEC §5.3), passages lacking the asked value (§6), a retired best match (§6),
/// `ok` first.
pub fn judge(
    docs: &[Doc],
    edges: &[Edge],
    candidates: &[Cand],
    fetchable: &[Option<Cand>],
    r: &Rules,
) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for c in candidates {
        if hits.iter().all(|h| h.doc != c.doc) {
            hits.push(hit(docs, edges, c, r, false));
        }
    }
    // §5.3: a stale hit of proven relevance hands it to its terminal successor: retrieved, or
    // fetched and judged. A low-confidence successor becomes ok (promoted); an ok successor
    // found later in the list, or promoted, takes the place and the confidence of the first
    // stale hit naming it; a fetched successor that is not ok follows that stale hit.
    let mut n = 0;
    while n < hits.len() {
        let h = hits[n].clone();
        let Some(t) = h
            .successor
            .filter(|_| h.verdict == "superseded" && h.proven)
        else {
            n += 1;
            continue;
        };
        let j = match hits.iter().position(|g| g.doc == t) {
            Some(j) => j,
            None => match fetchable[t] {
                Some(c) if c.doc == t => {
                    hits.push(hit(docs, edges, &c, r, true));
                    hits.len() - 1
                }
                _ => {
                    n += 1;
                    continue;
                }
            },
        };
        if hits[j].verdict == "low_confidence" {
            hits[j].verdict = "ok";
            hits[j].promoted = true;
        }
        let s = &mut hits[j];
        if s.verdict == "ok" && (j > n || s.promoted) && s.promoted_from.is_none() {
            s.promoted_from = Some(h.doc);
            s.confidence = s.confidence.max(h.confidence);
        }
        if j > n && hits[j].verdict == "ok" {
            let s = hits.remove(j);
            hits.insert(n, s);
            n += 1;
        } else if j > n && hits[j].fetched {
            let s = hits.remove(j);
            hits.insert(n + 1, s);
        }
        n += 1;
    }
    // §6: an ok passage that lacks what the question asks for does not answer it.
    for h in hits.iter_mut() {
        if h.verdict == "ok" && h.lacks.is_some() {
            h.verdict = "not_entailed";
        }
    }
    // §6: a retired note with no successor, proven relevant, leading every ok hit by the
    // margin: the question is about it; its neighbours do not answer it.
    let mut subject: Option<usize> = None;
    for (i, h) in hits.iter().enumerate() {
        let retired = h.verdict == "expired"
            && h.proven
            && h.successor.is_none()
            && retired_now(&docs[h.doc], r.now_us);
        if retired && subject.is_none_or(|s| h.score >= hits[s].score) {
            subject = Some(i);
        }
    }
    let best_ok = hits
        .iter()
        .filter(|h| h.verdict == "ok")
        .map(|h| h.score)
        .reduce(f32::max);
    if let (Some(s), Some(best)) = (subject, best_ok) {
        if hits[s].score >= best + RETIRED_LEAD {
            let doc = hits[s].doc;
            for h in hits.iter_mut().filter(|h| h.verdict == "ok") {
                h.verdict = "not_entailed";
                h.displaced_by = Some(doc);
            }
            let s = hits.remove(s);
            hits.insert(0, s);
        }
    }
    let (mut ok, rest): (Vec<Hit>, Vec<Hit>) = hits.into_iter().partition(|h| h.verdict == "ok");
    ok.extend(rest);
    ok
}
