#!/usr/bin/env python3
"""Regenerate every output the docs show for a ``$ snapdp …`` example (docs/examples/README.md).

    python3 tools/make_doc_outputs.py            # rewrite the output blocks of README.md, docs/*.md
    python3 tools/make_doc_outputs.py --check    # exit 1 and name each example whose output changed

An example is a line ``$ snapdp ARGS`` inside a ```` ```console ```` block of README.md or a page of
docs/ (a trailing ``\\`` continues it on the next line); its output is every following line of the
block up to the next ``$`` line. Each page's examples run in order, from a fresh temporary copy of
the repository's README.md and docs/ (so a ledger written by one example is read by the next, and
nothing is written into the repository), with ``SNAPDP_SHARED_DATA`` set to a missing folder: they
need only what a fresh clone ships (docs/examples/).

Every run is **seeded**: the process replaces the default CSPRNG by a numpy Generator with a fixed
seed, the reproducible and **not private** generator of docs/mechanism.md ("Randomness"), so the
noisy numbers shown are the same on every run of this script. Never use this for a real release.

``snapdp ui`` examples start a server: they are not run (their output is kept as written); the
files they name must exist.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261126
#: The terminal the examples are printed for (rich tables wrap at this width).
COLUMNS = "120"
NOT_RUN = ("ui",)  # subcommands that serve and never return


@dataclass(frozen=True)
class Example:
    """One ``$ snapdp …`` line of a page: where it is, its words, the output the page shows."""

    page: str
    first: int  # index of its first line in the page
    last: int  # index of its last command line
    end: int  # index after its output
    argv: tuple[str, ...]
    shown: str

    @property
    def runs(self) -> bool:
        return not (self.argv and self.argv[0] in NOT_RUN)


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every page of docs/ that has a ``$ snapdp`` example."""
    found = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [p for p in found if examples(p, root)]


def examples(path: Path, root: Path = ROOT) -> list[Example]:
    """The examples of one page, in order."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out: list[Example] = []
    for start, stop in _console_blocks(lines):
        i = start
        while i < stop:
            if not lines[i].startswith("$ "):
                i += 1
                continue
            first, text = i, lines[i][2:]
            while text.endswith("\\") and i + 1 < stop:
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            last = i
            i += 1
            while i < stop and not lines[i].startswith("$ "):
                i += 1
            words = shlex.split(text)
            if words and words[0] == "snapdp":
                shown = "\n".join(lines[last + 1 : i])
                name = str(path.relative_to(root))
                out.append(Example(name, first, last, i, tuple(words[1:]), shown))
    return out


def _console_blocks(lines: list[str]) -> Iterator[tuple[int, int]]:
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            yield i + 1, j
            i = j
        i += 1


def run_page(path: Path, root: Path = ROOT) -> list[tuple[Example, str]]:
    """Each example of the page with what it prints now, run in a fresh copy of the docs (where
    processes fork, by one :class:`_Forks` server: its imports are paid once per page)."""
    found = examples(path, root)
    with tempfile.TemporaryDirectory(prefix="snapdp-docs-") as tmp:
        work = Path(tmp)
        shutil.copy(root / "README.md", work / "README.md")
        shutil.copytree(root / "docs", work / "docs", ignore=shutil.ignore_patterns("figures"))
        if not hasattr(os, "fork") or not any(e.runs for e in found):
            return [(e, run(e.argv, work, root) if e.runs else e.shown) for e in found]
        with _Forks(work, root) as forks:
            return [(e, forks.run(e.argv) if e.runs else e.shown) for e in found]


def _env(cwd: Path, root: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(root / "src"),
        "SNAPDP_SHARED_DATA": str(cwd / "no-shared-data"),
        "COLUMNS": COLUMNS,
        "NO_COLOR": "1",
        "TERM": "dumb",
    }
    env.pop("SNAPDP_TRACEBACK", None)
    return env


def _shown(text: str, cwd: Path) -> str:
    text = text.replace(f"{cwd}/", "")
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def run(argv: tuple[str, ...], cwd: Path, root: Path = ROOT) -> str:
    """What ``snapdp ARGV`` prints (stdout, then stderr), seeded, from ``cwd``."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--exec", *argv],
        cwd=cwd, env=_env(cwd, root), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    return _shown(done.stdout + done.stderr, cwd)


class _Forks:
    """One ``--serve`` process, started like :func:`run`'s (same folder, same environment), that
    imports the CLI once, then runs each example in a forked child of its own: what each prints
    is what :func:`run` returns, without a fresh interpreter's imports every time."""

    def __init__(self, cwd: Path, root: Path) -> None:
        self._cwd = cwd
        self._server = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            cwd=cwd, env=_env(cwd, root), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def __enter__(self) -> _Forks:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server.stdin is not None
        self._server.stdin.close()
        self._server.wait(timeout=600)

    def run(self, argv: tuple[str, ...]) -> str:
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write(json.dumps(list(argv)) + "\n")
        self._server.stdin.flush()
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError("the examples' server ended early")
        out, err, stopped = json.loads(line)
        if stopped:
            raise RuntimeError(f"an example ran past {_EXAMPLE_SECONDS} s: {' '.join(argv)}")
        return _shown(out + err, self._cwd)


def _serve() -> None:
    """For each JSON list of words on stdin, ``--exec`` them in a forked child (its stdout and
    stderr in files of their own) and answer one JSON line [stdout, stderr, stopped]."""
    sys.path.insert(0, str(ROOT / "src"))
    # imported once, for every child: the CLI and what most examples read data with
    import duckdb  # noqa: F401
    import numpy  # noqa: F401

    import snapdp.data  # noqa: F401
    from snapdp.cli import main  # noqa: F401

    answers = sys.stdout
    for line in sys.stdin:
        argv = json.loads(line)
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            answers.flush()
            pid = os.fork()
            if pid == 0:
                _child(argv, out.fileno(), err.fileno())
            stopped = not _waited(pid, _EXAMPLE_SECONDS)
            out.seek(0)
            err.seek(0)
            answers.write(json.dumps([out.read(), err.read(), stopped]) + "\n")
            answers.flush()


_EXAMPLE_SECONDS = 600  # as long as one example may run, as with a process per example


def _waited(pid: int, seconds: float) -> bool:
    """Wait for the child ``pid``; False (and the child killed) when it outlives ``seconds``."""
    deadline = time.monotonic() + seconds
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.monotonic() > deadline:  # the child leads its own group: its children too
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
        time.sleep(0.002)
    return True


def _child(argv: list[str], out: int, err: int) -> None:
    """Run ``--exec argv`` as a process of its own would, then end without returning."""
    import atexit
    import traceback

    os.setpgid(0, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the server's requests are not the child's
    sys.argv = [str(Path(__file__).resolve()), "--exec", *argv]
    code = 0
    try:
        _exec_seeded(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        if stop.code is not None and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


#: What differs between two seeded runs of the same example: the time of day.
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d[0-9.:+Z…-]*")
_RUN_FOLDER = re.compile(r"run-[0-9TZ:._-]+")


def comparable(text: str) -> str:
    """``text`` with the time of day masked (a ledger's entry times, a run's folder name)."""
    return _RUN_FOLDER.sub("run-TIME", _TIME.sub("TIME", text))


def _exec_seeded(argv: list[str]) -> None:
    """Run the CLI in this process with the seeded, not private, generator (docs only)."""
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np

    from snapdp import randomness
    from snapdp.cli import main

    generator = np.random.default_rng(SEED)

    class Seeded(randomness.SeededSource):
        """Stands in for the default CSPRNG: every "new" source reads the one seeded stream."""

        def __init__(self) -> None:
            super().__init__(generator)

    randomness.DRBGSource = Seeded  # type: ignore[assignment,misc]
    main.main(args=argv, prog_name="snapdp")


def rewrite(path: Path, results: list[tuple[Example, str]]) -> bool:
    """Put each example's new output under it; True when the page changed."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for example, now in sorted(results, key=lambda r: r[0].first, reverse=True):
        if comparable(now) == comparable(example.shown):
            continue  # keep the page's own time stamps: no churn
        lines[example.last + 1 : example.end] = now.split("\n") if now else []
    new = "\n".join(lines)
    if new == path.read_text(encoding="utf-8"):
        return False
    path.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report differences, write nothing")
    parser.add_argument("page", nargs="*", help="pages to do (default: all)")
    args = parser.parse_args(argv)
    todo = [ROOT / p for p in args.page] if args.page else pages()
    stale = 0
    for path in todo:
        results = run_page(path)
        for example, now in results:
            if comparable(now) != comparable(example.shown):
                stale += 1
                print(f"{example.page}:{example.first + 1}: $ snapdp {shlex.join(example.argv)}")
        if not args.check and rewrite(path, results):
            print(f"rewrote {path.relative_to(ROOT)}")
    if args.check and stale:
        print(f"{stale} example(s) print something else now: run tools/make_doc_outputs.py")
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--exec"]:
        _exec_seeded(sys.argv[2:])
    elif sys.argv[1:2] == ["--serve"]:
        _serve()
    else:
        sys.exit(main())
