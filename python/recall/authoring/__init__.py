"""Authoring tools (SPEC §8.4): `lint`, `fix` and `check` read a folder of notes as written, with
no store and no embedder; `forget` lives with the store (`recall.api`)."""
