//! Answer evidence (SPEC §6, near misses): what a question asks a passage to hold beyond its
//! topic, read from the question's own words. A passage that clears the threshold but names no
//! amount of money when the question asks what something costs, or lacks the year or quantity
//! the question names, is on topic and does not answer it.
//!
//! Owns: the kind of value a question asks for (an amount of money, a size in bytes), the
//! numbers a wh-question names, and whether a passage's text holds them. Pure: no I/O. Does not
//! own: identifiers (evidence.rs) or the verdict the evidence leads to (trust.rs).
//!
//! The kinds are the ones a passage cannot hold without writing them in a recognisable form
//! (a currency, a percentage, a byte unit). Lengths of time and counts are left out: nearly
//! every on-topic passage holds some, and an answering one may write them in words ("until the
//! next release", "a handful"), so their absence shows little (benches/RESULTS.md, "E").

use std::sync::LazyLock;

use regex::Regex;

/// A kind of value a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// "How much do we charge…", "what fee…", "what service credit…".
    Money,
    /// "How much local storage…", "how many gigabytes…".
    Size,
}

impl Asked {
    /// How the missing value is named to the user.
    pub fn describe(self) -> &'static str {
        match self {
            Asked::Money => "an amount of money",
            Asked::Size => "a size in bytes",
        }
    }
}

/// What a passage lacks of what the question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lack {
    Kind(Asked),
    /// The question's `n`-th number (`AnswerEvidence::numbers`).
    Number(usize),
}

/// Words before the asking phrase that keep it the question's main clause: the phrase opens
/// the question, a clause after a comma, or follows a hedge ("roughly how much…").
const LEAD: &str = r"(?:^|[,;:]\s*|\band\s+)(?:(?:roughly|approximately|about|exactly|on average|so|but|then|and|for|by|in|at|after|to|up to|also|now)\s+)*";

static MONEY_ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"{LEAD}(?:how much (?:[\w'-]+ ){{0,6}}?(?:charge|charged|charges|cost|costs|pay|paid|owe|owed|bill|billed)\b|how much (?:a|per) (?:month|year|week)\b|what (?:[\w-]+ )?(?:fee|fees|price|prices|fine|penalty|service credits?|discount|surcharge)\b)"
    ))
    .expect("money question pattern")
});

/// Words that make "how much … cost" ask for something other than money.
static NOT_MONEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bhow much of\b|\b(?:time|effort|downtime|latency|memory|storage|disk|space|capacity|battery|work|performance)\b")
        .expect("not-money pattern")
});

static SIZE_ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"{LEAD}(?:how much (?:[\w-]+ )?(?:storage|memory|disk|disk space|ram)\b|how many (?:bytes|kilobytes|megabytes|gigabytes|terabytes|kb|mb|gb|tb|kib|mib|gib|tib)\b)"
    ))
    .expect("size question pattern")
});

/// A wh-question: the asked value is named, so a number the question gives qualifies it
/// ("how long for 50,000 orders?"). A yes/no question may name a number the passage only
/// bounds ("can I still fetch page 60?" against "the first 50 pages").
static WH_QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[,;:]\s*)(?:[\w'-]+\s+){0,3}?(?:how|what|which|when|who|where)\b")
        .expect("wh-question pattern")
});

static MONEY_HELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[€£$¥]\s?\d|\b\d[\d,.]*\s?(?:k|m|bn)?\s?(?:eur|usd|gbp|chf|euros?|pounds?|dollars?|pence|cents?)\b|%|\bper ?cent\b|\b(?:free of charge|for free|at no (?:extra )?(?:cost|charge)|no (?:charge|cost|fee)s?|costs? nothing|charges? nothing)\b")
        .expect("money pattern")
});

static SIZE_HELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b\d[\d,.]*\s?(?:[kmgtp]i?b|bytes?|kilobytes?|megabytes?|gigabytes?|terabytes?)\b")
        .expect("size pattern")
});

/// A number as written: digits in groups of three separated by commas, or digits with an
/// optional decimal part.
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+").expect("number pattern")
});

/// A number the way two texts can be compared: thousands separators dropped, a number below
/// one with its leading zero (`.25` and `0.25`).
fn normal(number: &str) -> String {
    let n = number.replace(',', "");
    if n.starts_with('.') {
        format!("0{n}")
    } else {
        n
    }
}

/// Standalone numbers of a question: a number that is part of an identifier (`E2226`, `v3`,
/// `2026-03-01`) is the identifier rule's (evidence.rs), not this one's.
fn standalone_numbers(question: &str) -> Vec<String> {
    let part_of_token = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.');
    let mut out: Vec<String> = Vec::new();
    for m in NUMBER.find_iter(question) {
        let before = question[..m.start()].chars().next_back();
        let after = question[m.end()..].chars().next();
        // A trailing full stop ends the sentence; any other joiner makes the number a part.
        let after_joins = match after {
            Some('.') => question[m.end() + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric()),
            Some(c) => part_of_token(c),
            None => false,
        };
        if before.is_some_and(part_of_token) || after_joins {
            continue;
        }
        let n = m.as_str().to_string();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// What a question asks a passage to hold beyond its topic.
#[derive(Debug, Clone, Default)]
pub struct AnswerEvidence {
    kind: Option<Asked>,
    /// The numbers a wh-question names, as written.
    numbers: Vec<String>,
}

impl AnswerEvidence {
    pub fn new(question: &str) -> AnswerEvidence {
        let q = question.to_lowercase();
        let money = MONEY_ASKED
            .find(&q)
            .is_some_and(|m| !NOT_MONEY.is_match(m.as_str()));
        let kind = if money {
            Some(Asked::Money)
        } else if SIZE_ASKED.is_match(&q) {
            Some(Asked::Size)
        } else {
            None
        };
        let numbers = if WH_QUESTION.is_match(&q) {
            standalone_numbers(&q)
        } else {
            Vec::new()
        };
        AnswerEvidence { kind, numbers }
    }

    /// The kind of value the question asks for, if one this module reads.
    pub fn kind(&self) -> Option<Asked> {
        self.kind
    }

    pub fn numbers(&self) -> &[String] {
        &self.numbers
    }

    /// True when the question asks for nothing a passage could be checked for.
    pub fn is_empty(&self) -> bool {
        self.kind.is_none() && self.numbers.is_empty()
    }

    /// What `text` lacks of what the question asks for: the kind of value first, then the
    /// first number it does not hold. None when it holds them all.
    pub fn lacks(&self, text: &str) -> Option<Lack> {
        if self.is_empty() {
            return None;
        }
        let t = text.to_lowercase();
        if let Some(kind) = self.kind {
            let held = match kind {
                Asked::Money => MONEY_HELD.is_match(&t),
                Asked::Size => SIZE_HELD.is_match(&t),
            };
            if !held {
                return Some(Lack::Kind(kind));
            }
        }
        if self.numbers.is_empty() {
            return None;
        }
        let held: Vec<String> = NUMBER.find_iter(&t).map(|m| normal(m.as_str())).collect();
        self.numbers
            .iter()
            .position(|n| !held.contains(&normal(n)))
            .map(Lack::Number)
    }

    /// The lack as the user reads it: "an amount of money", "50,000".
    pub fn describe(&self, lack: Lack) -> String {
        match lack {
            Lack::Kind(kind) => kind.describe().to_string(),
            Lack::Number(i) => self.numbers.get(i).cloned().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(q: &str) -> Option<Asked> {
        AnswerEvidence::new(q).kind()
    }

    #[test]
    fn money_is_asked_by_cost_fee_and_price_questions() {
        for q in [
            "How much do we charge a customer to onboard a new EDI partner?",
            "What fee do we charge a haulier whose driver misses a slot?",
            "What service credit does a customer get after a SEV1 incident?",
            "How much extra are engineers paid for an on-call week?",
            "Roughly how much a month did we save by dropping the cluster?",
            "If the parcel is late, what surcharge applies?",
        ] {
            assert_eq!(kind(q), Some(Asked::Money), "{q}");
        }
    }

    #[test]
    fn other_how_much_questions_ask_for_no_money() {
        for q in [
            "How much time does the migration cost us?",
            "How much of a charge did a night shift use?",
            "How long does carrier-gw wait before it gives up?",
            "Do we charge for returns?",
            "Which payment provider do we use?",
            "If a client never says what fee applies, how long before it is written off?",
        ] {
            assert_eq!(kind(q), None, "{q}");
        }
    }

    #[test]
    fn size_is_asked_by_storage_and_byte_unit_questions() {
        assert_eq!(
            kind("How much local storage may the offline queue use?"),
            Some(Asked::Size)
        );
        assert_eq!(
            kind("How many gigabytes of WAL do we archive per day?"),
            Some(Asked::Size)
        );
        assert_eq!(kind("How big is the platform team?"), None);
    }

    #[test]
    fn a_passage_holds_money_in_any_written_form() {
        let e = AnswerEvidence::new("How much do we charge to onboard a partner?");
        for held in [
            "Onboarding costs €1,500 per partner.",
            "We bill 250 EUR for each new partner.",
            "A 10% service credit applies.",
            "Onboarding is free of charge for existing customers.",
            "It is done at no extra cost.",
        ] {
            assert_eq!(e.lacks(held), None, "{held}");
        }
        assert_eq!(
            e.lacks("Exchange AS2 identifiers, agree documents, test 940 and 945 maps."),
            Some(Lack::Kind(Asked::Money))
        );
        assert_eq!(
            e.lacks("the driver is fitted into the next free slot"),
            Some(Lack::Kind(Asked::Money))
        );
    }

    #[test]
    fn a_passage_holds_a_size_only_with_a_byte_unit() {
        let e = AnswerEvidence::new("How much local storage may the offline queue use?");
        assert_eq!(e.lacks("The queue may grow to 512 MB."), None);
        assert_eq!(e.lacks("The queue may grow to 2GiB."), None);
        assert_eq!(
            e.lacks("The handheld works offline for up to four hours, 500 transactions."),
            Some(Lack::Kind(Asked::Size))
        );
    }

    #[test]
    fn a_wh_question_names_numbers_a_passage_must_hold() {
        let e = AnswerEvidence::new("How long does wave planning take for 50,000 open orders?");
        assert_eq!(e.numbers(), ["50,000"]);
        assert_eq!(e.lacks("Planning 50000 orders takes 40 seconds."), None);
        assert_eq!(e.lacks("Planning 50,000 orders takes 40 seconds."), None);
        let lack = e.lacks("Planning 10,000 orders took four minutes.");
        assert_eq!(lack, Some(Lack::Number(0)));
        assert_eq!(e.describe(lack.unwrap()), "50,000");

        let e = AnswerEvidence::new("What were the support hours at weekends in 2024?");
        assert_eq!(e.numbers(), ["2024"]);
        assert_eq!(
            e.lacks("Decided 2024-06-03: weekends 08:00 to 18:00."),
            None
        );
        assert!(e
            .lacks("Since April 2026 the desk is staffed around the clock.")
            .is_some());
    }

    #[test]
    fn a_number_below_one_is_held_without_its_leading_zero() {
        let e = AnswerEvidence::new("Which share of the budget is 0.25 of it?");
        assert_eq!(e.numbers(), ["0.25"]);
        assert_eq!(e.lacks("A share of .25 goes to hosting."), None);
        assert!(e.lacks("A share of 1.25 goes to hosting.").is_some());
        let e = AnswerEvidence::new("Which share of the budget is .25 of it?");
        assert_eq!(e.lacks("A share of 0.25 goes to hosting."), None);
    }

    #[test]
    fn numbers_in_identifiers_and_yes_no_questions_are_not_asked() {
        assert!(AnswerEvidence::new("What does error E2226 mean in v3?").is_empty());
        assert!(AnswerEvidence::new("Which changes came with version 2026-03-01?").is_empty());
        assert!(AnswerEvidence::new("Can an integrator still fetch page 60?").is_empty());
        // The issue's negation case: a yes/no question, answered by a passage that says no.
        let e = AnswerEvidence::new("Do we retry on 4xx?");
        assert!(e.is_empty());
        assert_eq!(e.lacks("We do not retry on 4xx responses."), None);
        assert_eq!(
            AnswerEvidence::new("Which parcels weigh over 31.5 kg?").numbers(),
            ["31.5"]
        );
        assert_eq!(
            AnswerEvidence::new("Which printers were tested at 600 dpi.").numbers(),
            ["600"]
        );
    }

    #[test]
    fn a_number_ends_at_a_full_stop_and_not_at_a_joining_dot() {
        assert_eq!(
            AnswerEvidence::new("Which printers were tested at 600.").numbers(),
            ["600"]
        );
        assert!(AnswerEvidence::new("What does the 50.x tier include?").is_empty());
    }

    #[test]
    fn what_is_lacking_is_named_for_people() {
        assert_eq!(Asked::Money.describe(), "an amount of money");
        assert_eq!(Asked::Size.describe(), "a size in bytes");
        let e = AnswerEvidence::new("How much do we charge for a seat?");
        assert_eq!(e.describe(Lack::Kind(Asked::Money)), "an amount of money");
    }
}
