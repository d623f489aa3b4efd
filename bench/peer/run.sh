#!/usr/bin/env bash
# Peer benchmark: sessionkit (bench/peer/goworker) against
# @mariozechner/pi-coding-agent (bench/peer/node) on the same fake
# OpenAI-compatible server, then a side-by-side table.
#
#   bench/peer/run.sh                 # N = 100 1000 10000, 5 reps
#   NS="10000" REPS=7 PORT=8931 bench/peer/run.sh
set -euo pipefail

cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
GO=${GO:-go}
NS=${NS:-"100 1000 10000"}
REPS=${REPS:-5}
PORT=${PORT:-8931}

bin=$(mktemp -d)
results=$(mktemp)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$bin" "$results"
}
trap cleanup EXIT

(cd "$root" && $GO build -o "$bin/" ./bench/peer/fakeserver ./bench/peer/goworker ./bench/peer/table)
(cd node && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; })

"$bin/fakeserver" --port "$PORT" &
server=$!
for _ in $(seq 50); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  sleep 0.1
done

for n in $NS; do
  echo "N=$n: sessionkit" >&2
  "$bin/goworker" --n "$n" --port "$PORT" --reps "$REPS" | tee -a "$results"
  echo "N=$n: pi-coding-agent" >&2
  node node/worker.mjs --n "$n" --port "$PORT" --reps "$REPS" | tee -a "$results"
done

echo
echo "## machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $($GO version | cut -d' ' -f3), node $(node --version)"
"$bin/table" < "$results"
