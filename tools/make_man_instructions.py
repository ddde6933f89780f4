#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small instruction set from text a Debian package ships: the one-line
descriptions of coreutils' commands, from the NAME section of their manual
pages ("ls \\- list directory contents").

Each command becomes one chat record, {"prompt": "What does ls do?",
"response": "ls: list directory contents."}, one JSON object a line: what
`zerodp train --data FILE.jsonl` fine-tunes on (docs/llama.md, "Supervised
fine-tuning"). The records come in the order of the sorted command names,
so the same coreutils gives the same file.

  /usr/bin/python3 tools/make_man_instructions.py OUT.jsonl [--package coreutils]
"""
import argparse
import gzip
import json
import re
import subprocess
import sys


def man_pages(package):
    listing = subprocess.run(["dpkg", "-L", package], check=True, capture_output=True, text=True).stdout
    return sorted(p for p in listing.splitlines() if re.fullmatch(r"/usr/share/man/man1/[^/]+\.1\.gz", p))


def name_line(path):
    """The NAME section's text, "ls \\- list directory contents", or None."""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r'\.SH\s+"?NAME"?\s*', line):
            body = []
            for follow in lines[i + 1:]:
                if follow.startswith(".SH"):
                    break
                if not follow.startswith("."):
                    body.append(follow)
            return " ".join(body).strip() or None
    return None


def record(text):
    """{"prompt", "response"} from "cmd1, cmd2 \\- what they do"."""
    match = re.fullmatch(r"(.+?)\s*\\-\s*(.+)", text)
    if match is None:
        return None
    command = match.group(1).split(",")[0].strip()
    what = match.group(2).strip().rstrip(".")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.+\[-]*", command):
        return None
    return {"prompt": f"What does {command} do?", "response": f"{command}: {what}."}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--package", default="coreutils")
    args = parser.parse_args()
    records = [r for r in (record(t) for t in map(name_line, man_pages(args.package)) if t) if r]
    if not records:
        sys.exit(f"{args.package} has no manual pages with a NAME line: install it with its documentation")
    with open(args.out, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(records)} records from {args.package}'s manual pages")


if __name__ == "__main__":
    main()
