#!/usr/bin/env bash
# Validates deploy/'s files with what this machine has: the Kubernetes manifests against the API's
# schemas and types (kubernetes/validate.mjs, npm packages cached in WORK_DIR), and the systemd unit
# with `systemd-analyze verify` (its ExecStart pointed at the built server; any warning fails).
# The Dockerfile is not built here (no container daemon in CI). usage: check_deploy_files.sh WORK_DIR SERVER
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$1 server=$2
mkdir -p "$work"
if ! cmp -s "$here/kubernetes/package.json" "$work/.installed"; then
  cp "$here/kubernetes/package.json" "$work/"
  (cd "$work" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
  cp "$here/kubernetes/package.json" "$work/.installed"
fi
cp "$here/kubernetes/validate.mjs" "$work/"
(cd "$work" && node validate.mjs "$root"/deploy/kubernetes/*.yaml)

unit=$work/unmask-server.service
sed "s#^ExecStart=/usr/local/bin/unmask-server#ExecStart=$server#" "$root/deploy/systemd/unmask-server.service" >"$unit"
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "systemd-analyze verify warned:"; echo "$out"; exit 1; }
echo "systemd unit verified"
