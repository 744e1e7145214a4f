# Sourced by the scripts that install a Debian package the tests need when it is missing
# (scripts/prometheus.sh, scripts/grafana_schema.sh).

# apt_install PACKAGE...: installs the packages with apt-get when this is root; else says
# what to run, and exits 1.
apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$* not installed and this is not root: run 'sudo apt-get install $*'" >&2
    exit 1
  fi
  echo "$(basename "$0"): installing Debian's $* with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
