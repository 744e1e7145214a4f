#!/usr/bin/env bash
# Makes sure a real Prometheus server and promtool are on this machine (Debian's package),
# for the end-to-end tests. Idempotent: does nothing when both are already installed.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
source "$(dirname "$0")/_apt.sh"
apt_install prometheus  # about 20 MB
# The package starts a system service where systemd runs; the tests start their own server.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus || true
fi
command -v prometheus >/dev/null && command -v promtool >/dev/null
