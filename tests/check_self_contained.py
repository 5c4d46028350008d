#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The repository explains itself: no source, comment, document or test
cites a file outside it.  The contract is docs/CONTRACT.md (cite its
sections as "docs/CONTRACT.md §N"); how things are built is in
docs/DESIGN.md, the reader's algorithm in docs/READER.md.  This check
names every line that cites something else (a specification or a style
guide kept beside the repository, a path of the machine it was written
on) and fails.

usage: check_self_contained.py SOURCE_DIR
"""
import os
import re
import sys

# Built from pieces, so that this file does not match itself.
CITATIONS = [
    (re.compile(r"\.\./" + "shared"), "a folder outside the repository"),
    (re.compile(r"\b" + "SPEC" + r"(\.md\b|\s*§)"), "a specification outside the repository: cite docs/CONTRACT.md"),
    (re.compile(r"\b" + "STYLE" + r"\.md\b"), "a style guide outside the repository"),
    (re.compile(r"(?<![\w.])/" + "work" + r"/"), "a path of the machine the code was written on"),
]

# Folders that are not the repository's own text.
SKIPPED_FOLDERS = {".git", "__pycache__", "Testing"}
# Files that are data, not text (the fuzzer's seeds are region images).
SKIPPED_PREFIXES = (os.path.join("tests", "fuzz", "corpus") + os.sep,)


def source_files(root):
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders
                            if name not in SKIPPED_FOLDERS and not name.startswith("build")
                            and not os.path.exists(os.path.join(folder, name, "CMakeCache.txt")))
        for name in sorted(files):
            if name == ".git":  # a worktree's link to its repository
                continue
            path = os.path.relpath(os.path.join(folder, name), root)
            if not path.startswith(SKIPPED_PREFIXES):
                yield path


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    root = sys.argv[1]
    this = os.path.relpath(os.path.abspath(__file__), os.path.abspath(root))
    problems = 0
    files = 0
    for path in source_files(root):
        if path == this:
            continue
        try:
            with open(os.path.join(root, path), encoding="utf-8") as text:
                lines = text.read().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        files += 1
        for number, line in enumerate(lines, 1):
            for pattern, what in CITATIONS:
                if pattern.search(line):
                    print(f"{path}:{number}: cites {what}: {line.strip()[:120]}")
                    problems += 1
    if problems:
        print(f"{problems} citation(s) of files outside the repository; the contract is docs/CONTRACT.md")
        return 1
    print(f"{files} files read: nothing cites a file outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
