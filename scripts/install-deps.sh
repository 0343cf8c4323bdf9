#!/usr/bin/env bash
# Installs the Debian packages voiced needs to build and test, only those missing.
# Usage: scripts/install-deps.sh [--test]   (--test adds the servers and data the test suite uses,
# and the container engine make image-test builds with)
set -euo pipefail
# libmp3lame-dev: mp3 speech (cgo); ffmpeg: AAC speech and m4a/webm/flac/Vorbis uploads (audio/codec);
# libwebrtc-audio-processing-dev, libspeexdsp-dev, g++: the echo canceller (audio/aec, a C++ shim);
# pkg-config: audio/opus's cgo asks it.
pkgs=(espeak-ng libespeak-ng-dev libopus-dev libopus0 libmp3lame-dev ffmpeg libwebrtc-audio-processing-dev libspeexdsp-dev g++ gcc make pkg-config ca-certificates)
if [[ "${1:-}" == "--test" ]]; then
  # bucklespring-data: real keyboard recordings for the issue 22 noise corpus (tests/rooms_corpus_test.go).
  pkgs+=(pocketsphinx-testdata sox bucklespring-data postgresql redis-server chromium)
  # make image-test: podman (runc: crun fails on some cgroup layouts), debootstrap for the bases.
  pkgs+=(podman runc debootstrap)
fi
# A fresh Debian 12 has no npm: the ONNX Runtime library comes from the onnxruntime-node npm package.
command -v npm >/dev/null || pkgs+=(npm)
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
# Debian 12's own golang is too old: voiced needs Go 1.26 (go.mod), from go.dev or a backport.
if ! command -v go >/dev/null; then
  echo "Go 1.26 or newer is required (go.mod says go 1.26): install it from https://go.dev/dl/ and put it on PATH" >&2
  exit 1
fi
gov=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
if [[ "$(printf '%s\n1.26\n' "${gov%%[!0-9.]*}" | sort -V | head -1)" != "1.26" ]]; then
  echo "Go $gov is too old: voiced needs Go 1.26 or newer (go.mod)" >&2
  exit 1
fi
