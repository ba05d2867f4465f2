#!/usr/bin/env python3
"""Every source file includes the standard headers of what it uses, itself or through the
project's own headers, never only through another standard or third-party header.

GCC 13's libstdc++ stopped including <cstdint>, <string>, <system_error>, <cstdio> and
<cstdlib> from other headers (and which of them bring in <algorithm> changes too), so code that compiles here with GCC 12 can fail on a newer
compiler (the GPU machines' image has one). This finds such uses without a newer compiler.
usage: std_includes.py REPO_ROOT   (exit 1 with a line per finding)"""
import os
import re
import sys

SOURCES = ("lib", "kernels", "include", "capi", "tests", "bench", "examples")
# Where a quoted include may be found, besides the including file's folder.
INCLUDE_DIRS = ("lib", "kernels", "include", "capi", "tests/unit", "examples/common")
SKIP = re.compile(r"^(build(-[\w-]+)?|node_modules|target|\.debs)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# Strings and comments, in one pass so that neither hides the other.
LITERAL_OR_COMMENT = re.compile(r'"(\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)
NOT_AFTER = r"(?<![\w:.>])"  # a name of its own, not a member or another namespace's

# What a use needs: any one of these headers (the first is the one to add), included by the file
# or by a project header it includes.
NEEDS = [
    (re.compile(r"\b(std::)?u?int(8|16|32|64)_t\b|\bu?intptr_t\b|\b(U?INT(8|16|32|64)|SIZE)_(MAX|MIN)\b"),
     ("cstdint", "stdint.h", "cinttypes", "inttypes.h")),
    (re.compile(r"\bstd::(string|to_string|stoi|stol|stoll|stoul|stoull|stod|stof)\b"), ("string",)),
    (re.compile(r"\bstd::(error_code|system_error|error_category|generic_category|system_category)\b"),
     ("system_error",)),
    (re.compile(NOT_AFTER + r"(std::)?(printf|fprintf|snprintf|fopen|fclose|fputs|puts|fgets|fread|fwrite|"
                r"fflush|perror|sscanf)\s*\(|" + NOT_AFTER + r"(std::)?FILE\s*\*"), ("cstdio", "stdio.h")),
    (re.compile(r"\bstd::(strtol|strtoul|strtoll|strtoull|strtod|malloc|free|abort|getenv|exit|atoi)\s*\("),
     ("cstdlib", "stdlib.h")),
    (re.compile(r"\bstd::(ranges::)?(all_of|any_of|none_of|find_if|find_if_not|count_if|sort|stable_sort|"
                r"partial_sort|nth_element|min_element|max_element|minmax_element|remove_if|unique|reverse|"
                r"lower_bound|upper_bound|equal_range|binary_search|transform|copy_if|clamp|shuffle)\s*\("),
     ("algorithm",)),
]


def main(root):
    closures = {}

    def resolve(name, folder):
        for d in (folder,) + tuple(os.path.join(root, x) for x in INCLUDE_DIRS):
            path = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(path):
                return path
        return None

    def standard_headers(path, visiting=()):
        """The standard headers `path` includes, itself or through project headers."""
        if path in closures:
            return closures[path]
        if path in visiting:
            return set()
        found = set()
        with open(path, errors="replace") as f:
            text = f.read()
        for kind, name in INCLUDE.findall(text):
            project = resolve(name, os.path.dirname(path)) if kind == '"' else None
            if project:
                found |= standard_headers(project, visiting + (path,))
            elif kind == "<":
                found.add(name)
        closures[path] = found
        return found

    findings = []
    for top in SOURCES:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if not SKIP.search(d)]
            for name in sorted(files):
                if not re.search(r"\.(c|cc|cpp|h|hpp|cu|cuh)$", name):
                    continue
                path = os.path.join(folder, name)
                with open(path, errors="replace") as f:
                    # a string becomes "", a comment its line breaks (so line numbers stay)
                    code = LITERAL_OR_COMMENT.sub(
                        lambda m: '""' if m.group(0).startswith('"') else "\n" * m.group(0).count("\n"), f.read())
                have = standard_headers(path)
                for use, headers in NEEDS:
                    m = use.search(code)
                    if m and not have & set(headers):
                        line = code[: m.start()].count("\n") + 1
                        findings.append(f"{os.path.relpath(path, root)}:{line}: uses '{m.group(0).strip()}' "
                                        f"without <{headers[0]}>")
    for finding in findings:
        print(finding)
    print(f"{len(findings)} file(s) rely on another header's includes" if findings else "every use has its header")
    return 1 if findings else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
