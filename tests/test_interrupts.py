"""An interrupted run tells the truth and leaves nothing behind (issue 58, point 3).

- A real ffmpeg stopped by a signal (Ctrl-C reaches it as SIGINT, `kill` as SIGTERM) is reported
  as an interrupt (`Interrupted`, a KeyboardInterrupt), not as a failure of the media: through the
  package's runner (`run_command`) and through the stimuli's (`stimuli._run`, the rule whose
  Ctrl-C read "StimulusError: dyad D012: ffmpeg failed ... (no stderr)").
- The console line of an interrupted job says "interrupted", not "failed".
- No job outlives its killed Snakemake run: a real `snakemake` run is killed with SIGKILL while its
  job runs a real ffmpeg and a forked pool worker (as rasch.py's fits); the job, the encoder and
  the worker are gone within seconds. The same for a job under a Snakemake that its run started
  through a shell (a group job): the outer one's death ends the job.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import ffmpeg
import pytest

from omnisocial.familiarity import stimuli
from omnisocial.media.ffmpeg_run import MediaError, raise_if_interrupted, run_command
from omnisocial.processes import Interrupted, as_child, fork_context, runs_snakemake, workflow_processes
from omnisocial.workflow import console_excepthook

REPO = Path(__file__).resolve().parents[1]
GONE_WITHIN_S = 5.0  # a job polls its run every 0.5 s; generous for a loaded machine
LONG_INPUT = {"filename": "sine=d=600", "f": "lavfi", "re": None}  # 10 min, read in real time


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, does not)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def ffmpeg_children(parent: int) -> list[int]:
    """The ffmpeg processes (already exec'd) whose parent is `parent`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and int(stat[1]) == parent:
            try:
                if (entry / "comm").read_text().strip() == "ffmpeg":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def end_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def signal_ffmpeg_during(call, signum: int) -> BaseException | None:
    """Run `call` in a thread, send `signum` to the ffmpeg it starts, return what `call` raised."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as error:  # noqa: BLE001 - the test inspects whatever it was
            raised.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    assert wait_for(lambda: ffmpeg_children(os.getpid())), "ffmpeg did not start"
    time.sleep(0.3)  # past ffmpeg's start, into its run
    for pid in ffmpeg_children(os.getpid()):
        os.kill(pid, signum)
    thread.join(timeout=30)
    assert not thread.is_alive(), "the run did not end after the signal"
    return raised[0] if raised else None


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


# --- the message ---------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signalled_ffmpeg_is_an_interrupt_through_the_runner(tmp_path, signum):
    stream = ffmpeg.input(**LONG_INPUT).output(str(tmp_path / "tone.wav"))
    argv = ffmpeg.compile(stream.global_args("-nostdin", "-loglevel", "error").overwrite_output())
    error = signal_ffmpeg_during(lambda: run_command(argv, file=tmp_path / "tone.wav", what="encode"), signum)
    assert isinstance(error, Interrupted) and not isinstance(error, Exception), repr(error)
    assert "ffmpeg was interrupted by" in str(error) and "rerun to resume" in str(error)
    assert not isinstance(error, MediaError)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signalled_stimulus_render_is_an_interrupt_not_a_stimulus_error(tmp_path, signum):
    stream = ffmpeg.input(**LONG_INPUT).output(str(tmp_path / "D012.wav"))
    error = signal_ffmpeg_during(lambda: stimuli._run("D012", "the audio and video stimuli", stream), signum)
    assert isinstance(error, Interrupted), repr(error)
    assert not isinstance(error, stimuli.StimulusError)
    assert str(error).startswith("ffmpeg was interrupted by ")
    assert "while making the audio and video stimuli of dyad D012" in str(error)


def test_a_real_ffmpeg_failure_stays_a_stimulus_error(tmp_path):
    stream = ffmpeg.input(str(tmp_path / "missing.wav")).output(str(tmp_path / "out.wav"))
    with pytest.raises(stimuli.StimulusError, match=r"dyad D012: ffmpeg failed making .*missing\.wav"):
        stimuli._run("D012", "the audio stimuli", stream)


@pytest.mark.parametrize(
    ("argv0", "code", "stderr", "expected"),
    [
        ("ffmpeg", -2, b"", "SIGINT"),  # killed outright by the signal
        ("ffprobe", -15, b"", "SIGTERM"),
        ("ffmpeg", 255, b"[info] Exiting normally, received signal 15.\n", "SIGTERM"),
        ("ffmpeg", 255, b"", "a signal"),  # under -loglevel error ffmpeg says nothing
        ("ffmpeg", 255, b"[error] Could not write header\n", None),  # an error it names
        ("ffmpeg", 1, b"", None),
        ("ffmpeg", -11, b"", None),  # a crash (SIGSEGV) is a failure, not an interrupt
        ("ffprobe", 255, b"", None),  # 255 means a signal for ffmpeg only
    ],
)
def test_which_exits_are_interrupts(argv0, code, stderr, expected):
    if expected is None:
        raise_if_interrupted([argv0], code, stderr, "testing")
        return
    with pytest.raises(Interrupted, match=f"{argv0} was interrupted by {expected} while testing"):
        raise_if_interrupted([argv0], code, stderr, "testing")


def test_an_interrupt_in_a_pool_worker_reaches_the_job_as_itself():
    with ProcessPoolExecutor(max_workers=1, mp_context=fork_context()) as pool:
        future = pool.submit(raise_if_interrupted, ["ffmpeg"], -15, b"", "encoding D012.mp4")
        with pytest.raises(Interrupted, match="ffmpeg was interrupted by SIGTERM while encoding D012.mp4"):
            future.result()


def test_the_console_says_interrupted_not_failed():
    console, log = io.StringIO(), io.StringIO()
    hook = console_excepthook("render_stimuli", "results/logs/render_stimuli.log", console)
    stderr, sys.stderr = sys.stderr, log
    try:
        error = Interrupted("ffmpeg", signal.SIGINT, "making the audio and video stimuli of dyad D012")
        hook(type(error), error, None)
    finally:
        sys.stderr = stderr
    shown = console.getvalue().splitlines()
    assert shown[0] == "omnisocial: rule render_stimuli interrupted"
    assert shown[1].endswith(
        "Interrupted: ffmpeg was interrupted by SIGINT while making the audio and video "
        "stimuli of dyad D012: the run was stopped, rerun to resume"
    )
    assert "StimulusError" not in console.getvalue()


# --- nothing left behind -------------------------------------------------------------------------

JOB = """
import os, re, subprocess, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
sys.path.insert(0, {src!r})
from omnisocial.processes import as_child, fork_context
from omnisocial.workflow import start

log = start(snakemake)
pool = ProcessPoolExecutor(max_workers=1, mp_context=fork_context())  # as a Rasch fit's workers
worker = pool.submit(os.getpid).result()
pool.submit(time.sleep, 600)
argv = ["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "sine=d=600"]
command, options = as_child([*argv, "-f", "null", "-"])  # as the runner starts it
encoder = subprocess.Popen(command, **options)
Path("pids").write_text(f"{{os.getpid()}} {{worker}} {{encoder.pid}}")
{work}
"""
# What the job is doing when its run is killed: waiting for its encoder, or stuck in a C call
# that holds the GIL (a regular expression that backtracks for ages), where no Python thread runs.
WORK = {
    "waiting": "encoder.wait()",
    "holding the GIL": 're.match(r"(a*)*b", "a" * 64)',
}


def job_workflow(workdir: Path, work: str) -> None:
    (workdir / "Snakefile").write_text(
        'rule job:\n    output: "out.txt"\n    log: "logs/job.log"\n    script: "job.py"\n'
    )
    (workdir / "job.py").write_text(JOB.format(src=str(REPO / "src"), work=work))


@pytest.mark.slow
@pytest.mark.parametrize("doing", list(WORK))
def test_no_job_outlives_its_killed_snakemake_run(tmp_path, doing):
    job_workflow(tmp_path, WORK[doing])
    run = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes: list[int] = []
    try:
        pids = tmp_path / "pids"
        # the job writes the file in one call, but a reader may open it between its creation and
        # that write: wait until all three ids are there
        assert wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 3, 60)
        processes = [int(pid) for pid in pids.read_text().split()]  # the job, its pool worker, ffmpeg
        assert all(alive(pid) for pid in processes)
        assert workflow_processes(processes[0])[-1][0] == run.pid  # the job watches its run
        run.kill()  # kill -9
        run.wait()
        assert wait_for(lambda: not any(alive(pid) for pid in processes), GONE_WITHIN_S), [
            pid for pid in processes if alive(pid)
        ]
    finally:
        run.kill()
        end_all([pid for pid in processes if alive(pid)])  # what a failure left behind
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["snakemake", "--cores", "1"], True),
        (["/work/.venv/bin/python", "/work/.venv/bin/snakemake", "-c1"], True),
        (["python3", "-m", "snakemake", "--target-jobs", "x"], True),  # a group job's Snakemake
        (["python", "-m", "pytest", "-k", "snakemake"], False),
        (["pytest", "-k", "snakemake"], False),
        (["bash", "-c", "snakemake -c1"], False),  # its shell: the Snakemake below it counts
    ],
)
def test_which_processes_are_snakemake(argv, expected):
    assert runs_snakemake(argv) is expected


OUTER = """
import subprocess, sys
subprocess.run(["/bin/sh", "-c", sys.argv[1]])
"""
INNER = OUTER + "import time; time.sleep(60)\n"  # lives on after its job: the job's end shows


def test_a_group_job_stops_when_the_outer_snakemake_is_killed(tmp_path):
    """A group job runs under `sh -c "python -m snakemake ..."` started by the run's Snakemake:
    the job's parent (the inner Snakemake) lives on when the outer one is killed, the job still
    stops. Both Snakemakes are stand-ins run as scripts named `snakemake`."""
    for name, text in (("outer", OUTER), ("inner", INNER)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "snakemake").write_text(text)
    job = (
        f"import os, sys, time; sys.path.insert(0, {str(REPO / 'src')!r}); "
        "import logging; logging.basicConfig(filename='job.log'); "
        "from omnisocial.processes import stop_with_workflow; stop_with_workflow(logging.getLogger()); "
        "open('job.pid', 'w').write(str(os.getpid())); time.sleep(600)"
    )
    inner = f'{sys.executable} inner/snakemake "{sys.executable} -c \\"{job}\\""'
    outer = subprocess.Popen([sys.executable, "outer/snakemake", inner], cwd=tmp_path)
    watched: list[int] = []
    pid = outer.pid
    try:
        job_pid = tmp_path / "job.pid"  # written after it is created: wait for the id itself
        assert wait_for(lambda: job_pid.exists() and job_pid.read_text().strip().isdigit(), 30)
        pid = int(job_pid.read_text())
        watched = [p for p, _ in workflow_processes(pid)]
        assert watched[-1] == outer.pid  # up to the outermost Snakemake
        inner_pid = next(p for p in watched if b"inner/snakemake" in Path(f"/proc/{p}/cmdline").read_bytes())
        outer.kill()
        outer.wait()
        assert wait_for(lambda: not alive(pid), GONE_WITHIN_S)
        assert alive(inner_pid)  # its own parent still runs: the outer run's end stopped it
    finally:
        outer.kill()
        end_all([p for p in [*watched, pid] if alive(p)])
    assert (
        f"stopping: process {outer.pid} of the Snakemake run that started this job has ended"
        in (tmp_path / "job.log").read_text()
    )


def test_a_tool_dies_with_the_job_that_started_it(tmp_path):
    """ffmpeg started through the runner gets SIGKILL when its job is killed (PR_SET_PDEATHSIG)."""
    script = textwrap.dedent(
        f"""
        import os, sys, threading
        sys.path.insert(0, {str(REPO / "src")!r})
        from pathlib import Path
        from omnisocial.media.ffmpeg_run import run_command
        argv = ["ffmpeg", "-nostdin", "-re", "-f", "lavfi", "-i", "sine=d=600", "-f", "null", "-"]
        threading.Thread(target=run_command, args=(argv,), kwargs={{"file": Path("t"), "what": "x"}}).start()
        """
    )
    job = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert wait_for(lambda: ffmpeg_children(job.pid), 30)
        encoder = ffmpeg_children(job.pid)[0]
        job.kill()
        job.wait()
        assert wait_for(lambda: not alive(encoder), GONE_WITHIN_S)
    finally:
        job.kill()


def test_a_tool_started_as_a_child_is_the_tool_and_dies_with_its_thread(tmp_path):
    """`as_child` on Linux with util-linux: setpriv sets the death signal and execs the tool in
    the same process (its pid, name and exit status are the tool's), started without a
    preexec_fn, so Python need not fork the whole job; the tool dies when its thread ends."""
    command, options = as_child(["sleep", "600"])
    assert options == {} and command[-2:] == ["sleep", "600"] and Path(command[0]).name == "setpriv"
    started = tmp_path / "pid"
    script = textwrap.dedent(
        f"""
        import subprocess, sys, threading, time
        sys.path.insert(0, {str(REPO / "src")!r})
        from omnisocial.processes import as_child
        def start():
            command, options = as_child(["sleep", "600"])
            open({str(started)!r}, "w").write(str(subprocess.Popen(command, **options).pid))
            time.sleep(600)  # the thread lives until its process is killed
        threading.Thread(target=start).start()
        """
    )
    job = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert wait_for(lambda: started.is_file() and started.read_text(), 30)
        child = int(started.read_text())
        assert wait_for(lambda: _name(child) == "sleep", 10)  # setpriv exec'd it, same pid
        job.kill()
        job.wait()
        assert wait_for(lambda: not alive(child), GONE_WITHIN_S)
    finally:
        job.kill()
    command, options = as_child(["sh", "-c", "kill -TERM $$"])  # a tool that a signal stops
    assert subprocess.run(command, check=False, **options).returncode == -signal.SIGTERM


def _name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def test_a_tool_that_is_not_installed_still_raises_file_not_found():
    command, options = as_child(["omnisocial-no-such-tool", "-v"])
    assert command == ["omnisocial-no-such-tool", "-v"]
    with pytest.raises(FileNotFoundError):
        subprocess.run(command, **options)


CTRL_C_JOB = """
import sys
from pathlib import Path
sys.path.insert(0, {src!r})
from omnisocial.familiarity.stimuli import _run
from omnisocial.workflow import start
import ffmpeg

log = start(snakemake)
Path("started").touch()
_run("D012", "the audio and video stimuli", ffmpeg.input("sine=d=600", f="lavfi", re=None).output("D012.wav"))
"""


@pytest.mark.slow
def test_ctrl_c_during_rendering_is_reported_as_an_interrupt(tmp_path):
    """Ctrl-C: the terminal sends SIGINT to Snakemake, its job and the job's ffmpeg at once."""
    rule = 'rule render_stimuli:\n    output: "out.txt"\n    log: "logs/render_stimuli.log"\n'
    (tmp_path / "Snakefile").write_text(rule + '    script: "job.py"\n')
    (tmp_path / "job.py").write_text(CTRL_C_JOB.format(src=str(REPO / "src")))
    run = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a process group of its own, as a terminal's foreground job
    )
    try:
        assert wait_for((tmp_path / "started").exists, 60)
        time.sleep(0.5)
        os.killpg(run.pid, signal.SIGINT)
        console = run.communicate(timeout=60)[0].decode()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    assert "omnisocial: rule render_stimuli interrupted" in console, console
    assert "StimulusError" not in console and "ffmpeg failed" not in console
    assert not (tmp_path / "out.txt").exists()
