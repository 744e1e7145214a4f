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
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "$@"
}

# apt_get ARGS...: apt-get, waiting while another apt-get or dpkg (unattended-upgrades, a
# second test run) holds the package lists' or dpkg's lock, for up to APT_LOCK_WAIT seconds
# (default 600); any other failure is reported at once. Its output is shown only on failure.
apt_get() {
  local waited=0 limit="${APT_LOCK_WAIT:-600}" out
  while ! out=$(apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1); do
    if ! grep -qE "Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock directory" <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    if [ "$waited" -ge "$limit" ]; then
      printf '%s\n' "$out" >&2
      echo "$(basename "$0"): the apt/dpkg lock was still held after ${limit} s" >&2
      return 1
    fi
    if [ "$waited" -eq 0 ]; then
      echo "$(basename "$0"): another apt-get or dpkg holds the package lock; waiting for it (up to ${limit} s)" >&2
    fi
    sleep 5
    waited=$((waited + 5))
  done
}
