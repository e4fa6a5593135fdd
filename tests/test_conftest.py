"""tests/conftest.py's CPU record: each test's CPU (its children's included) in the summary, a
shared run's build counted apart, and the `heavy` marker kept honest."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


def test_the_summary_sums_each_tests_cpu_with_its_children(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the inner run needs none of them
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(
        test_busy="""
        import subprocess, sys

        def test_a_child_burns_cpu():
            busy = "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"
            subprocess.run([sys.executable, "-c", busy], check=True)

        def test_idle():
            assert True
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    costs = _costs(result.outlines, "2 tests: ")
    assert costs["test_busy.py::test_a_child_burns_cpu"] >= 0.4  # the child's CPU is counted
    assert costs["test_busy.py::test_idle"] < 0.4
    assert list(costs)[0] == "test_busy.py::test_a_child_burns_cpu"  # costliest first


BUSY = """
import subprocess, sys

def burn(seconds):
    busy = f"import time\\nend = time.process_time() + {seconds}\\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", busy], check=True)
"""


def _costs(lines: list[str], first: str) -> dict[str, float]:
    """The summary's costliest tests, by id."""
    start = lines.index(next(line for line in lines if line.startswith(first)))
    assert "CPU-s" in lines[start] and "cores the tests take at least" in lines[start]
    heading = lines.index(next(line for line in lines[start:] if "costliest tests" in line))
    rows = [line.split() for line in lines[heading + 1 :]]
    return {row[1]: float(row[0]) for row in rows if len(row) == 2 and row[1].startswith("test_")}


def test_a_shared_runs_build_is_counted_apart_from_the_test_that_asked_first(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(
        busy=BUSY,
        test_shared="""
        from busy import burn
        from conftest import shared_dir

        def test_first(tmp_path_factory):
            shared_dir(tmp_path_factory, "run", lambda folder: burn(0.4))

        def test_second(tmp_path_factory):
            shared_dir(tmp_path_factory, "run", lambda folder: burn(0.4))  # built already
        """,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    lines = result.outlines
    total = next(line for line in lines if line.startswith("2 tests: "))
    assert "shared runs and fixtures" in total, total  # the run and the session's tmp_path_factory
    built = next(line for line in lines if "shared run 'run'" in line)
    assert float(built.split()[0]) >= 0.4  # the build, once
    costs = _costs(lines, "2 tests: ")
    assert costs["test_shared.py::test_first"] < 0.4 and costs["test_shared.py::test_second"] < 0.4


def test_a_module_fixtures_build_is_counted_apart_from_the_first_test(pytester, monkeypatch):
    """A module fixture serves every test of its module: its CPU is a build of its own in the
    summary, not the first test's (which would cross the heavy line for the module's sake)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(
        busy=BUSY,
        test_fixture="""
        import pytest
        from busy import burn

        @pytest.fixture(scope="module")
        def media():
            burn(1.1)  # above the summary's 1 CPU-s for naming a fixture build
            return "built"

        def test_first(media):
            assert media == "built"

        def test_second(media):
            assert media == "built"
        """,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    built = next(line for line in result.outlines if "fixture media (test_fixture.py" in line)
    assert float(built.split()[0]) >= 1.1 and built.endswith("built once"), built
    costs = _costs(result.outlines, "2 tests: ")
    assert costs["test_fixture.py::test_first"] < 0.3 and costs["test_fixture.py::test_second"] < 0.3


def test_an_unmarked_test_far_above_the_heavy_line_fails_the_run(pytester, monkeypatch):
    """At a line of 0.2 CPU-s (make test's is 3): 0.5 CPU-s unmarked fails the run (above twice
    the line) and is named; marked heavy it passes; 0.3 CPU-s unmarked is named, not failed."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    source = CONFTEST.read_text()
    assert "HEAVY_CPU_S = 3.0" in source
    pytester.makeconftest(source.replace("HEAVY_CPU_S = 3.0", "HEAVY_CPU_S = 0.2"))
    pytester.makeini("[pytest]\nmarkers =\n    heavy: above the line")
    pytester.makepyfile(busy=BUSY, test_cost="from busy import burn\n\ndef test_costly():\n    burn(0.5)\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["not marked heavy, above 0.4 CPU-s (FAILS the run*test_cost.py::test_costly*"]
    )

    pytester.makepyfile(
        test_cost="import pytest\nfrom busy import burn\n\n@pytest.mark.heavy\ndef test_costly():\n burn(0.5)"
    )
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0

    pytester.makepyfile(test_cost="from busy import burn\n\ndef test_costly():\n    burn(0.3)\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["not marked heavy, above 0.2 CPU-s (mark them*test_cost.py::test_costly*"])


def test_a_run_selecting_another_marker_is_not_held_to_the_line(pytester, monkeypatch):
    """make test-local-models runs `-m local_models` in the model venvs: sized by its own target,
    an unmarked test above twice the line neither fails it nor is named."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST.read_text().replace("HEAVY_CPU_S = 3.0", "HEAVY_CPU_S = 0.2"))
    pytester.makeini("[pytest]\nmarkers =\n    heavy: above the line\n    local_models: a venv's")
    marked = "@pytest.mark.local_models\ndef test_costly():\n    burn(0.5)\n"
    pytester.makepyfile(busy=BUSY, test_cost="import pytest\nfrom busy import burn\n\n" + marked)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "local_models")
    assert result.ret == 0 and "not marked heavy" not in result.stdout.str()


def test_a_heavy_shared_run_is_refused_to_an_unmarked_test(pytester, monkeypatch):
    """The `study` run is built for heavy tests only: an unmarked test that asks for it fails at
    once, naming the run, before anything is built; marked heavy, it gets the run."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    heavy: above the line")
    pytester.makepyfile(
        test_study="""
        import pytest
        from conftest import shared_dir

        def build(folder):
            (folder / "built").touch()

        def test_unmarked(tmp_path_factory):
            shared_dir(tmp_path_factory, "study", build)

        @pytest.mark.heavy
        def test_marked(tmp_path_factory):
            assert (shared_dir(tmp_path_factory, "study", build) / "built").exists()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_unmarked reads the shared run 'study', a heavy build: mark it*"])
