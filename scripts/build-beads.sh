#!/usr/bin/env bash
# Builds the pinned bd (Beads) CLI and the dolt it was released with into
# the git-ignored .tools/beads-<version>/ (or $CHORUS_BEADS_TOOLS), for the
# tests that run Chorus against a real bd in server mode (a shared Dolt
# sql-server). Sources come from the Go module proxy. Slow: about 45
# minutes and 2 GB of module cache on two cores; run it once, niced.
#
#   scripts/build-beads.sh            # builds what is missing
#   nice scripts/build-beads.sh &     # while working on something else
set -euo pipefail
cd "$(dirname "$0")/.."

BD_VERSION=${BD_VERSION:-v1.0.5}
dest=${CHORUS_BEADS_TOOLS:-$PWD/.tools/beads-${BD_VERSION#v}}
mkdir -p "$dest"
if [ -x "$dest/bd" ] && [ -x "$dest/dolt" ]; then
  echo "bd and dolt already built in $dest"; exit 0
fi

# The module is read-only in the module cache; build from a copy so go may
# record what the dolt command needs beyond bd's own requirements.
src=$(go mod download -json "github.com/steveyegge/beads@$BD_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "go mod download of beads $BD_VERSION gave no directory" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/chorus-beads-build.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"
cd "$work"

# gms_pure_go: go-mysql-server's regexp without ICU, so no C library is
# needed beyond what cgo already links.
export CGO_ENABLED=1 GOFLAGS=-mod=mod
if [ ! -x "$dest/bd" ]; then
  echo "building bd $BD_VERSION into $dest (slow)"
  go build -tags gms_pure_go -o "$dest/bd.tmp" ./cmd/bd && mv "$dest/bd.tmp" "$dest/bd"
fi
if [ ! -x "$dest/dolt" ]; then
  echo "building dolt (the version bd $BD_VERSION requires) into $dest"
  go build -tags gms_pure_go -o "$dest/dolt.tmp" github.com/dolthub/dolt/go/cmd/dolt && mv "$dest/dolt.tmp" "$dest/dolt"
fi
"$dest/bd" version
"$dest/dolt" version
