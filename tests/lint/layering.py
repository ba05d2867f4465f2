#!/usr/bin/env python3
"""Every file of lib/ and kernels/ includes only its own folder and the folders below it.

The build enforces this for what it compiles (each lib/ folder is a target whose include path
holds only the folders it links), but a header is compiled only where it is included: a header
of format/ that includes model/ builds as long as only model/ and above include it. This reads
the layers from lib/CMakeLists.txt (each unmask_layer's USES), so the build stays the one
statement of the layering (docs/architecture.md), and checks every include of every file.
usage: layering.py REPO_ROOT   (exit 1 with a line per finding)"""
import os
import re
import sys

LAYER = re.compile(r"unmask_layer\((\w+)(.*?)\)", re.S)
USED = re.compile(r"\bunmask_(\w+)")
EXTRA = re.compile(r"target_link_libraries\(unmask_(\w+)\s+PUBLIC([^)]*)\)")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layers(root):
    text = open(os.path.join(root, "lib", "CMakeLists.txt")).read()
    uses = {}
    for name, body in LAYER.findall(text):
        listed = body.split("USES", 1)[1] if "USES" in body else ""
        uses[name] = set(USED.findall(listed))
    for name, listed in EXTRA.findall(text):
        if name in uses:
            uses[name] |= set(USED.findall(listed))
    uses["kernels_cpu"] = uses["kernels_cuda"] = {"core"}  # kernels/CMakeLists.txt: they link core only
    return uses


def below(uses, name):
    seen, todo = set(), [name]
    while todo:
        for used in uses.get(todo.pop(), ()):
            if used not in seen:
                seen.add(used)
                todo.append(used)
    return seen


def main(root):
    uses = layers(root)
    folders = {name for name in uses if not name.startswith("kernels")}
    findings = []
    places = [(os.path.join("lib", f), f) for f in sorted(folders)] + [("kernels", "kernels_cpu")]
    for place, layer in places:
        allowed = {layer} | below(uses, layer)
        for directory, _, files in os.walk(os.path.join(root, place)):
            for name in sorted(files):
                if not name.endswith((".hpp", ".cpp", ".cu", ".h", ".in")):
                    continue
                path = os.path.join(directory, name)
                for included in INCLUDE.findall(open(path, encoding="utf-8").read()):
                    relative = os.path.relpath(path, root)
                    if included.startswith(".."):
                        findings.append(f"{relative}: includes '{included}' by a relative path")
                        continue
                    top = included.split("/", 1)[0]
                    if "/" in included and top in folders and top not in allowed:
                        findings.append(f"{relative}: includes '{included}', but {layer} may use only "
                                        f"{', '.join(sorted(allowed))}")
    for finding in findings:
        print(finding)
    if not uses or "core" not in uses:
        print("lib/CMakeLists.txt: no unmask_layer(core ...) found")
        return 1
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
