#!/usr/bin/env bash
# Builds what the Kubernetes tests run — kube-apiserver and
# kube-controller-manager v1.34.4 (tools/kube), the process node
# (tools/kube/node) and Debian's etcd — into
# $CHORUS_KUBE_CACHE/kube-<key>/ (default .tools/, git-ignored), where
# <key> is a hash of the tools' go.mod, go.sum and the node's sources, so
# a change to any of them builds anew and nothing else does. Sources come
# from the Go module proxy, etcd from apt. Cold (empty module and build
# caches): 22 minutes on two shared cores, 16 CPU-minutes; niced.
#
#   scripts/build-kube.sh          # builds what is missing, prints the directory
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

key=$(scripts/kube-key.sh)
cache=${CHORUS_KUBE_CACHE:-$root/.tools}
dest=$cache/kube-$key
bins=(etcd kube-apiserver kube-controller-manager kube-node)
complete() { for b in "${bins[@]}"; do [ -x "$dest/$b" ] || return 1; done; }
if complete; then
  echo "$dest"; exit 0
fi
mkdir -p "$dest"
echo "building the Kubernetes test tools into $dest (cold: tens of CPU-minutes)" >&2

v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.34.4 -X $v.gitMajor=1 -X $v.gitMinor=34 -X $v.gitTreeState=clean"
if [ ! -x "$dest/kube-apiserver" ] || [ ! -x "$dest/kube-controller-manager" ]; then
  (cd tools/kube && nice -n 19 go build -trimpath -ldflags "$ldflags" -o "$dest/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
fi
if [ ! -x "$dest/kube-node" ]; then
  (cd tools/kube/node && nice -n 19 go build -trimpath -ldflags "-s -w" -o "$dest/kube-node.tmp" . &&
    mv "$dest/kube-node.tmp" "$dest/kube-node")
fi
if [ ! -x "$dest/etcd" ]; then
  # etcd 3.4 from Debian, unpacked without installing it system-wide.
  work=$(mktemp -d "${TMPDIR:-/tmp}/chorus-etcd.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download etcd-server >/dev/null 2>&1 ||
    { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && apt-get download etcd-server >/dev/null 2>&1; }) ||
    { echo "apt-get download etcd-server failed: the Kubernetes tests need etcd" >&2; exit 1; }
  dpkg-deb -x "$work"/etcd-server_*.deb "$work/x"
  mv "$work/x/usr/bin/etcd" "$dest/etcd"
fi
complete || { echo "building the Kubernetes test tools left $dest incomplete" >&2; exit 1; }
# Older builds go: each is a few hundred MB.
for old in "$cache"/kube-*; do
  [ "$old" = "$dest" ] || [ ! -d "$old" ] || rm -rf "$old"
done
echo "$dest"
