"""The benchmark corpus of SPEC §10: notes of 80–160 words drawn from a Zipf vocabulary.

One note is one paragraph under a title; at the default chunk size (800 characters) a note
makes 1.6 chunks on average, so benchmarks size the corpus in chunks (`notes_for`). Queries
are 6 words of one target note, its rarer words favoured (as a person's question would be).
Everything is seeded: the same arguments write the same files.
"""

from __future__ import annotations

import random
from pathlib import Path

FILES_PER_FOLDER = 1000


def pseudo_word(rng: random.Random) -> str:
    return "".join(
        rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4))
    )


class ZipfCorpus:
    """`n` notes over a `vocab`-word Zipf (s = 1) vocabulary."""

    def __init__(self, n: int, *, vocab: int = 30_000, seed: int = 11) -> None:
        rng = random.Random(seed)
        words = list(dict.fromkeys(pseudo_word(rng) for _ in range(vocab * 2)))[:vocab]
        self.vocab = words
        self.rank = {w: r for r, w in enumerate(words)}
        self.n = n
        self.seed = seed
        cum: list[float] = []
        total = 0.0
        for r in range(len(words)):
            total += 1.0 / (r + 1)
            cum.append(total)
        self._cum = cum

    def words(self, i: int) -> list[str]:
        """The words of note `i` (deterministic per note, so notes can be regenerated alone)."""
        rng = random.Random(self.seed * 1_000_003 + i)
        return rng.choices(self.vocab, cum_weights=self._cum, k=rng.randint(80, 160))

    def relpath(self, i: int) -> str:
        return f"f{i // FILES_PER_FOLDER:04d}/note-{i:07d}.md"

    def text(self, i: int) -> str:
        return f"# Note {i}\n\n{' '.join(self.words(i))}.\n"

    def write(self, root: Path, start: int = 0, stop: int | None = None) -> None:
        for i in range(start, self.n if stop is None else stop):
            path = root / self.relpath(i)
            if i % FILES_PER_FOLDER == 0 or i == start:
                path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.text(i), encoding="utf-8")

    def notes_for(self, chunks: int, sample: int = 1000) -> int:
        """How many notes make about `chunks` chunks, from the chunker's count on a sample."""
        from recall.chunking import chunk

        made = sum(len(chunk(self.text(i))) for i in range(sample))
        return max(1, round(chunks * sample / made))

    def queries(self, count: int, seed: int = 7) -> list[tuple[str, int]]:
        """(query, target note) pairs: 6 of the target's rarer words."""
        rng = random.Random(seed)
        out = []
        for t in rng.sample(range(self.n), min(count, self.n)):
            distinct = sorted(set(self.words(t)), key=lambda w: -self.rank[w])
            pool = distinct[: max(6, len(distinct) // 3)]
            out.append((" ".join(rng.sample(pool, min(6, len(pool)))), t))
        return out


#: The name benches give the 384-d ONNX word embedder `embedder_for` builds.
DENSE = "dense-384"


def embedder_for(name: str, workdir: Path) -> str:
    """The embedder spec a bench indexes with: `name` itself, or for `dense-384` `onnx:DIR` of a
    384-d word embedder over the corpus vocabulary written into `workdir` (every dimension of
    every vector set, the shape of the default model's vectors; Gaussian word vectors averaged,
    so the rows have no cluster structure to lean on)."""
    if name != DENSE:
        return name
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.onnx_models import build_embedder

    folder = workdir / DENSE
    if not (folder / "model.onnx").exists():
        build_embedder(folder, ZipfCorpus(1000).vocab, dim=384)
    return f"onnx:{folder}"
