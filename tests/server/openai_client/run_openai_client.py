#!/usr/bin/env python3
"""Installs OpenAI's Node client (package.json, cached in WORK_DIR), starts unmask-server with the
bundled model and runs tools.cjs against it. usage: UNMASK_SERVER=BIN run_openai_client.py WORK_DIR"""
import filecmp
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from server_process import ServerProcess  # noqa: E402


def main(work):
    os.makedirs(work, exist_ok=True)
    installed = os.path.join(work, ".installed")
    if not (os.path.exists(installed) and filecmp.cmp(installed, os.path.join(HERE, "package.json"), shallow=False)):
        shutil.copy(os.path.join(HERE, "package.json"), work)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"], cwd=work, check=True)
        shutil.copy(os.path.join(HERE, "package.json"), installed)
    shutil.copy(os.path.join(HERE, "tools.cjs"), work)
    server = ServerProcess()
    try:
        result = subprocess.run(["node", "tools.cjs", "http://127.0.0.1:%d/v1" % server.port], cwd=work, timeout=600)
    finally:
        server.stop()
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
