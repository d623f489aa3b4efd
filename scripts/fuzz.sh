#!/usr/bin/env bash
# Runs every Go fuzz target of the module for the given time (default 5s).
set -euo pipefail
fuzztime=${1:-10000x}
cd "$(dirname "$0")/.."
status=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($fuzztime)"
    if ! go test -run='^$' -fuzz="^${t}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/sessionkit-fuzz.$$ 2>&1; then
      cat /tmp/sessionkit-fuzz.$$; status=1
    else
      grep -E 'elapsed|^ok' /tmp/sessionkit-fuzz.$$ | tail -1
    fi
  done
done
rm -f /tmp/sessionkit-fuzz.$$
exit $status
