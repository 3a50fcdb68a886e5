"""The evaluation harness behind `recall eval` (SPEC §9), one module per job.

`questions` reads question files; `estimates` gives every figure its 95 % interval and its n;
`observation` runs the searches one question gets and keeps what they showed; `measures` makes
the rows into the §9 measurements and an `EvalReport` (`evaluate_store`: a store as it is);
`shipped` evaluates the shipped evaluation set, or a folder laid out like it, indexed fresh and
cross-fitted (`evaluate_shipped`); `formats` gives a report's terminal and markdown forms. This
package re-exports their public names and holds no logic of its own. Does not own: retrieval,
verdicts or promotion (the Rust core, through `Memory.search`), fitting a calibration
(`calibration`), the shipped corpus (`evalset/`), or the command line (`cli`).

Every figure is measured through the public `Memory.search`, the way a user would meet it: a
strict search answers (development mode only when strict refuses, and the report says so), and
a second, development-mode search at k = 100 reads each leg's ranks.
"""

from __future__ import annotations

from recall.evaluation.estimates import Estimate, mean, rate, wilson
from recall.evaluation.formats import format_markdown, format_table, table_cells
from recall.evaluation.measures import CATEGORIES, METRICS, EvalReport, evaluate_store
from recall.evaluation.observation import LEGS, Row
from recall.evaluation.questions import Question, load_questions
from recall.evaluation.shipped import EVALSET_DIR, FIT_CATEGORIES, evaluate_shipped

__all__ = [
    "CATEGORIES",
    "EVALSET_DIR",
    "FIT_CATEGORIES",
    "LEGS",
    "METRICS",
    "EvalReport",
    "Estimate",
    "Question",
    "Row",
    "evaluate_shipped",
    "evaluate_store",
    "format_markdown",
    "format_table",
    "load_questions",
    "mean",
    "rate",
    "table_cells",
    "wilson",
]
