#!/usr/bin/env python3
"""Every doctest case that CTest discovers has a name without ';'. doctest_discover_tests passes
names through CMake lists, which split at ';': a case named "a; b" becomes a CTest test "a" whose
filter matches no case, so it runs nothing and passes.
usage: test_names.py REPO_ROOT   (exit 1 with a line per finding)"""
import os
import re
import sys

CASE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')
DISCOVERED = ["tests/unit", "tests/cuda_on_host"]  # tests/CMakeLists.txt: doctest_discover_tests


def main(root):
    findings = []
    for folder in DISCOVERED:
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if not name.endswith(".cpp"):
                continue
            path = os.path.join(folder, name)
            for case in CASE.findall(open(os.path.join(root, path), encoding="utf-8").read()):
                if ";" in case:
                    findings.append('%s: TEST_CASE("%s") has a ";", which CTest would cut there' % (path, case))
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
