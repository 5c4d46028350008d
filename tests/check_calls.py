#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The interposed calls are listed once, in runtime/calls.def.  This check
fails, naming each missing or extra call, when

  - README.md's table of interposed calls (the rows after the line
    "The interposed calls:"; a row's first cell starts with a group's
    title, its second cell names the calls in backquotes),
  - man/libtdshim.7's list (the .It items of ".Ss Interposed calls"; an
    item starts with a group's title, its .Fn macros name the calls),
  - the functions libtdshim.so exports (given --shim and --nm)

disagree with the table.

usage: check_calls.py --source DIR [--shim libtdshim.so --nm nm]
"""
import argparse
import os
import re
import subprocess
import sys

# The names of the symbols the shim exports that are not calls.
NOT_CALLS = {"tdstat_region"}


def read_table(path):
    """The groups (id -> title, in order) and the calls (name -> group id)."""
    groups, calls, problems = {}, {}, []
    with open(path, encoding="utf-8") as table:
        for number, line in enumerate(table, 1):
            group = re.match(r"\s*TDSHIM_CALL_GROUP\((\w+),\s*\"([^\"]+)\"\)", line)
            wait = re.match(r"\s*TDSHIM_WAIT_CALL\((\w+),\s*(\w+),\s*(\w+),", line)
            other = re.match(r"\s*TDSHIM_CALL\((\w+),\s*(\w+),", line)
            if group:
                groups[group.group(1)] = group.group(2)
                continue
            if wait:
                name, group_id = wait.group(1), wait.group(3)
            elif other:
                name, group_id = other.group(1), other.group(2)
            else:
                continue
            if name in calls:
                problems.append(f"{path}:{number}: {name} is listed twice")
            if group_id not in groups:
                problems.append(f"{path}:{number}: {name}: group {group_id} is not declared above it")
            calls[name] = group_id
    if not calls:
        problems.append(f"{path}: no calls found (has its format changed?)")
    return groups, calls, problems


def group_of(text, groups):
    """The id of the group whose title `text` starts with (longest title first)."""
    text = text.strip().lower()
    for group_id, title in sorted(groups.items(), key=lambda item: -len(item[1])):
        if text.startswith(title.lower()):
            return group_id
    return None


def lines_after(path, marker):
    """The lines of a file after the line `marker`, or None without it."""
    with open(path, encoding="utf-8") as text:
        lines = text.read().splitlines()
    return lines[lines.index(marker) + 1:] if marker in lines else None


def readme_calls(path, groups):
    """README's table: {group id: [calls]}, and rows it could not place."""
    found, problems = {}, []
    lines = lines_after(path, "The interposed calls:")
    if lines is None:
        return found, [f"{path}: no line \"The interposed calls:\" before the table"]
    in_table = False
    for line in lines:
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("group", "") or set(cells[0]) <= set("-: "):
            continue
        group_id = group_of(cells[0], groups)
        if group_id is None:
            problems.append(f"{path}: row \"{cells[0]}\" starts with no group title of runtime/calls.def")
            continue
        found.setdefault(group_id, []).extend(re.findall(r"`([A-Za-z_]\w*)`", cells[1]))
    if not in_table:
        problems.append(f"{path}: no table after \"The interposed calls:\"")
    return found, problems


def man_calls(path, groups):
    """libtdshim(7)'s list: {group id: [calls]}, and items it could not place."""
    found, problems = {}, []
    lines = lines_after(path, ".Ss Interposed calls")
    if lines is None:
        return found, [f"{path}: no \".Ss Interposed calls\""]
    group_id = None
    for line in lines:
        if line.startswith(".El") or line.startswith(".Ss") or line.startswith(".Sh"):
            break
        if line.startswith(".It "):
            group_id = group_of(line[4:], groups)
            if group_id is None:
                problems.append(f"{path}: item \"{line[4:]}\" starts with no group title of runtime/calls.def")
            else:
                found.setdefault(group_id, [])
            continue
        call = re.match(r"\.Fn\s+(\w+)", line)
        if call and group_id is not None:
            found[group_id].append(call.group(1))
    return found, problems


def exported_functions(shim, nm):
    output = subprocess.run([nm, "-D", "--defined-only", shim], check=True, capture_output=True,
                            text=True).stdout
    names = set()
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "TtWiDdBbVv":
            names.add(fields[2].split("@")[0])
    return names - NOT_CALLS


def compare(where, documented, groups, calls):
    """Problems of one documented table against the table of calls."""
    problems = []
    seen = {}
    for group_id, names in documented.items():
        for name in names:
            if name in seen:
                problems.append(f"{where}: {name} is named twice")
            seen[name] = group_id
    for name, group_id in calls.items():
        if name not in seen:
            problems.append(f"{where}: missing {name} (runtime/calls.def lists it in \"{groups[group_id]}\")")
        elif seen[name] != group_id:
            problems.append(f"{where}: {name} is under \"{groups[seen[name]]}\", "
                            f"runtime/calls.def has it in \"{groups[group_id]}\"")
    for name in seen:
        if name not in calls:
            problems.append(f"{where}: extra {name} (not in runtime/calls.def)")
    for group_id, title in groups.items():
        if group_id not in documented:
            problems.append(f"{where}: no row or item for the group \"{title}\"")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the source tree")
    parser.add_argument("--shim", help="libtdshim.so, whose exports to compare")
    parser.add_argument("--nm", default="nm")
    args = parser.parse_args()

    table = os.path.join(args.source, "runtime", "calls.def")
    groups, calls, problems = read_table(table)
    for where, reader in (("README.md", readme_calls), (os.path.join("man", "libtdshim.7"), man_calls)):
        documented, unplaced = reader(os.path.join(args.source, where), groups)
        problems += unplaced + compare(where, documented, groups, calls)
    if args.shim:
        exported = exported_functions(args.shim, args.nm)
        problems += [f"{args.shim}: exports {name}, which runtime/calls.def does not list"
                     for name in sorted(exported - set(calls))]
        problems += [f"{args.shim}: does not export {name}, which runtime/calls.def lists"
                     for name in sorted(set(calls) - exported)]
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} disagreement(s) with runtime/calls.def")
        return 1
    print(f"{len(calls)} calls in {len(groups)} groups: README.md, libtdshim(7)"
          f"{' and the exports' if args.shim else ''} agree with runtime/calls.def")
    return 0


if __name__ == "__main__":
    sys.exit(main())
