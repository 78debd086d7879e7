#!/usr/bin/env bash
# Lints the OpenAPI document the app serves at /openapi.json with @redocly/cli (rules in redocly.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npx tsx scripts/openapi-dump.ts "$out/openapi.json"
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx redocly lint --config redocly.yaml "$out/openapi.json"
