"""promptx.data_cache: parsed data files pickled once per version of their sources."""

from __future__ import annotations

import os
import pickle

import pytest

from promptx.compose.phrases import _read_book, default_directory
from promptx.data_cache import cached


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PROMPTX_DATA_CACHE", raising=False)
    return tmp_path / "cache" / "data"


def test_a_build_runs_once_per_version_of_its_sources(cache, tmp_path):
    source = tmp_path / "words.txt"
    source.write_text("fox owl")
    builds = []

    def build():
        builds.append(1)
        return source.read_text().split()

    assert cached("words", [source], build) == ["fox", "owl"]
    assert (
        cached("words", [source], build) == ["fox", "owl"] and len(builds) == 1
    )  # from the pickle
    source.write_text("fox owl hare")
    os.utime(source, ns=(1, 10**18))
    assert (
        cached("words", [source], build) == ["fox", "owl", "hare"] and len(builds) == 2
    )  # a new version
    assert len(list(cache.glob("words-*.pickle"))) == 2


def test_a_damaged_pickle_is_rebuilt_and_an_unwritable_cache_only_costs_time(
    cache, tmp_path, monkeypatch
):
    source = tmp_path / "words.txt"
    source.write_text("fox")
    cached("words", [source], lambda: ["fox"])
    (pickled,) = cache.glob("words-*.pickle")
    pickled.write_bytes(b"not a pickle")
    assert cached("words", [source], lambda: ["again"]) == ["again"]
    assert pickle.loads(pickled.read_bytes()) == ["again"]
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("PROMPTX_CACHE", str(blocked))
    assert cached("words", [source], lambda: ["built"]) == ["built"]


def test_turned_off_it_reads_the_files_every_time(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMPTX_DATA_CACHE", "0")
    source = tmp_path / "words.txt"
    source.write_text("fox")
    builds = []
    for _ in range(2):
        cached("words", [source], lambda: builds.append(1))
    assert len(builds) == 2 and not cache.exists()


def test_the_pickled_phrase_book_composes_like_the_parsed_one(cache):
    from promptx.compose.compose import compose
    from promptx.profiles.registry import default_registry

    root = default_directory()
    parsed = _read_book(root)
    cached("phrase-book", sorted(root.rglob("*.toml")), lambda: parsed)
    loaded = cached("phrase-book", sorted(root.rglob("*.toml")), lambda: pytest.fail("rebuilt"))
    assert loaded is not parsed and loaded.subject_forms == parsed.subject_forms
    video = default_registry().get("video")
    for prompt in ("a cat on a skateboard", "two dogs running on a beach at night"):
        assert (
            compose(prompt, video, seed=3, book=loaded).text
            == compose(prompt, video, seed=3, book=parsed).text
        )
