#!/usr/bin/env bash
# Places the ONNX Runtime CPU library (from the onnxruntime-node npm package) in DIR, sha256-checked.
# Usage: scripts/fetch-onnxruntime.sh DIR
set -euo pipefail
dir=$1
version=1.30.0
want=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
lib=package/bin/napi-v6/linux/x64/libonnxruntime.so.1
if [[ -f "$dir/libonnxruntime.so.1" ]] && echo "$want  $dir/libonnxruntime.so.1" | sha256sum -c --status; then
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "onnxruntime-node@$version" >/dev/null && tar xzf "onnxruntime-node-$version.tgz" "$lib")
got=$(sha256sum "$tmp/$lib" | cut -d' ' -f1)
if [[ "$got" != "$want" ]]; then
  echo "onnxruntime-node@$version: libonnxruntime.so.1 has sha256 $got, want $want; refusing it" >&2
  exit 1
fi
mkdir -p "$dir"
install -m 0644 "$tmp/$lib" "$dir/libonnxruntime.so.1"
ln -sf libonnxruntime.so.1 "$dir/libonnxruntime.so"
echo "ONNX Runtime $version placed in $dir"
