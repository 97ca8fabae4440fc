#!/usr/bin/env bash
# Prints the key of the Kubernetes test tools' cache: a hash of every file
# that decides what scripts/build-kube.sh builds. internal/kubetest
# computes the same (kubetest.Key), so keep the two in step.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  for f in tools/kube/go.mod tools/kube/go.sum $(cd . && LC_ALL=C ls tools/kube/node/go.mod tools/kube/node/go.sum tools/kube/node/*.go | LC_ALL=C sort); do
    printf '%s\n' "$f"; cat "$f"
  done
} | sha256sum | cut -c1-16
