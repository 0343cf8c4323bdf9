#!/usr/bin/env bash
# Installs the Debian packages voiced needs to build and test, only those missing.
# Usage: scripts/install-deps.sh [--test]   (--test adds the servers and data the test suite uses)
set -euo pipefail
pkgs=(espeak-ng libespeak-ng-dev gcc make ca-certificates)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(pocketsphinx-testdata sox postgresql redis-server chromium)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v npm >/dev/null || { echo "npm is required (the ONNX Runtime library is taken from the onnxruntime-node npm package)"; exit 1; }
