#!/usr/bin/env bash
# Checks and unit-tests the Prometheus rules of deploy/prometheus:
#
#   scripts/promtool.sh    promtool check rules deploy/prometheus/*.rules.yml,
#                          then promtool test rules deploy/prometheus/*.test.yml
#
# On Debian or Ubuntu the script installs the `prometheus` package (which
# ships promtool) when promtool is missing, without starting its server.
# Elsewhere, put promtool (2.x or 3.x) on PATH or set PROMTOOL.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "promtool.sh: $*" >&2; }

install_debian() {
	if ! command -v apt-get >/dev/null 2>&1; then
		log "promtool is missing and this is not a Debian-like system: install Prometheus's promtool and put it on PATH, or set PROMTOOL"
		return 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	log "installing promtool from Debian's packages (prometheus; its server is not started)"
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		created_policy=1
	fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends prometheus >&2
	[ -n "$created_policy" ] && $sudo rm -f "$policy"
	return 0
}

promtool=${PROMTOOL:-}
if [ -z "$promtool" ]; then
	if ! command -v promtool >/dev/null 2>&1; then
		install_debian
	fi
	promtool=$(command -v promtool) || { log "promtool still missing"; exit 1; }
fi

cd "$root/deploy/prometheus"
"$promtool" check rules ./*.rules.yml
"$promtool" test rules ./*.test.yml
