"""Suite-wide test plumbing for `make test`'s parallel run (pytest-xdist, `-n 2 --dist loadgroup`).

- Scheduling: a module's fast tests stay on one worker (its module fixtures are built once), each
  slow test is a unit of its own unless it names an `xdist_group`, and the slow units are queued
  first (named groups first) so that the long workflow runs start at once rather than trail.
- `shared_dir`: a folder built once per session and read by tests on every worker (one
  workflow run answering several tests).
- CPU per test: each test's CPU seconds (user + sys of its process and of the children it
  waited for, setup to teardown) go with its report; the summary prints their sum, the floor
  it puts on the run's wall time (the sum over the machine's cores) and the costliest tests.
  A shared folder's build, and a module, class or session fixture's, is counted apart from the
  test that happened to ask for it first (it serves them all).
- `heavy`: a test above HEAVY_CPU_S of its own CPU (shared builds apart) goes to `make
  test-heavy`, a CI step of its own; `make test` deselects it and fails naming any unmarked test
  above FAIL_CPU_S (twice the line, so that a loaded machine's slower CPU seconds do not trip it).
  The line holds in make test's run and in a plain one, not in a run that selects another marker.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pytest
from filelock import FileLock


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):
        return  # a plain run keeps the files' order
    rank = {id(item): _rank(item) for item in items}
    for item in items:
        if rank[id(item)] == 2:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        _name_the_group(item)
    # stable, so the same order on every worker (xdist checks); make test passes
    # --no-loadscope-reorder, which keeps this order in xdist's queue
    items.sort(key=lambda item: rank[id(item)])


def _name_the_group(item: pytest.Item) -> None:
    """What xdist 3.8's own hook means to do: the groups' names as a `@` suffix of the test's id,
    from which its scheduler reads the group. Under pytest 9.2 that hook writes a field pytest no
    longer reads (pytest-dev/pytest-xdist#1386, open), so the suffix is set here on the field
    pytest reads now."""
    marks = item.iter_markers("xdist_group")
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
    if names and "@" not in item.nodeid.rsplit("]", 1)[-1]:
        from _pytest.nodeid import NodeId  # pytest >= 9.2 (the venvs pin 9.2.0)

        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def _rank(item: pytest.Item) -> int:
    """0: a named group of slow tests (one workflow run and the tests reading it), 1: another
    slow test, 2: a fast one."""
    if item.get_closest_marker("slow") is None:
        return 2
    return 0 if item.get_closest_marker("xdist_group") else 1


_BUILT: dict[str, Path] = {}  # this process's shared folders, by name


# The shared runs above the heavy line: only a test marked heavy may ask for one, so that make
# test never builds them (their CPU is counted apart from the tests, so the line alone would not
# see them). Their builds: the `study` run about 80 CPU-s, `social-judged` (with `social`) 60.
HEAVY_SHARED_RUNS = {"study", "social-judged", "social"}
_current_test: pytest.Item | None = None  # the test now running in this process


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder `build` fills once per session; under xdist the first worker to ask builds it and
    the others wait for it. A test that must change it copies it first. A build that failed is
    not tried again (it would fail the same way, after as long): the tests that ask for it
    later fail at once, with its error. A run in HEAVY_SHARED_RUNS is for heavy tests only."""
    test = _current_test
    if name in HEAVY_SHARED_RUNS and test is not None and test.get_closest_marker("heavy") is None:
        pytest.fail(
            f"{test.nodeid} reads the shared run {name!r}, a heavy build: mark it "
            "@pytest.mark.heavy (make test-heavy runs it) or test without the run"
        )
    if name in _BUILT:
        return _BUILT[name]
    root = tmp_path_factory.getbasetemp() / "shared"
    if "PYTEST_XDIST_WORKER" in os.environ:
        # the workers' base folders (.../popen-gw0, ...) share this run's own base folder
        root = tmp_path_factory.getbasetemp().parent / "shared"
    root.mkdir(exist_ok=True)
    folder, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"the shared {name!r} failed to build earlier:\n{failed.read_text()}")
        if not done.exists():
            folder.mkdir()
            try:
                with counted_apart(name):  # charged to the build, not to the test
                    build(folder)
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}"[-20000:])
                raise
            done.touch()
    _BUILT[name] = folder
    return folder


CPU_PROPERTY = "cpu_s"
# a line a test gives the run's summary (record_property("summary", ...)), e.g. the documented
# commands run and marked (tests/test_doc_commands.py)
SUMMARY_PROPERTY = "summary"
_SUMMARIES: dict[str, str] = {}
TOP_CPU_TESTS = 10
CPU_REPORT_ENV = "TEST_CPU_REPORT"  # a path: every test's CPU is written there (tab-separated)
_CPU_START = pytest.StashKey[float]()
_CPU_BY_TEST: dict[str, float] = {}  # the controller's (or a plain run's) record, by test id
HEAVY_PROPERTY = "heavy"
SHARED_CPU_PROPERTY = "shared_build_cpu_s:"  # + the shared folder's name
FIXTURE_BUILD = "fixture "  # + a module, class or session fixture's name, and where it was built
SMALL_BUILD_CPU_S = 1.0  # the summary lists each build above this, and the others' count and sum
HEAVY_CPU_S = 3.0  # a test above this (its own CPU) is marked heavy: make test-heavy runs it
FAIL_CPU_S = 2 * HEAVY_CPU_S
_CPU_BY_BUILD: dict[str, float] = {}  # the shared folders' builds, by name
_UNMARKED: set[str] = set()  # the tests not marked heavy
_SHARED_CPU: dict[str, float] = {}  # this process's shared builds not yet reported


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _current_test
    item.stash[_CPU_START] = _cpu_s()
    _current_test = item


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    """A module, class or session fixture's build is counted apart, as a shared run's: it serves
    every test of its scope, not only the first test that happened to ask for it."""
    if fixturedef.scope == "function":
        return (yield)
    where = request.node.nodeid.split("::")[0] if fixturedef.scope != "session" else "session"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    with counted_apart(f"{FIXTURE_BUILD}{fixturedef.argname} ({where}{', ' + worker if worker else ''})"):
        return (yield)


@contextmanager
def counted_apart(name: str):
    """The CPU of the block goes to the build `name` (reported apart from the test that ran it),
    less the builds nested in it, which count under their own names."""
    start, nested = _cpu_s(), sum(_SHARED_CPU.values())
    try:
        yield
    finally:
        own = _cpu_s() - start - (sum(_SHARED_CPU.values()) - nested)
        _SHARED_CPU[name] = _SHARED_CPU.get(name, 0.0) + own


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.when == "teardown" and _CPU_START in item.stash:
        builds = sum(_SHARED_CPU.values())
        for name, seconds in _SHARED_CPU.items():
            report.user_properties.append((SHARED_CPU_PROPERTY + name, seconds))
        _SHARED_CPU.clear()
        report.user_properties.append((CPU_PROPERTY, _cpu_s() - item.stash[_CPU_START] - builds))
        report.user_properties.append((HEAVY_PROPERTY, item.get_closest_marker("heavy") is not None))
    return report


def _record_heavy_and_builds(report: pytest.TestReport) -> None:
    """The controller's record of which tests are not marked heavy and of the shared builds."""
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == HEAVY_PROPERTY and not value:
            _UNMARKED.add(report.nodeid)
        if name.startswith(SHARED_CPU_PROPERTY):
            _CPU_BY_BUILD[name.removeprefix(SHARED_CPU_PROPERTY)] = float(value)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record_heavy_and_builds(report)
    for name, value in report.user_properties:
        if name == CPU_PROPERTY and report.when == "teardown":
            _CPU_BY_TEST[report.nodeid] = float(value)
        if name == SUMMARY_PROPERTY and report.when == "call":
            _SUMMARIES[report.nodeid] = str(value)


def _keeps_the_line(config: pytest.Config) -> bool:
    """Whether the heavy line holds in this run: make test's (`-m 'not heavy'`) and a plain run's.
    A run that selects tests by another marker (make test-local-models' `-m local_models` in its
    model venvs, make test-browser's `-m browser`) is a step of its own, sized by its target."""
    selection = (config.getoption("markexpr", "") or "").strip()
    return not selection or "not heavy" in selection


def _too_heavy(limit: float) -> list[tuple[str, float]]:
    """The tests not marked heavy whose own CPU is above the limit, costliest first."""
    over = [(t, s) for t, s in _CPU_BY_TEST.items() if t in _UNMARKED and s > limit]
    return sorted(over, key=lambda ts: -ts[1])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or session.exitstatus != pytest.ExitCode.OK:
        return
    if _keeps_the_line(session.config) and _too_heavy(FAIL_CPU_S):  # named in the summary
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _write_cpu_report(path: Path) -> None:
    """Every test's own CPU and every shared run's build, costliest first (tab-separated)."""
    rows = [(s, "build", n) for n, s in _CPU_BY_BUILD.items()]
    rows += [(s, "heavy" if t not in _UNMARKED else "test", t) for t, s in _CPU_BY_TEST.items()]
    lines = [f"{s:.2f}\t{kind}\t{name}" for s, kind, name in sorted(rows, key=lambda r: -r[0])]
    path.write_text("cpu_s\tkind\tname\n" + "\n".join(lines) + "\n")


def pytest_terminal_summary(terminalreporter) -> None:
    if _SUMMARIES and not hasattr(terminalreporter.config, "workerinput"):
        terminalreporter.section("summaries")
        for nodeid, line in sorted(_SUMMARIES.items()):
            terminalreporter.write_line(f"{nodeid.split('::')[-1]}: {line}")
    if not _CPU_BY_TEST or hasattr(terminalreporter.config, "workerinput"):
        return  # an xdist worker: the controller prints the whole run's
    builds = sum(_CPU_BY_BUILD.values())
    total = sum(_CPU_BY_TEST.values()) + builds
    cores = len(os.sched_getaffinity(0))  # a test may use several (its snakemake --cores 2)
    write = terminalreporter.write_line
    terminalreporter.section("CPU per test")
    write(
        f"{len(_CPU_BY_TEST)} tests: {total:.0f} CPU-s (user + sys, with their children; "
        f"{builds:.0f} of them building {len(_CPU_BY_BUILD)} shared runs and fixtures); "
        f"on this machine's {cores} cores the tests take at least {total / cores:.0f} s"
    )

    def small(name: str, seconds: float) -> bool:
        return name.startswith(FIXTURE_BUILD) and seconds <= SMALL_BUILD_CPU_S

    for name, seconds in sorted(_CPU_BY_BUILD.items(), key=lambda kv: -kv[1]):
        if not small(name, seconds):
            what = name if name.startswith(FIXTURE_BUILD) else f"shared run {name!r} (conftest.shared_dir)"
            write(f"{seconds:8.1f}  {what}, built once")
    rest = [s for n, s in _CPU_BY_BUILD.items() if small(n, s)]
    write(f"{sum(rest):8.1f}  {len(rest)} smaller fixture builds (each up to {SMALL_BUILD_CPU_S:g} CPU-s)")
    write(f"the {TOP_CPU_TESTS} costliest tests (their own CPU, shared runs and fixture builds apart):")
    for nodeid, seconds in sorted(_CPU_BY_TEST.items(), key=lambda kv: -kv[1])[:TOP_CPU_TESTS]:
        write(f"{seconds:8.1f}  {nodeid}")
    if os.environ.get(CPU_REPORT_ENV):
        _write_cpu_report(Path(os.environ[CPU_REPORT_ENV]))
        write(f"every test's CPU: {os.environ[CPU_REPORT_ENV]}")
    lines = ((FAIL_CPU_S, "FAILS the run"), (HEAVY_CPU_S, "mark them"))
    for limit, verdict in lines if _keeps_the_line(terminalreporter.config) else ():
        over = _too_heavy(limit)
        if over:
            write(
                f"not marked heavy, above {limit:g} CPU-s ({verdict}; @pytest.mark.heavy runs a test in "
                f"make test-heavy): " + ", ".join(f"{t} {s:.1f}" for t, s in over),
                red=True,
            )
            break
