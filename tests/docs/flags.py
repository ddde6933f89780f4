#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every flag of every zerodp subcommand is documented.

Walks `zerodp --help` and each subcommand's own --help (CLI11's "Options:"
and "Subcommands:" sections), and fails for each flag that README.md and
docs/*.md never name (as `--flag` followed by anything but a letter, digit
or hyphen). The other direction, a documented flag the binary refuses, is
the transcripts' (transcripts.py): every example written as `$ command` runs.

  flags.py --build DIR
"""
import argparse
import glob
import os
import re
import subprocess
import sys

OPTION = re.compile(r"^\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)")
SUBCOMMAND = re.compile(r"^  ([a-z][a-z0-9-]*)\s{2,}")
ALWAYS = {"--help", "--version"}


def help_of(zerodp, path):
    done = subprocess.run([zerodp, *path, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return done.stdout.decode("utf-8", "replace").split("\n")


def walk(zerodp):
    """(subcommand path, flag) for every flag of every subcommand."""
    out = []
    queue = [[]]
    while queue:
        path = queue.pop(0)
        section = None
        for line in help_of(zerodp, path):
            if line.rstrip().endswith(":") and not line.startswith(" "):
                section = line.strip().rstrip(":").lower()
                continue
            if section == "options" and (m := OPTION.match(line)) and m.group(1) not in ALWAYS:
                out.append((path, m.group(1)))
            elif section == "subcommands" and (m := SUBCOMMAND.match(line)):
                queue.append(path + [m.group(1)])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="the build directory whose zerodp to ask")
    args = parser.parse_args()
    zerodp = os.path.join(args.build, "zerodp")
    source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    docs = [os.path.join(source_dir, "README.md")] + sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))
    text = "\n".join(open(d, encoding="utf-8").read() for d in docs)
    flags = walk(zerodp)
    passed = failed = 0
    for path, flag in flags:
        if re.search(re.escape(flag) + r"(?![a-z0-9-])", text):
            passed += 1
        else:
            failed += 1
            print(f"zerodp {' '.join(path)} {flag}: documented nowhere in README.md or docs/*.md: "
                  "say what it does where its subcommand's flags are")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not flags else 0


if __name__ == "__main__":
    sys.exit(main())
