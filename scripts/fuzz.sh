#!/usr/bin/env bash
# Runs every Go fuzz target of the module for the given -fuzztime (default
# 10000x: a count of executions, see the Makefile).
set -euo pipefail
fuzztime=${1:-10000x}
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($fuzztime)"
    if ! go test -run='^$' -fuzz="^${t}\$" -fuzztime="$fuzztime" "$pkg" >"$out" 2>&1; then
      cat "$out"; status=1
    else
      grep -E 'elapsed|^ok' "$out" | tail -1
    fi
  done
done
exit $status
