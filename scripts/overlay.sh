#!/usr/bin/env bash
# Writes the Go build overlay of third_party/ (third_party/README.md) to $1 and prints
# -overlay=$1 for GOFLAGS; prints nothing when go.mod no longer requires the version a patched
# file was written for (the module's own file is then built, unpatched: only slower to start).
set -euo pipefail
out=${1:?usage: scripts/overlay.sh OUT.json}
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
entries=()
for dir in "$root"/third_party/*-v*/; do
  name=$(basename "$dir")                 # iceberg-go-v0.7.0
  version=${name##*-}                     # v0.7.0
  module=$(sed -n "s|^// module: ||p" "$root/third_party/README.md" | grep "/${name%-*}\$" || true)
  [[ -n $module ]] || { echo "scripts/overlay.sh: third_party/README.md names no module for $name" >&2; exit 1; }
  have=$(GOFLAGS= $GO list -m -f '{{.Version}}' "$module")
  if [[ $have != "$version" ]]; then
    echo "scripts/overlay.sh: go.mod requires $module $have, third_party/$name patches $version: not applied (port the patch)" >&2
    continue
  fi
  GOFLAGS= $GO mod download "$module@$version"
  moddir=$(GOFLAGS= $GO list -m -f '{{.Dir}}' "$module")
  while IFS= read -r f; do
    rel=${f#"$dir"}
    entries+=("\"$moddir/$rel\": \"$f\"")
  done < <(find "$dir" -name '*.go' | sort)
done
((${#entries[@]})) || exit 0
{ printf '{"Replace": {'; (IFS=,; printf '%s' "${entries[*]}"); printf '}}\n'; } > "$out"
echo "-overlay=$out"
