# Sourced by the .ci/install-* scripts: install the Debian packages a step needs, or, where this machine
# cannot (not root, or no apt-get), say in one line what to do and fail.
# Usage: apt_install STEP "what is missing" PACKAGE...
apt_install() {
    local step=$1 missing=$2
    shift 2
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "$step: $missing: run \`sudo bash .ci/$step\` (Debian: apt-get install -y $*) or install the packages yourself" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
