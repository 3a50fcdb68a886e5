"""`recall lint` (SPEC §8.4): each rule on a corpus that breaks it and one that does not, the
header vocabularies, the report, and the command's output and exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recall.authoring.lint import RULES, lint
from recall.cli import app

from .conftest import write_corpus

runner = CliRunner()


def fm(**fields: str) -> str:
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in fields.items()) + "---\n"


def findings(root: Path, vocabularies: str = "all") -> list[tuple[str, str, int]]:
    """(code, file relative to root, line) of every finding."""
    report = lint([root], vocabularies=vocabularies)
    return [(f.code, os.path.relpath(f.file, root), f.line) for f in report.findings]


# (files, expected findings as (code, file, line)); the second of each pair is the negative case.
RULE_CASES = {
    "E001 dangling": (
        {"a.md": fm(supersedes="nope.md") + "A\n"},
        [("E001", "a.md", 2)],
    ),
    "E001 resolved": (
        {"a.md": fm(supersedes="b.md") + "A\n", "b.md": "B\n"},
        [],
    ),
    "E002 self": (
        {"a.md": "A\n", "b.md": fm(supersedes="b.md")},
        [("E002", "b.md", 2)],
    ),
    "E003 chain without a loop": (
        {"a.md": fm(supersedes="b.md"), "b.md": fm(supersedes="c.md"), "c.md": "C\n"},
        [],
    ),
    "E004 malformed date": (
        {"a.md": fm(title="A", valid_from="2026-02-30")},
        [("E004", "a.md", 3)],
    ),
    "E008 a value YAML cannot read, and no reference in a supersedes": (
        {
            "a.md": "---\ntitle: [unclosed\n---\nA\n",
            "b.md": "---\ntitle: B\nsupersedes: : :\n---\nB\n",
        },
        [("E008", "a.md", 2), ("E008", "b.md", 3)],
    ),
    "W004 too many targets": (
        {
            "a.md": "---\nsupersedes: [" + ", ".join(f"n{i}.md" for i in range(70)) + "]\n---\nA\n",
            **{f"n{i}.md": f"N{i}\n" for i in range(70)},
        },
        [("W004", "a.md", 2)],
    ),
    "E004 good date": (
        {"a.md": fm(title="A", valid_from="2026-02-28")},
        [],
    ),
    "E005 empty window": (
        {"a.md": fm(valid_from="2026-05-01", valid_until="2026-04-01")},
        [("E005", "a.md", 2)],
    ),
    "E005 one-day window": (
        {"a.md": fm(valid_from="2026-04-01", valid_until="2026-04-01")},
        [],
    ),
    "E006 ambiguous": (
        {"a.md": fm(supersedes="x.md"), "one/x.md": "1\n", "two/x.md": "2\n"},
        [("E006", "a.md", 2)],
    ),
    "E007 NUL bytes": (
        {"a.md": b"binary\x00data", "b.md": "fine\n"},
        [("E007", "a.md", 1)],
    ),
    "E007 not UTF-8": (
        {"a.md": b"caf\xe9\n"},
        [("E007", "a.md", 1)],
    ),
    "W001 versioned siblings": (
        {"x-v1.md": "one\n", "x-v2.md": "two\n"},
        [("W001", "x-v2.md", 1)],
    ),
    "W001 declared forward": (
        {"x-v1.md": "one\n", "x-v2.md": fm(supersedes="x-v1.md")},
        [],
    ),
    "W001 declared the other way": (
        {"x_v1.md": "# x\n\n## Status\n\nSuperseded by [x](x_v2.md)\n", "x_v2.md": "two\n"},
        [],
    ),
    "W001 separators and gaps": (
        {"p.v1.md": "1\n", "p.v3.md": "3\n", "q_v1.md": "1\n", "q_v2.md": "2\n"},
        [("W001", "p.v3.md", 1), ("W001", "q_v2.md", 1)],
    ),
    "W001 other folders": (
        {"a/x-v1.md": "one\n", "b/x-v2.md": "two\n"},
        [],
    ),
    "W002 closure prose": (
        {"old.md": "# Old\n\nThe nightly export was replaced by [new](new.md).\n", "new.md": "N\n"},
        [("W002", "old.md", 3)],
    ),
    "W002 not for the note's own statement, read as a declaration (SPEC §2.5)": (
        {"old.md": "# Old\n\nThis note is superseded by [new](new.md).\n", "new.md": "New\n"},
        [],
    ),
    "W002 not for a title": (
        {"0008-x.md": "# Remove deprecated APIs\n\n## Status\n\nAccepted\n\nWe drop v1.\n"},
        [],
    ),
    "W002 not for another subject in a note whose status says it is in force": (
        {"a.md": "# A\n\n## Status\n\nAccepted\n\n## Context\n\nThe v1 calls were deprecated.\n"},
        [],
    ),
    "W002 with valid_until": (
        {"old.md": fm(valid_until="2026-01-31") + "The nightly export was replaced by a stream.\n"},
        [],
    ),
    "W002 with an incoming edge": (
        {"old.md": "It is obsolete.\n", "new.md": fm(supersedes="old.md")},
        [],
    ),
    "W002 with a retirement": (
        {"old.md": "# Old\n\n## Status\n\nDeprecated\n\nIt is no longer used.\n"},
        [],
    ),
    "W002 hedged": (
        {"a.md": "This may replace [old](old.md).\n", "old.md": "Old\n"},
        [],
    ),
}


@pytest.mark.parametrize("case", list(RULE_CASES))
def test_rule(corpus: Path, case: str) -> None:
    files, expected = RULE_CASES[case]
    write_corpus(corpus, files)
    assert findings(corpus) == expected


def test_every_finding_has_its_rule_and_severity(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "a.md": fm(supersedes="nope.md", valid_from="01/02/2026"),
            "x-v1.md": "one\n",
            "x-v2.md": "two\n",
        },
    )
    report = lint([corpus])
    assert {f.code for f in report.findings} == {"E001", "E004", "W001"}
    for f in report.findings:
        assert (f.rule, f.severity) == RULES[f.code]
        assert f.message and f.fix
    assert (report.errors, report.warnings, report.ok) == (2, 1, False)
    assert report.files == 3


def test_dangling_suggests_close_names(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="rate-limit-v1.md"), "rate-limits-v1.md": "x\n"})
    (finding,) = lint([corpus]).findings
    assert finding.code == "E001"
    assert finding.message == "supersedes 'rate-limit-v1.md' matches no note"
    assert "'rate-limits-v1.md'" in finding.fix


def test_dangling_never_suggests_the_declaring_note(corpus: Path) -> None:
    write_corpus(corpus, {"onboarding.md": fm(supersedes="[[old-onboarding]]")})
    (finding,) = lint([corpus]).findings
    assert "onboarding.md" not in finding.fix and "no note by that name" in finding.fix


def test_dangling_without_a_close_name_says_it_is_missing(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="zzz.md"), "b.md": "b\n"})
    (finding,) = lint([corpus]).findings
    assert "no note by that name" in finding.fix


def test_ambiguous_lists_the_notes(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="x.md"), "one/x.md": "1\n", "two/x.md": "2\n"})
    (finding,) = lint([corpus]).findings
    assert "matches 2 notes" in finding.message
    assert "one/x.md" in finding.message and "two/x.md" in finding.message


def test_cycle_reported_once_with_its_notes_in_order(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "a.md": fm(supersedes="b.md"),
            "b.md": fm(supersedes="c.md"),
            "c.md": fm(supersedes="a.md"),
            "d.md": fm(supersedes="a.md"),
        },
    )
    cycles = [f for f in lint([corpus]).findings if f.code == "E003"]
    assert len(cycles) == 1
    names = [os.path.basename(p) for p in cycles[0].message.split(": ", 1)[1].split(" supersedes ")]
    assert names == ["a.md", "b.md", "c.md", "a.md"]
    assert (os.path.basename(cycles[0].file), cycles[0].line) == ("a.md", 2)


def test_cycle_through_a_reversed_edge(corpus: Path) -> None:
    # a supersedes b in its frontmatter; b's Nygard status says it supersedes a.
    write_corpus(
        corpus,
        {
            "a.md": fm(supersedes="b.md"),
            "b.md": "# B\n\n## Status\n\nSupersedes [a](a.md)\n",
        },
    )
    codes = [f.code for f in lint([corpus]).findings]
    assert codes == ["E003"]


def test_two_separate_cycles(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "a.md": fm(supersedes="b.md"),
            "b.md": fm(supersedes="a.md"),
            "c.md": fm(supersedes="d.md"),
            "d.md": fm(supersedes="c.md"),
        },
    )
    assert [f.code for f in lint([corpus]).findings] == ["E003", "E003"]


def test_unreadable_folder(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(corpus, {"locked/a.md": "a\n", "b.md": "b\n"})
    scandir = os.scandir

    def refuse_locked(path: Any) -> Any:
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied")
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse_locked)
    (finding,) = lint([corpus]).findings
    assert (finding.code, finding.file) == ("E007", "locked/")
    assert finding.message == "cannot be read: unreadable folder: Permission denied"


def test_closure_prose_fix_names_the_reference(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "new.md": "# New\n\nThis note replaces [old](old.md).\n",
            "old.md": "# Old\n\nThe nightly flow was superseded by [newer](newer.md).\n",
            "newer.md": "n\n",
            "gone.md": "# Gone\n\nThe flow is no longer used.\n",
        },
    )
    fixes = {os.path.basename(f.file): f.fix for f in lint([corpus]).findings}
    assert fixes["new.md"] == "add `supersedes: old.md` to its frontmatter"
    assert fixes["old.md"].startswith("add `supersedes: old.md` to the frontmatter of")
    assert "valid_until: YYYY-MM-DD" in fixes["gone.md"]


def test_overridden_header_is_info_not_error(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "0002-b.md": fm(supersedes="c.md") + "# 2. B\n\n## Status\n\nSupersedes ADR-0001\n",
            "0001-a.md": "# 1. A\n\n## Status\n\nAccepted\n",
            "c.md": "c\n",
        },
    )
    report = lint([corpus])
    assert [(f.code, f.severity, f.line) for f in report.findings] == [("I001", "info", 8)]
    assert report.ok


# -- header vocabularies ------------------------------------------------------------------------

PEP_8 = "PEP: 8\nTitle: Style Guide\nStatus: Superseded\nSuperseded-By: {by}\n\nAbstract\n"
PEP_9 = "PEP: 9\nTitle: New Style Guide\nStatus: Final\nReplaces: 8\n\nAbstract\n"


def test_pep_pair_resolves(corpus: Path) -> None:
    write_corpus(corpus, {"pep-0008.rst": PEP_8.format(by=9), "pep-0009.rst": PEP_9})
    assert findings(corpus) == []


def test_pep_dangling_superseded_by(corpus: Path) -> None:
    write_corpus(corpus, {"pep-0008.rst": PEP_8.format(by=9999), "pep-0009.rst": PEP_9})
    (finding,) = lint([corpus]).findings
    assert (finding.code, os.path.basename(finding.file), finding.line) == (
        "E001",
        "pep-0008.rst",
        4,
    )
    assert finding.vocabulary == "pep"
    assert finding.message == "Superseded-By '9999' (pep preamble) matches no note"


NYGARD_1 = "# 1. Use MySQL\n\nDate: 2025-01-01\n\n## Status\n\nSuperseded by [ADR-0002]({to})\n"
NYGARD_2 = "# 2. Use Postgres\n\n## Status\n\nAccepted\n\nSupersedes ADR-0001.\n"


def test_nygard_pair_resolves(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "0001-use-mysql.md": NYGARD_1.format(to="0002-use-postgres.md"),
            "0002-use-postgres.md": NYGARD_2,
        },
    )
    assert findings(corpus) == []


def test_nygard_dangling_then_vocabularies_setting(corpus: Path) -> None:
    write_corpus(corpus, {"0001-use-mysql.md": NYGARD_1.format(to="0009-gone.md")})
    (finding,) = lint([corpus]).findings
    assert (finding.code, finding.line, finding.vocabulary) == ("E001", 7, "nygard")
    assert "(nygard status)" in finding.message
    # Read as frontmatter only, the status line is prose that narrates a closure.
    assert findings(corpus, "frontmatter") == [("W002", "0001-use-mysql.md", 7)]
    assert findings(corpus, "none") == [("W002", "0001-use-mysql.md", 7)]


def test_frontmatter_setting_ignores_pep_edges(corpus: Path) -> None:
    write_corpus(corpus, {"pep-0008.rst": PEP_8.format(by=9999)})
    assert findings(corpus, "frontmatter") == []


# -- the report and the command -----------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_clean_exits_0(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="b.md"), "b.md": "b\n"})
    code, out, _ = run("lint", str(corpus))
    assert code == 0
    assert out.startswith("no problems in 2 files")


def test_cli_human_output_and_exit_1(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="nope"), "x-v1.md": "1\n", "x-v2.md": "2\n"})
    code, out, _ = run("lint", str(corpus))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        f"{corpus / 'a.md'}:2: E001 dangling-reference: supersedes 'nope' matches no note "
        "(fix: no note by that name or number: add the note it names, or correct the reference)"
    )
    assert lines[1].startswith(f"{corpus / 'x-v2.md'}:1: W001 versioned-siblings: ")
    assert lines[-1].startswith("1 error, 1 warning in 3 files")


def test_cli_warnings_only_exit_0(corpus: Path) -> None:
    write_corpus(corpus, {"x-v1.md": "1\n", "x-v2.md": "2\n"})
    code, _, _ = run("lint", str(corpus))
    assert code == 0


def test_cli_json(corpus: Path) -> None:
    write_corpus(corpus, {"a.md": fm(supersedes="a.md"), "b.md": fm(valid_until="2026-13-01")})
    code, out, _ = run("lint", str(corpus), "--json")
    assert code == 1
    data = json.loads(out)
    assert (data["ok"], data["files"], data["errors"], data["warnings"]) == (False, 2, 2, 0)
    assert data["counts"] == {"E002": 1, "E004": 1}
    first = data["findings"][0]
    assert set(first) == {
        "code",
        "rule",
        "severity",
        "file",
        "line",
        "message",
        "fix",
        "vocabulary",
    }
    assert (first["code"], first["rule"], first["severity"], first["line"]) == (
        "E002",
        "self-reference",
        "error",
        2,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["lint", "/no/such/folder"], "does not exist"),
        (["lint", "{corpus}", "--vocabularies", "some"], "unknown vocabularies setting"),
        (["lint"], "Missing argument"),
    ],
)
def test_cli_usage_errors_exit_2(corpus: Path, args: list[str], needle: str) -> None:
    code, out, err = run(*[a.format(corpus=corpus) for a in args])
    assert code == 2
    assert needle in err + out


def test_several_paths_and_single_files(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_corpus(corpus, {"a.md": fm(supersedes="b.md")})
    write_corpus(other, {"b.md": "b\n"})
    assert lint([corpus, other]).findings == []
    report = lint([corpus / "a.md"])
    assert [f.code for f in report.findings] == ["E001"] and report.files == 1


KEP_TEMPLATE_README = """# KEP-{n}: {title}

<!-- toc -->
- [Release Signoff Checklist](#release-signoff-checklist)
- [Summary](#summary)
- [Design Details](#design-details)
  - [Deprecation](#deprecation)
- [Implementation History](#implementation-history)
<!-- /toc -->

## Summary

<!--
This section is incredibly important for producing high-quality, user-focused
documentation such as release notes or a development roadmap.
-->

{summary}

## Design Details

### API

{filler}

### Status

The `status` field of the object holds the last observed phase of each {thing}.

### Deprecation

<!--
Describe how a feature is deprecated: which flags are replaced by which, and when the old
behaviour is removed. Deprecated flags are dropped after two releases.
-->

## Implementation History

<!--
Major milestones in the lifecycle of a KEP should be tracked in this section.
Major milestones might include:
- the date implementation started
- the version where the KEP graduated to general availability
- when the KEP was retired or superseded
-->

- 2024-01-10: first draft
"""


def test_a_kep_like_tree_raises_no_warning_from_templates_or_contents(tmp_path: Path) -> None:
    filler = "\n".join(f"The API keeps field {i} on the object." for i in range(70))
    files = {
        f"keps/sig-node/{n}-{slug}/README.md": KEP_TEMPLATE_README.format(
            n=n,
            title=slug.replace("-", " "),
            summary=f"{slug} in a sentence.",
            filler=filler,
            thing=slug,
        )
        for n, slug in ((2433, "topology-hints"), (3063, "dynamic-resources"))
    }
    root = write_corpus(tmp_path / "repo", files)
    assert findings(root) == []
