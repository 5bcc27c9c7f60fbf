#!/usr/bin/env bash
# Builds Ollama from the Go module proxy for budge's integration test, once
# per machine: the binary is cached under $BUDGE_CI_CACHE (default
# $HOME/.cache/budge-ci). Prints the path of the binary on its last line.
# Ollama's module zip lacks vendored C headers: nlohmann-json and stb come
# from Debian, miniaudio.h from the malgo module.
set -euo pipefail
version=v0.17.4
cache=${BUDGE_CI_CACHE:-$HOME/.cache/budge-ci}
bin=$cache/ollama-$version/ollama
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"; exit 0
fi
mkdir -p "$cache/ollama-$version" "$cache/include/miniaudio"
if ! dpkg -s nlohmann-json3-dev libstb-dev >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo=sudo; fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nlohmann-json3-dev libstb-dev >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A scratch module keeps the project's go.mod and go.sum untouched.
(cd "$tmp" && go mod init budge-ci-ollama >/dev/null 2>&1 \
  && GOFLAGS=-mod=mod go mod download -json github.com/gen2brain/malgo@v0.11.24 > malgo.json)
malgo=$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' "$tmp/malgo.json" | head -1)
cp "$malgo/miniaudio.h" "$cache/include/miniaudio/miniaudio.h"
echo "building ollama $version (a few minutes, once per machine)" >&2
(cd "$tmp" && CGO_CPPFLAGS="-I$cache/include" GOFLAGS=-mod=mod GOBIN="$cache/ollama-$version" \
  go install "github.com/ollama/ollama@$version" >&2)
"$bin" --version >&2 || true
echo "$bin"
