#!/usr/bin/env bash
# Unpacks promtool (Prometheus' own parser and linter of the metrics text; tests/cli/serve.sh and serve_tp.sh
# check /metrics with it) from Debian's prometheus package into .cache/prometheus/, without installing the
# package: installing it would also create a service that, under systemd, starts a Prometheus server.
# Idempotent: does nothing when .cache/prometheus/usr/bin/promtool is there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/prometheus/usr/bin/promtool
[ -x "$dest" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"  # apt-get download as root fetches as user _apt, which must be able to write here
download() { (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1); }
if ! download; then
  # No package lists (an image that deleted them): fetch them once, as scripts/deps.sh does.
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq && download || { echo "llmbench: error: apt-get download prometheus failed" >&2; exit 1; }
fi
echo "llmbench: unpacking promtool from $(ls "$tmp"/prometheus_*.deb | xargs -n1 basename) into .cache/prometheus" >&2
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
install -D -m 755 "$tmp/root/usr/bin/promtool" "$dest"
