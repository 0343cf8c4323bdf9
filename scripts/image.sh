#!/usr/bin/env bash
# Builds the voiced image from the Dockerfile (make image): with docker when its daemon answers,
# else podman (runc as the runtime when installed; ulimits lowered to this machine's hard limits,
# podman's defaults are above them on many hosts).
# The bases are the Dockerfile's defaults when a registry gives them; when none answers they are
# made here: a Debian 12 rootfs by debootstrap (imported as the runtime base) and, on it, the
# build tools and this machine's Go toolchain (the build base). Both are cached as tarballs under
# $IMAGE_CACHE (var/image, git-ignored) and rebuilt when missing.
# Usage: scripts/image.sh build      builds $IMAGE (voiced:dev)
#        scripts/image.sh env        prints the exports make image-test uses (engine, run flags)
# Settings: IMAGE, IMAGE_ENGINE ("docker", "podman --runtime runc" …), IMAGE_BASES=local (never
# pull), DEBIAN_MIRROR (http://deb.debian.org/debian), IMAGE_CACHE.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-voiced:dev}
cache=${IMAGE_CACHE:-var/image}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo

if [[ -n ${IMAGE_ENGINE:-} ]]; then
  read -ra eng <<<"$IMAGE_ENGINE"
elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  eng=(docker)
elif command -v podman >/dev/null; then
  eng=(podman)
  [[ -n $sudo ]] && eng=(sudo podman)
  command -v runc >/dev/null && eng+=(--runtime runc)
else
  echo "no container engine: install docker, or podman and runc (scripts/install-deps.sh --test)" >&2
  exit 1
fi
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[[ $nofile == unlimited ]] && nofile=1048576
# nproc above pid_max is refused here ("error setting rlimit type 6"), though under the hard limit.
pidmax=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
[[ $nproc == unlimited || $nproc -gt $pidmax ]] && nproc=$pidmax
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

if [[ ${1:-} == env ]]; then
  echo "export VOICED_IMAGE='$IMAGE' VOICED_IMAGE_ENGINE='${eng[*]}' VOICED_IMAGE_RUN_ARGS='${limits[*]}'"
  exit 0
fi
[[ ${1:-} == build ]] || { echo "usage: scripts/image.sh build|env" >&2; exit 2; }

# qualified: the name as a registry knows it (podman matches a short name against any local
# repository ending in it: golang:1.26.8-bookworm would find localhost/voiced-base/golang:…).
qualified() {
  local first=${1%%/*}
  if [[ $1 != */* ]]; then echo "docker.io/library/$1"
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then echo "docker.io/$1"
  else echo "$1"; fi
}
have() { "${eng[@]}" image inspect "$(qualified "$1")" >/dev/null 2>&1; }
# pulled: the image is here or a registry gives it.
pulled() {
  [[ ${IMAGE_BASES:-} == local ]] && return 1
  have "$1" || timeout 600 "${eng[@]}" pull -q "$(qualified "$1")" >/dev/null 2>&1
}
arg() { sed -n "s/^ARG $1=//p" Dockerfile; }

go_image=$(arg GO_IMAGE); runtime_base=$(arg RUNTIME_BASE)
mkdir -p "$cache/bases"

# The runtime base: Debian 12 minbase, sources as the official image has them.
local_runtime=localhost/voiced-base/debian:bookworm
runtime_base_made() {
  local tar=$cache/bases/debian-bookworm-rootfs.tar
  if [[ ! -s $tar ]]; then
    command -v debootstrap >/dev/null || { echo "no registry gave $runtime_base and debootstrap is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
    local root; root=$(mktemp -d)
    echo "debootstrap: Debian 12 from $mirror"
    $sudo debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      { tail -20 "$cache/debootstrap.log" >&2; $sudo rm -rf "$root"; exit 1; }
    $sudo rm -f "$root/etc/apt/sources.list"
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" |
      $sudo tee "$root/etc/apt/sources.list.d/debian.sources" >/dev/null
    $sudo find "$root/var/cache/apt" "$root/var/lib/apt/lists" -type f -delete
    $sudo tar -C "$root" -cf "$tar.part" . && $sudo mv "$tar.part" "$tar"
    $sudo rm -rf "$root"
  fi
  have $local_runtime || "${eng[@]}" import -q --change 'CMD ["bash"]' "$tar" $local_runtime >/dev/null
}

# The build base: the runtime base with what golang:*-bookworm has that the build uses (gcc, make,
# git, ca-certificates) and this machine's Go toolchain, set up as that image sets it.
gover=$(go env GOVERSION); gover=${gover#go}
local_go=localhost/voiced-base/golang:$gover-bookworm
go_base_made() {
  local tar=$cache/bases/golang-$gover-bookworm.image.tar
  have $local_go && return
  if [[ -s $tar ]]; then "${eng[@]}" load -q -i "$tar" >/dev/null; return; fi
  runtime_base_made
  local ctx=$cache/gobase
  rm -rf "$ctx"; mkdir -p "$ctx"
  tar -C "$(go env GOROOT)" --exclude=./test --exclude=./pkg/obj --exclude=./.git -cf "$ctx/go.tar" .
  # This machine's own CAs (a TLS-inspecting egress proxy's) go along: the build stage fetches Go
  # modules and the npm package through the same network.
  mkdir -p "$ctx/local-ca"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/local-ca/" 2>/dev/null || true
  cat >"$ctx/Dockerfile" <<EOF
FROM $local_runtime
COPY local-ca/ /usr/local/share/ca-certificates/
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates gcc libc6-dev make git \\
 && rm -rf /var/lib/apt/lists/*
ADD go.tar /usr/local/go/
ENV GOLANG_VERSION=$gover GOTOOLCHAIN=local GOPATH=/go NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \\
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
EOF
  "${eng[@]}" build -q --network host "${limits[@]}" -t "$local_go" "$ctx" >/dev/null
  rm -rf "$ctx"
  "${eng[@]}" save -o "$tar.part" "$local_go" && mv "$tar.part" "$tar"
}

start=$(date +%s)
if ! pulled "$runtime_base"; then
  echo "$runtime_base: no registry gives it; using $local_runtime (debootstrap, cached in $cache/bases)"
  runtime_base_made; runtime_base=$local_runtime
fi
if ! pulled "$go_image"; then
  echo "$go_image: no registry gives it; using $local_go (Go $gover from this machine, cached in $cache/bases)"
  go_base_made; go_image=$local_go
fi
bases=$(date +%s)
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
"${eng[@]}" build --network host "${limits[@]}" --build-arg "GO_IMAGE=$go_image" \
  --build-arg "RUNTIME_BASE=$runtime_base" --build-arg "VERSION=$version" -t "$IMAGE" .
end=$(date +%s)
size=$("${eng[@]}" image inspect -f '{{.Size}}' "$IMAGE")
echo "image $IMAGE: $((size / 1000000)) MB; bases $((bases - start)) s, build $((end - bases)) s (${eng[*]})"
