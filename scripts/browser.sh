#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the browser tests (issue 13): Debian's `chromium` and
# `chromium-driver` packages, installed here, at install time, so that no test downloads a
# browser. Needs root (CI runs as root) or both already installed; says what to do otherwise.
# Usage: scripts/browser.sh STAMP   (touched once both run)
set -euo pipefail
stamp="$1"
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    echo "browser.sh: the browser tests need Debian's chromium and chromium-driver;" \
         "run: sudo apt-get install --no-install-recommends chromium chromium-driver" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt=(apt-get -o DPkg::Lock::Timeout=120 -y -q --no-install-recommends)
  "${apt[@]}" install chromium chromium-driver || { apt-get -o DPkg::Lock::Timeout=120 update -q \
    && "${apt[@]}" install chromium chromium-driver; }
fi
chromedriver --version
touch "$stamp"
