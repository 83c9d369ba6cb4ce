#!/usr/bin/env bash
# The builder's browser tests (tests/builder/test_browser*.py) drive Debian's headless Chromium through its
# chromedriver. Install both with apt where either is missing; otherwise say which ones are used.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "chromium: $(chromium --version 2>/dev/null | head -n 1); chromedriver: $(command -v chromedriver)"
  exit 0
fi

echo "chromium or chromedriver not found: installing chromium and chromium-driver with apt" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# another apt run (a parallel set-up) holds the lock for a while: wait for it rather than fail
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium chromium-driver >/dev/null
echo "chromium: $(chromium --version 2>/dev/null | head -n 1); chromedriver: $(command -v chromedriver)"
