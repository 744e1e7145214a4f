#!/usr/bin/env bash
# What the image test (tests/deploy/test_image.py) needs to build and run the Dockerfile
# without a container registry: Debian's podman, buildah, runc and mmdebstrap, and the
# Dockerfile's base image made from Debian's archive.
#
#   scripts/image.sh fetch    install the packages when missing (as root, with apt-get),
#                             build the base once and print the path of its tarball
#
# The Dockerfile starts FROM docker.io/library/debian:<version>-slim. No registry serves it
# here, so the base is rebuilt: mmdebstrap's minbase variant of bookworm from the machine's
# own apt sources, merged /usr without the usrmerge package, without documentation, manual
# pages and translations (copyright files kept), with the apt settings of Debian's slim
# image (no package cache, no translations). The build fails unless the archive is at the
# Dockerfile's point release: the image tested is built on the release the image names.
#
# Environment:
#   XDG_CACHE_HOME   cache root (default ~/.cache); the tarball goes to
#                    $XDG_CACHE_HOME/ragstream/image/debian-<version>-slim.tar
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "image.sh: $*" >&2; exit 1; }

# The Debian point release of the Dockerfile's FROM lines (one release for every stage).
debian_version() {
  local versions
  versions="$(sed -n 's|^FROM docker\.io/library/debian:\([0-9.]*\)-slim\b.*|\1|p' "$root/Dockerfile" | sort -u)"
  [ -n "$versions" ] || die "the Dockerfile has no 'FROM docker.io/library/debian:<version>-slim'"
  [ "$(echo "$versions" | wc -l)" -eq 1 ] || die "the Dockerfile's stages name several releases: $versions"
  echo "$versions"
}

install_tools() {
  local missing=() tool
  for tool in podman buildah runc mmdebstrap; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ "${#missing[@]}" -eq 0 ] && return
  source "$root/scripts/_apt.sh"
  apt_install "${missing[@]}"  # 15 packages, 27.5 MB to download, 117 MB installed
}

# apt settings of Debian's slim images (debuerreotype's): packages are deleted once
# installed, no translations are fetched, indexes stay compressed.
write_apt_settings() {
  local etc="$1"
  cat >"$etc/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' >"$etc/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' >"$etc/docker-gzip-indexes"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$etc/docker-autoremove-suggests"
}

# Builds into a scratch file next to the cache and renames it into place, so a cached
# tarball is always complete.
cmd_fetch() {
  local version cache tar tmp apt_dir sources built
  version="$(debian_version)"
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/image"
  tar="$cache/debian-$version-slim.tar"
  install_tools
  if [ -f "$tar" ]; then
    echo "$tar"
    return
  fi
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || sources=/etc/apt/sources.list
  [ -f "$sources" ] || die "no apt sources found (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list)"
  mkdir -p "$cache"
  tmp="$(mktemp "$cache/debian.tmp.XXXXXX.tar")"
  apt_dir="$(mktemp -d)"
  trap 'rm -rf "$tmp" "$tmp.log" "$apt_dir"' EXIT
  write_apt_settings "$apt_dir"
  echo "image.sh: building Debian $version's slim base with mmdebstrap from $sources" >&2
  if ! mmdebstrap --variant=minbase --format=tar --mode=root \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --customize-hook="copy-in $apt_dir/docker-clean $apt_dir/docker-no-languages $apt_dir/docker-gzip-indexes $apt_dir/docker-autoremove-suggests /etc/apt/apt.conf.d" \
      --customize-hook='rm -f "$1/var/cache/apt/pkgcache.bin" "$1/var/cache/apt/srcpkgcache.bin"' \
      bookworm "$tmp" "$sources" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp.log" >&2
    die "mmdebstrap could not build Debian bookworm"
  fi
  built="$(tar -xOf "$tmp" ./etc/debian_version)"
  [ "$built" = "$version" ] || die "Debian's archive is at $built, the Dockerfile names $version: move its FROM lines to docker.io/library/debian:$built-slim"
  mv "$tmp" "$tar"
  rm -rf "$tmp.log" "$apt_dir"
  trap - EXIT
  echo "$tar"
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  *) die "usage: scripts/image.sh fetch" ;;
esac
