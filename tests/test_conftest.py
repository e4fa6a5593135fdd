"""tests/conftest.py's CPU record: each test's CPU (its children's included) in the summary."""

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
    lines = result.outlines
    start = lines.index(next(line for line in lines if line.startswith("2 tests: ")))
    assert "CPU-s" in lines[start] and "cores the tests take at least" in lines[start]
    costs = {line.split()[1]: float(line.split()[0]) for line in lines[start + 1 : start + 3]}
    assert costs["test_busy.py::test_a_child_burns_cpu"] >= 0.4  # the child's CPU is counted
    assert costs["test_busy.py::test_idle"] < 0.4
    assert list(costs)[0] == "test_busy.py::test_a_child_burns_cpu"  # costliest first
