"""The user's rulebook cache: a hit gives the rules that were checked, any change to a rule file is a miss, and a
cache file that is broken or that others can write is never read."""

from __future__ import annotations

import os

import pytest

from flinkdoctor.errors import RuleError
from flinkdoctor.knowledge import rulebook
from flinkdoctor.knowledge.rulebook import load_rules
from flinkdoctor.runtime.userstate import state_dir

RULE = (
    "id: cache-probe\ntitle: {title}\ncategory: other\nrole: cause\n"
    "match:\n  - text: 'Something happened'\nexplanation: Something long enough to pass.\n"
    "references: [x]\nfix: [{{text: nothing}}]\ngap: none\ncases: []\n"
)


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path / "state"))
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "cache-probe.yaml").write_text(RULE.format(title="The first title"))
    return rules


def _title(rules) -> str:
    return next(r.title for r in rules if r.id == "cache-probe")


def _no_checking(monkeypatch):
    def fail(dirs):
        raise AssertionError("the rule files were checked again")

    monkeypatch.setattr(rulebook, "_load", fail)


def test_an_unchanged_rulebook_comes_from_the_cache(state, monkeypatch):
    first = load_rules([state])
    assert [p.name.split("-")[0] for p in state_dir().glob("*.pickle")] == ["rules"]
    _no_checking(monkeypatch)
    again = load_rules([state])
    assert [r.id for r in again] == [r.id for r in first] and _title(again) == "The first title"


def test_a_changed_rule_file_is_checked_again(state):
    load_rules([state])
    (state / "cache-probe.yaml").write_text(RULE.format(title="A second title"))
    assert _title(load_rules([state])) == "A second title"
    assert len(list(state_dir().glob("rules-*.pickle"))) == 1  # the stale entry is gone


def test_broken_or_foreign_cache_files_are_not_read(state, monkeypatch):
    load_rules([state])
    (cache,) = state_dir().glob("rules-*.pickle")
    cache.write_bytes(b"not a pickle")
    assert _title(load_rules([state])) == "The first title"
    os.chmod(cache, 0o664)  # writable by the group: someone else could have put it there
    _no_checking(monkeypatch)
    with pytest.raises(AssertionError, match="checked again"):
        load_rules([state])


def test_bad_rules_are_never_cached(state):
    (state / "cache-probe.yaml").write_text("id: cache-probe\n")
    for _ in range(2):
        with pytest.raises(RuleError):
            load_rules([state])
    assert not list(state_dir().glob("rules-*.pickle"))


def test_the_catalogue_index_reaches_tasks_by_its_file(tmp_path, monkeypatch):
    """The scan's tasks get the catalogue's index as the path of its stored file, linked into the run's folder (a
    few hundred bytes, not the 15 MB index with every task's function), and read back the very index the driver
    built, with its compiled database, even when another run has since replaced the state folder's file; an index
    with no private file behind it goes whole, and a file that changed under a run is an error that says so,
    never another catalogue's hits."""
    import json
    import pickle
    from types import SimpleNamespace

    from conftest import DATA
    from flinkdoctor.scan import catalogue

    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path / "state"))
    run = tmp_path / "run"
    run.mkdir()
    entries = json.loads((DATA / "catalogue" / "scan-test.json").read_text("utf-8"))["entries"]
    index = catalogue.catalogue_index(SimpleNamespace(entries=tuple(SimpleNamespace(**e) for e in entries)))
    assert index is not None
    sent = pickle.dumps(catalogue.for_tasks(index, run))
    assert len(sent) < 1000 < len(pickle.dumps(index))
    stored = next(state_dir().glob("catalogue-index-other-*.pickle"))
    stored.unlink()  # another version's run stored its own index meanwhile
    catalogue._read_index.cache_clear()
    got = pickle.loads(sent)
    assert type(got) is catalogue.CatalogueIndex and got == index and got.compiled == index.compiled

    assert catalogue.for_tasks(index, run) is index  # nothing stored: the index goes whole
    linked = run / "catalogue-index.pickle"
    os.chmod(linked, 0o666)  # others can write it: never read
    catalogue._read_index.cache_clear()
    with pytest.raises(RuntimeError, match="changed or went"):
        pickle.loads(sent)
    os.chmod(linked, 0o600)
    linked.write_bytes(pickle.dumps("another catalogue"))
    catalogue._read_index.cache_clear()
    with pytest.raises(RuntimeError, match="changed or went"):
        pickle.loads(sent)


@pytest.fixture
def layouts_state(tmp_path, monkeypatch):
    """The package's layouts.yaml as a copy the test may change, the user's state in the test's folder."""
    from flinkdoctor.sources import layouts

    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path / "state"))
    copy = tmp_path / "layouts.yaml"
    copy.write_text(layouts.layouts_file().read_text("utf-8"), "utf-8")
    monkeypatch.setattr(layouts, "layouts_file", lambda: copy)
    layouts.load_layouts.cache_clear()
    yield copy
    layouts.load_layouts.cache_clear()


def _unchecked(monkeypatch):
    from flinkdoctor.sources import layouts

    def fail(path):
        raise AssertionError("the layouts were checked again")

    monkeypatch.setattr(layouts, "_checked", fail)


def test_checked_layouts_come_from_the_cache_in_the_next_process(layouts_state, monkeypatch):
    """A Spark worker (and every later run) reads the package's checked layouts back instead of checking the file
    again; a file of the user's own is checked every time."""
    from flinkdoctor.sources import layouts

    first = layouts.load_layouts()
    assert [p.name.split("-")[0] for p in state_dir().glob("*.pickle")] == ["layouts"]
    layouts.load_layouts.cache_clear()  # as a new process
    _unchecked(monkeypatch)
    assert layouts.load_layouts() == first and layouts.layout_by_id("flink-log4j2") == first[0]
    with pytest.raises(AssertionError, match="checked again"):
        layouts.load_layouts(layouts_state)


def test_a_changed_layouts_file_is_checked_again(layouts_state):
    from flinkdoctor.sources import layouts

    before = layouts.load_layouts()
    probe = "\n- id: probe\n  about: a layout for a test\n  header: '^probe (?<msg>.*)$'\n  timed: false\n"
    layouts_state.write_text(layouts_state.read_text("utf-8") + probe, "utf-8")
    layouts.load_layouts.cache_clear()
    assert [layout.id for layout in layouts.load_layouts()] == [*(layout.id for layout in before), "probe"]
    kept = list(state_dir().glob("layouts-*.pickle"))
    assert len(kept) == 1  # the stale entry is gone
    layouts_state.write_text(layouts_state.read_text("utf-8").replace("'^probe (?<msg>.*)$'", "'^(\\w+\\s?)+$'"))
    for _ in range(2):  # a bad file is never kept: checked, and refused, again
        layouts.load_layouts.cache_clear()
        with pytest.raises(RuleError, match="can backtrack catastrophically"):
            layouts.load_layouts()
    assert list(state_dir().glob("layouts-*.pickle")) == kept


def test_a_cache_entry_that_holds_no_layouts_is_not_used(layouts_state):
    from flinkdoctor.runtime.userstate import store
    from flinkdoctor.sources import layouts

    first = layouts.load_layouts()
    key = layouts._checked_key()
    assert key is not None
    for foreign in [("not a layout",), (), "layouts"]:
        store("layouts", key, foreign)
        layouts.load_layouts.cache_clear()
        assert layouts.load_layouts() == first


def test_a_stored_value_is_read_with_the_cycle_collector_paused_and_given_back_as_it_was(tmp_path, monkeypatch):
    import gc

    from flinkdoctor.runtime.userstate import cached, store

    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path / "state"))
    value = {"entries": [(str(i), i) for i in range(1000)]}
    store("probe", "key", value)
    seen = []
    monkeypatch.setattr("pickle.load", lambda handle: seen.append(gc.isenabled()) or value)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert cached("probe", "key") == value and gc.isenabled() is enabled
    finally:
        gc.enable()
    assert seen == [False, False]


def test_the_checked_layouts_key_changes_with_the_python_and_with_each_file_the_check_reads(tmp_path, monkeypatch):
    """Kept layouts are read back only for the same layouts.yaml checked by the same code under the same Python
    (its `re` compiled the regexes): another interpreter, or a change to the schema or any module that checks the
    file, is a new key, so a worker never takes layouts that today's check would refuse or read otherwise. The
    modules that do the checking are those the key reads; a package whose files cannot be read has no key."""
    import inspect
    import sys
    import types
    from pathlib import Path

    from flinkdoctor.knowledge import regexes, validation
    from flinkdoctor.sources import layouts

    package = Path(inspect.getfile(layouts)).parents[1]
    copy = tmp_path / "flinkdoctor"
    for name in ("sources/layouts/layouts.yaml", *layouts.CHECKED_BY):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((package / name).read_bytes())
    monkeypatch.setattr(layouts, "resources", types.SimpleNamespace(files=lambda _: copy))
    checking = (layouts._checked, regexes.checked, validation.read_yaml, validation.schema_problems)
    assert {Path(inspect.getfile(f)).relative_to(package).as_posix() for f in checking} <= set(layouts.CHECKED_BY)

    first = layouts._checked_key()
    assert first is not None and layouts._checked_key() == first
    with monkeypatch.context() as other:
        other.setattr(sys, "version", sys.version + " (another build)")
        assert layouts._checked_key() not in (None, first)
    for name in ("sources/layouts/layouts.yaml", *layouts.CHECKED_BY):
        kept = (copy / name).read_bytes()
        (copy / name).write_bytes(kept + b"\n")
        assert layouts._checked_key() not in (None, first), name
        (copy / name).unlink()
        assert layouts._checked_key() is None, name
        (copy / name).write_bytes(kept)
    assert layouts._checked_key() == first
