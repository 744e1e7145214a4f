# Sourced by the scripts that build a Go program once into ~/.cache/ragstream (otelcol.sh,
# kube_tools.sh): the override, the cache lookup, the scratch directory and the move into
# place. The caller sets `dir` (the cache directory), `bin` (the binary in it) and defines
# `die`.

# Print the override (a binary the user gave) or the cached binary and exit; else make the
# scratch directory `$tmp` next to the cache, removed on exit. $1: the override (may be
# empty), $2: the override's variable name, $3: what is built (for messages).
go_cache_lookup() {
  local override="$1" variable="$2" what="$3"
  if [ -n "$override" ]; then
    [ -x "$override" ] || die "$variable=$override is not an executable"
    echo "$override"
    exit 0
  fi
  if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
  fi
  command -v go >/dev/null || die "go not found (needed once to build $what)"
  mkdir -p "$(dirname "$dir")"
  # Built in a scratch dir next to the cache and renamed into place, so a cache dir that
  # exists always holds a complete binary (an interrupted build leaves nothing behind).
  tmp="$(mktemp -d "$(dirname "$dir")/build.tmp.XXXXXX")"
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
}

# Move `$tmp/out` (the finished build) into place as `$dir` and print `$bin`.
go_cache_settle() {
  if ! mv -T "$tmp/out" "$dir" 2>/dev/null; then
    # Another build won the race; its complete binary is as good as ours.
    [ -x "$bin" ] || die "could not move the build into $dir"
  fi
  echo "$bin"
}
