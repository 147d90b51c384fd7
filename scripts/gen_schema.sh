#!/usr/bin/env bash
# Regenerate the FlatBuffers code for the .dtm schema (runtime/schema/dtm.fbs) with Debian's flatc 2.0.8:
#   runtime/schema/dtm_generated.h  (C++, header-only; matches /usr/include/flatbuffers 2.0.8)
#   dtorch/dtm/*.py                 (Python reader/builder, used by dtorch.export)
# The generated files are committed; tests/export/test_schema_generated.py checks they are current.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flatc --cpp --python -o "$tmp" runtime/schema/dtm.fbs
cp "$tmp/dtm_generated.h" runtime/schema/dtm_generated.h
rm -rf dtorch/dtm
cp -r "$tmp/dtorch/dtm" dtorch/dtm
printf '"""FlatBuffers code generated from runtime/schema/dtm.fbs by scripts/gen_schema.sh (do not edit)."""\n' \
    > dtorch/dtm/__init__.py
echo "regenerated runtime/schema/dtm_generated.h and dtorch/dtm/"
