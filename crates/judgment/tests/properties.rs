//! The trust rules against their reference reading (`model`), on random corpora: verdict
//! precedence, windows and day boundaries, the knowledge instant, chains, cycles and fan-in,
//! ambiguity, declared direction and dated declarations, aliases and numbered identifiers,
//! promotion and fetch, lexical and identifier evidence, a passage lacking the asked value, a
//! retired best match, and `ok` first. Each case is judged by `trust::judge` over
//! `Graph::build_declared`, as every backend judges, and by the model; they must agree on every
//! hit. The run is seeded, so a failure names a case that fails again.

mod model;

use model::{Cand, Doc, Edge, Rules, DAY_US};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use recall_judgment::answer::{Asked, Lack};
use recall_judgment::graph::{resolution_key, Declared, Graph, Node};
use recall_judgment::trust::{self, Candidate, Policy, Verdict, Window};

/// Paths whose keys collide across folders (`a`), so references can name several documents.
const PATHS: &[&str] = &[
    "a.md", "b.md", "c.md", "d.md", "e.md", "x/a.md", "y/a.md", "x/b.md",
];
const ALIASES: &[&str] = &["#adr:1", "#adr:2", "#:1", "#rfc:1", "#adr:01", "legacy"];
/// Frontmatter dates as written: real days, an impossible day and junk (SPEC §2.2).
const DAYS: &[&str] = &[
    "2026-01-01",
    "2026-03-01",
    "2026-06-01",
    "2026-02-30",
    "soon",
];
const THRESHOLDS: &[f64] = &[0.3, 0.5, 0.7];

fn day(raw: &str) -> i64 {
    model::day_start_us(raw).expect("a real day")
}

/// A corpus, a retrieval and the judging parameters.
#[derive(Debug, Clone)]
struct Case {
    docs: Vec<Doc>,
    edges: Vec<Edge>,
    candidates: Vec<Cand>,
    fetchable: Vec<Option<Cand>>,
    rules: Rules,
}

fn maybe<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    prop_oneof![2 => Just(None), 1 => s.prop_map(Some)].boxed()
}

fn pick(values: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(values)
        .prop_map(str::to_string)
        .boxed()
}

fn doc(path: &'static str) -> impl Strategy<Value = Doc> {
    (
        maybe(pick(ALIASES)),
        maybe(0i64..5),
        maybe(pick(DAYS)),
        maybe(pick(DAYS)),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.25),
        maybe(prop_oneof![pick(&DAYS[..3]), Just("undated".to_string())]),
        any::<bool>(),
    )
        .prop_map(
            move |(alias, first, from, until, error, retired, since, clean)| Doc {
                path: path.to_string(),
                key: resolution_key(path),
                alias,
                first_indexed_us: first,
                // Clean metadata half of the time, so that later verdicts are reached.
                valid_from: from.filter(|_| !clean),
                valid_until: until.filter(|_| !clean),
                metadata_error: error && !clean,
                retired,
                retired_since: since,
            },
        )
}

/// Scores on the thresholds exactly (as float32 rounds them), around them, and anywhere.
fn score() -> BoxedStrategy<f32> {
    prop_oneof![
        prop::sample::select(vec![0.3f32, 0.5, 0.7, 0.29, 0.51, 0.8, 0.95, 0.0]),
        (-100i32..=100).prop_map(|n| n as f32 / 100.0),
    ]
    .boxed()
}

fn cand(n: usize) -> impl Strategy<Value = Cand> {
    (
        0..n,
        score(),
        prop::sample::select(vec![0.0f32, 0.5, 1.0]),
        prop::bool::weighted(0.85),
        any::<bool>(),
        prop_oneof![
            4 => Just(None),
            1 => Just(Some(Lack::Kind(Asked::Money))),
            1 => Just(Some(Lack::Number(0))),
        ],
    )
        .prop_map(|(doc, score, lexical, held, matched, lacks)| Cand {
            doc,
            score,
            lexical,
            identifiers_held: held,
            identifier_match: held && matched,
            lacks,
        })
}

fn case() -> impl Strategy<Value = Case> {
    prop::sample::subsequence(PATHS, 1..=PATHS.len())
        .prop_shuffle()
        .prop_flat_map(|paths| {
            let n = paths.len();
            let docs: Vec<_> = paths.into_iter().map(doc).collect();
            // References: each document's key or alias as written, and a name nobody has.
            let mut names: Vec<String> = PATHS.iter().map(|p| resolution_key(p)).collect();
            names.extend(ALIASES.iter().map(|a| a.to_string()));
            names.push("ghost".into());
            let edge = (
                0..n,
                prop::sample::select(names),
                prop::bool::weighted(0.3),
                maybe(prop::sample::select(vec![
                    day("2026-03-01"),
                    day("2026-06-01"),
                ])),
            )
                .prop_map(|(declarer, key, reversed, since_us)| Edge {
                    declarer,
                    key,
                    reversed,
                    since_us,
                });
            let now = prop::sample::select(vec![
                day("2026-01-01") - 1,
                day("2026-01-01"),
                day("2026-03-01"),
                day("2026-06-01") + DAY_US - 1,
                day("2026-06-01") + DAY_US,
            ]);
            let rules = (
                now,
                maybe(0i64..5),
                prop::sample::select(THRESHOLDS),
                prop::sample::select(vec![0.01, 0.05, 0.2]),
                prop::bool::weighted(0.2),
                prop::sample::select(vec![0.0, 0.2]),
                prop::sample::select(vec![0.0, 0.1]),
            )
                .prop_map(
                    |(now_us, known_us, threshold, scale, unverified, lw, iw)| Rules {
                        now_us,
                        known_us,
                        threshold,
                        scale,
                        unverified,
                        lexical_weight: lw,
                        identifier_weight: iw,
                    },
                );
            (
                docs,
                prop::collection::vec(edge, 0..10),
                prop::collection::vec(cand(n), 0..10),
                prop::collection::vec(maybe(cand(n)), n),
                any::<bool>(),
                rules,
            )
                .prop_map(|(docs, edges, mut candidates, fetchable, all, rules)| {
                    // Every document retrieved half of the time: all verdicts are seen.
                    if all {
                        for (d, f) in fetchable.iter().enumerate() {
                            let c = f.unwrap_or(Cand {
                                doc: d,
                                score: 0.5,
                                lexical: 0.0,
                                identifiers_held: true,
                                identifier_match: false,
                                lacks: None,
                            });
                            candidates.push(Cand { doc: d, ..c });
                        }
                    }
                    // A fetchable passage is of the document it is fetched for.
                    let fetchable = fetchable
                        .into_iter()
                        .enumerate()
                        .map(|(d, f)| f.map(|c| Cand { doc: d, ..c }))
                        .collect();
                    Case {
                        docs,
                        edges,
                        candidates,
                        fetchable,
                        rules,
                    }
                })
        })
}

/// A case's chains closed into a cycle through every document, and more edges beside it.
fn cyclic_case() -> impl Strategy<Value = Case> {
    case().prop_map(|mut c| {
        let n = c.docs.len();
        for i in 0..n {
            let key = c.docs[(i + 1) % n].key.clone();
            c.edges.push(Edge {
                declarer: i,
                key,
                reversed: false,
                since_us: None,
            });
        }
        c
    })
}

fn policy(r: &Rules) -> Policy {
    Policy {
        now_us: r.now_us,
        known_as_of_us: r.known_us,
        threshold: r.threshold,
        scale: r.scale,
        unverified: r.unverified,
        lexical_weight: r.lexical_weight,
        identifier_weight: r.identifier_weight,
    }
}

fn candidate(c: &Cand, chunk: i64) -> Candidate {
    Candidate {
        doc: c.doc,
        chunk,
        score: c.score,
        lexical: c.lexical,
        identifiers_held: c.identifiers_held,
        identifier_match: c.identifier_match,
        lacks: c.lacks,
    }
}

/// The case judged as a backend judges it.
fn judged(c: &Case) -> (Graph, Vec<trust::Judged>) {
    let nodes = c
        .docs
        .iter()
        .map(|d| Node {
            key: d.key.clone(),
            path: d.path.clone(),
            first_indexed_us: d.first_indexed_us,
            alias: d.alias.clone(),
            folder: String::new(),
        })
        .collect();
    let declared: Vec<Declared> = c
        .edges
        .iter()
        .map(|e| Declared {
            declarer: e.declarer,
            key: e.key.clone(),
            reversed: e.reversed,
            scoped: false,
            since_us: e.since_us,
        })
        .collect();
    let graph = Graph::build_declared(nodes, &declared);
    let windows: Vec<Window> = c
        .docs
        .iter()
        .map(|d| Window {
            valid_from_raw: d.valid_from.as_deref().map(Into::into),
            valid_until_raw: d.valid_until.as_deref().map(Into::into),
            metadata_error: d.metadata_error,
            retired: d.retired,
            retired_since_raw: d.retired_since.as_deref().map(Into::into),
        })
        .collect();
    let cands: Vec<Candidate> = c
        .candidates
        .iter()
        .enumerate()
        .map(|(i, x)| candidate(x, i as i64))
        .collect();
    let fetch = |d: usize| c.fetchable[d].map(|x| candidate(&x, 1000 + d as i64));
    let hits = trust::judge(&graph, &windows, &cands, &policy(&c.rules), fetch);
    (graph, hits)
}

/// What the model and the implementation must agree on, hit by hit.
type Row = (
    usize,
    &'static str,
    Option<usize>,
    bool,
    bool,
    Option<usize>,
    Option<usize>,
);

fn rows(c: &Case) -> (Vec<Row>, Vec<f64>) {
    let (_, hits) = judged(c);
    let rows = hits
        .iter()
        .map(|h| {
            let (doc, v) = (h.doc, h.verdict.as_str());
            (
                doc,
                v,
                h.superseded_by,
                h.promoted,
                h.fetched,
                h.promoted_from,
                h.displaced_by,
            )
        })
        .collect();
    (rows, hits.iter().map(|h| h.confidence).collect())
}

fn model_rows(c: &Case) -> (Vec<Row>, Vec<f64>) {
    let hits = model::judge(&c.docs, &c.edges, &c.candidates, &c.fetchable, &c.rules);
    let rows = hits
        .iter()
        .map(|h| {
            let (doc, v) = (h.doc, h.verdict);
            (
                doc,
                v,
                h.successor,
                h.promoted,
                h.fetched,
                h.promoted_from,
                h.displaced_by,
            )
        })
        .collect();
    (rows, hits.iter().map(|h| h.confidence).collect())
}

fn assert_agrees(c: &Case) -> Result<(), TestCaseError> {
    let (got, got_conf) = rows(c);
    let (want, want_conf) = model_rows(c);
    prop_assert_eq!(got, want);
    for (g, w) in got_conf.iter().zip(&want_conf) {
        prop_assert!((g - w).abs() < 1e-12, "confidence {} against {}", g, w);
    }
    Ok(())
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7265_6361_6c6c),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn judge_agrees_with_the_model(c in case()) {
        assert_agrees(&c)?;
    }

    #[test]
    fn judge_agrees_with_the_model_on_cyclic_graphs(c in cyclic_case()) {
        assert_agrees(&c)?;
    }

    /// What an `ok` hit promises, read from the corpus directly: nothing that should stop it
    /// does, and the result abstains exactly when its first hit is not `ok`.
    #[test]
    fn an_ok_hit_is_one_an_agent_may_act_on(c in prop_oneof![case(), cyclic_case()]) {
        let (graph, hits) = judged(&c);
        let r = &c.rules;
        let at = policy(r).at();
        for h in &hits {
            let d = &c.docs[h.doc];
            if h.verdict == Verdict::Ok {
                prop_assert!(!d.metadata_error);
                prop_assert!(d.first_indexed_us.zip(r.known_us).is_none_or(|(t, k)| t <= k));
                prop_assert!(!graph.is_ambiguous_at(h.doc, at));
                prop_assert_eq!(graph.terminal_at(h.doc, at), None);
                prop_assert!(!(d.retired && d.retired_since.as_deref().and_then(model::day_start_us).is_none_or(|s| r.now_us >= s)));
                if let Some(until) = d.valid_until.as_deref() {
                    prop_assert!(r.now_us < day(until) + DAY_US);
                }
                if let Some(from) = d.valid_from.as_deref() {
                    prop_assert!(r.now_us >= day(from));
                }
                prop_assert!(h.proven || h.promoted);
                prop_assert!(h.identifiers_held || h.promoted);
                prop_assert!(h.lacks.is_none());
                prop_assert!(!r.unverified);
                prop_assert!(h.confidence >= 0.5 || h.promoted);
            }
            // A promoted successor is ok unless its passage lacks the asked value or a retired
            // best match displaced it (SPEC §6).
            if h.promoted {
                prop_assert!(matches!(h.verdict, Verdict::Ok | Verdict::NotEntailed));
                prop_assert!(h.promoted_from.is_some());
            }
            if h.verdict == Verdict::Superseded {
                prop_assert!(h.superseded_by.is_some_and(|s| s != h.doc));
            }
            prop_assert!(h.confidence > 0.0 && h.confidence <= 1.0);
        }
        let ok: Vec<bool> = hits.iter().map(|h| h.verdict == Verdict::Ok).collect();
        prop_assert!(ok.windows(2).all(|w| w[0] >= w[1]), "ok first");
        let docs: std::collections::HashSet<usize> = hits.iter().map(|h| h.doc).collect();
        prop_assert_eq!(docs.len(), hits.len(), "one hit per document");
        let retrieved: std::collections::HashSet<usize> =
            c.candidates.iter().map(|x| x.doc).collect();
        let unfetched: std::collections::HashSet<usize> =
            hits.iter().filter(|h| !h.fetched).map(|h| h.doc).collect();
        prop_assert_eq!(unfetched, retrieved, "every retrieved document, once");
    }

    /// SPEC §7: confidence is monotone in relevance and exactly 0.5 on the threshold.
    #[test]
    fn confidence_is_monotone_and_half_on_the_threshold(
        a in -1.0f64..1.0, b in -1.0f64..1.0, t in prop::sample::select(THRESHOLDS),
        scale in prop::sample::select(vec![0.01, 0.05, 0.2]),
    ) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(trust::confidence(lo, t, scale) <= trust::confidence(hi, t, scale));
        prop_assert_eq!(trust::confidence(t, t, scale), 0.5);
    }
}

proptest! {
    #![proptest_config(config(500))]

    /// SPEC §2.2: the strict day reader agrees with an independent one on every written form.
    #[test]
    fn days_are_read_as_the_model_reads_them(
        y in 0i64..10_000, m in 0u32..14, d in 0u32..33,
        junk in prop::sample::select(vec!["", " ", "T00:00", "Z"]),
    ) {
        let raw = format!("{y:04}-{m:02}-{d:02}{junk}");
        prop_assert_eq!(trust::parse_day_start_us(&raw), model::day_start_us(&raw));
        let short = format!("{y}-{m}-{d}");
        prop_assert_eq!(trust::parse_day_start_us(&short), model::day_start_us(&short));
    }
}
