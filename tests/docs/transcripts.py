#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the transcripts in Markdown files and compares their output (cram-style).

A transcript is a fenced code block whose first line starts with "$ ": each
"$ COMMAND" (continued on the next lines while a line ends with a backslash)
is followed by the output it prints, stdout and stderr together, as a user
sees it in a terminal. The rules (docs/transcripts.md says them for writers):

  - Every output line is compared with one line the command printed, trailing
    blanks ignored.
  - A line that is "..." alone stands for any number of lines, none included.
  - Inside a line, "..." stands for any text: the value that honestly varies
    (tokens/s, seconds, a CPU's name, a path on the user's machine).
  - "[exit N]" as a command's last output line says it exits with status N;
    without it the command must exit 0.
  - "<!-- transcript: slow -->" on the line before the fence marks a block too
    slow for every CI run: it runs only with --slow (ctest label slow,
    scripts/test-slow), never silently.

The commands of one file run in order, in one scratch directory per file, with
bash, so a later block sees the files an earlier one wrote and the variables
an earlier command set (M='...', export OPENBLAS_CORETYPE=...). The scratch
directory links the source tree's top-level entries (tests/, tools/, docs/,
...) and build/ to the build under test, so "build/zerodp" and
"tests/train/fixtures/..." mean what they mean in a checkout; build/ is
first on PATH, so "zerodp" is the same program.

  transcripts.py --build DIR [--slow] FILE...      run, diff, exit 1 on a mismatch
  transcripts.py --build DIR --update [--slow] FILE...
                                                   rewrite the outputs from the binary,
                                                   keeping "..." where it still matches
  transcripts.py --list FILE...                    the blocks and their commands
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
SLOW_MARK = "<!-- transcript: slow -->"
EXIT_LINE = re.compile(r"^\[exit (\d+)\]$")
ELLIPSIS = "..."


class Command:
    def __init__(self, text, first_line):
        self.text = text              # the command as bash gets it (continuations joined by newlines)
        self.first_line = first_line  # index in the file of its "$ " line
        self.expected = []            # the output lines the file shows
        self.output_start = 0         # index in the file of its first output line
        self.slow = False
        self.indent = ""              # the fence's indentation, which every line of the block has


def parse(lines):
    """The transcripts of a file: a list of Commands, in file order."""
    commands = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m.group(1), m.group(2)  # a block inside a list item is indented

        def text(k):
            return lines[k][len(indent):] if lines[k].startswith(indent) else lines[k].lstrip()

        slow = i > 0 and lines[i - 1].strip() == SLOW_MARK
        j = i + 1
        body = []
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(j)
            j += 1
        if body and text(body[0]).startswith("$ "):
            k = 0
            while k < len(body):
                line = text(body[k])
                if line.startswith("$ "):
                    start = body[k]
                    command = [line[2:]]
                    while command[-1].endswith("\\") and k + 1 < len(body):
                        k += 1
                        command.append(text(body[k]))
                    cmd = Command("\n".join(command), start)
                    cmd.slow = slow
                    cmd.indent = indent
                    cmd.output_start = body[k] + 1
                    commands.append(cmd)
                else:
                    commands[-1].expected.append(line)
                k += 1
        i = j + 1
    return commands


def line_matches(expected, actual):
    expected, actual = expected.rstrip(), actual.rstrip()
    if ELLIPSIS not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split(ELLIPSIS))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


# The costs align() weighs: a line "..." takes up a printed line almost for
# free, so a matching line is preferred to an absorbed one. A new line is
# one edit; a line that changed is one replacement (dearer the less alike
# the two are), so a new line between two kept ones is added rather than put
# in place of one of them; dropping a line costs two, so a changed line is
# replaced rather than dropped while a "..." takes up its new form. Any edit
# costs more than every absorption together: a cost below EDIT is a match.
ABSORB = 1
EDIT = 1_000_000


def align(expected, actual):
    """The cheapest way to turn expected into actual, as a list of steps:
    ("keep", e, a) for a line that matches, ("keep", "...", None) and
    ("keep", None, a) for a "..." and each line it takes up, ("replace", e, a)
    for a line that changed, ("drop", e, None) for an expected line that is not
    there and ("add", None, a) for a printed line the expectation lacks.
    Returns (matched, steps)."""
    m, n = len(expected), len(actual)
    inf = float("inf")
    cost = [[inf] * (n + 1) for _ in range(m + 1)]
    cost[m][n] = 0
    wild = [e.strip() == ELLIPSIS for e in expected]
    same = [[not wild[i] and line_matches(expected[i], actual[j]) for j in range(n)] for i in range(m)]

    def replace(i, j):  # a changed line: the more alike, the cheaper (which line changed into which)
        if same[i][j]:
            return 0
        alike = difflib.SequenceMatcher(None, expected[i], actual[j], autojunk=False).ratio()
        return EDIT + round(100 * (1 - alike))

    for i in range(m, -1, -1):
        for j in range(n, -1, -1):
            if i == m and j == n:
                continue
            best = inf
            if i < m and wild[i]:
                best = min(best, cost[i + 1][j])
                if j < n:
                    best = min(best, ABSORB + cost[i][j + 1])
            if i < m and j < n and not wild[i]:
                best = min(best, replace(i, j) + cost[i + 1][j + 1])
            if i < m:
                best = min(best, 2 * EDIT + cost[i + 1][j])
            if j < n:
                best = min(best, EDIT + cost[i][j + 1])
            cost[i][j] = best
    steps = []
    i = j = 0
    while i < m or j < n:
        here = cost[i][j]
        if i < m and wild[i] and cost[i + 1][j] == here:
            steps.append(("keep", expected[i], None))
            i += 1
        elif i < m and wild[i] and j < n and ABSORB + cost[i][j + 1] == here:
            steps.append(("keep", None, actual[j]))
            j += 1
        elif i < m and j < n and not wild[i] and same[i][j] and cost[i + 1][j + 1] == here:
            steps.append(("keep", expected[i], actual[j]))
            i += 1
            j += 1
        elif i < m and j < n and not wild[i] and replace(i, j) + cost[i + 1][j + 1] == here:
            steps.append(("replace", expected[i], actual[j]))
            i += 1
            j += 1
        elif i < m and 2 * EDIT + cost[i + 1][j] == here:
            steps.append(("drop", expected[i], None))
            i += 1
        else:
            steps.append(("add", None, actual[j]))
            j += 1
    return cost[0][0] < EDIT, steps


def updated(steps):
    """The expected lines after --update: kept lines (patterns and "...") stay,
    dropped ones go, changed and added ones come in as printed."""
    out = []
    for kind, e, a in steps:
        if kind == "keep" and e is not None:
            out.append(e)
        elif kind in ("add", "replace"):
            out.append(a.rstrip())
    return out


def scratch_for(source_dir, build_dir):
    scratch = tempfile.mkdtemp(prefix="zerodp-transcript-")
    for entry in os.listdir(source_dir):
        if entry.startswith(".") or entry.startswith("build"):
            continue
        os.symlink(os.path.join(source_dir, entry), os.path.join(scratch, entry))
    os.symlink(os.path.abspath(build_dir), os.path.join(scratch, "build"))
    return scratch


def run(command, cwd, timeout, state):
    """Runs one command as the file's shell would: the variables earlier
    commands set (exported or not: set -a) are in its environment."""
    # build/ first on PATH: the docs say "zerodp" as well as "build/zerodp".
    path = os.path.join(cwd, "build") + os.pathsep + os.environ.get("PATH", "")
    env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8", COLUMNS="80", PATH=path)
    started = time.monotonic()
    try:
        script = f"set -a\n. {state}\n{command}\n__status=$?\nexport -p > {state}\nexit $__status\n"
        done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        text, status = done.stdout.decode("utf-8", "replace"), done.returncode
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode("utf-8", "replace") + f"\n(timed out after {timeout} s)"
        status = 124
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines, status, time.monotonic() - started


def check_file(path, args, source_dir):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    commands = [c for c in parse(lines) if c.slow == args.slow]
    if not commands:
        return 0, 0
    scratch = scratch_for(source_dir, args.build)
    state = os.path.join(tempfile.mkdtemp(prefix="zerodp-transcript-env-"), "env")
    open(state, "w").close()
    passed = failed = 0
    rewrites = []  # (first line, past last line, new lines), in file order
    try:
        for cmd in commands:
            expected = list(cmd.expected)
            want_status = 0
            if expected and EXIT_LINE.match(expected[-1].strip()):
                want_status = int(EXIT_LINE.match(expected[-1].strip()).group(1))
                expected.pop()
            actual, status, seconds = run(cmd.text, scratch, args.timeout, state)
            matched, steps = align(expected, actual)
            where = f"{os.path.relpath(path, source_dir)}:{cmd.first_line + 1}"
            if matched and status == want_status:
                passed += 1
                print(f"ok   {where} ({seconds:.1f} s): $ {cmd.text.splitlines()[0][:90]}")
                continue
            failed += 1
            print(f"FAIL {where} ({seconds:.1f} s): $ {cmd.text}")
            if status != want_status:
                print(f"  exit status {status}, the transcript says {want_status}")
            for kind, e, a in steps:
                if kind in ("drop", "replace"):
                    print(f"  - {e}")
                if kind in ("add", "replace"):
                    print(f"  + {a}")
                elif e is not None and e.strip() != ELLIPSIS:
                    print(f"    {e}")
            if args.update:
                new = updated(steps)
                if status != 0:
                    new.append(f"[exit {status}]")
                rewrites.append((cmd.output_start, cmd.output_start + len(cmd.expected),
                                 [cmd.indent + line if line else line for line in new]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(os.path.dirname(state), ignore_errors=True)
    if args.update and rewrites:
        for start, end, new in reversed(rewrites):
            lines[start:end] = new
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        print(f"rewrote {len(rewrites)} outputs in {path}")
    return passed, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--build", help="the build directory whose zerodp the transcripts run")
    parser.add_argument("--slow", action="store_true", help="run the blocks marked slow (only those)")
    parser.add_argument("--update", action="store_true", help="rewrite the outputs that differ")
    parser.add_argument("--list", action="store_true", help="list the commands, run nothing")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a command may run (600)")
    args = parser.parse_args()
    source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if args.list:
        for path in args.files:
            with open(path, encoding="utf-8") as f:
                for cmd in parse(f.read().split("\n")):
                    mark = " (slow)" if cmd.slow else ""
                    print(f"{path}:{cmd.first_line + 1}{mark}: $ {cmd.text.splitlines()[0]}")
        return 0
    if not args.build or not os.path.isfile(os.path.join(args.build, "zerodp")):
        print(f"transcripts: --build {args.build} has no zerodp program: give the build directory", file=sys.stderr)
        return 2
    passed = failed = 0
    for path in args.files:
        p, f = check_file(path, args, source_dir)
        passed += p
        failed += f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
