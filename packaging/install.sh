#!/usr/bin/env bash
# `make install`, `make uninstall`, and the tree `make deb` packs:
#   bash packaging/install.sh install|uninstall
# Settings (environment, as make passes them):
#   PREFIX (/usr/local), DESTDIR (empty), SYSCONFDIR (/etc),
#   BINARY: the harmonia-play to install (empty: the release build, made by
#     benchmarks/release-build.sh when missing or stale),
#   ZSH_COMPLETIONS (PREFIX/share/zsh/site-functions; Debian's zsh reads
#     /usr/share/zsh/vendor-completions), SYSTEM_UNITS (PREFIX/lib/systemd/system),
#   USER_UNITS (PREFIX/lib/systemd/user), GZIP_MAN (0; the package's pages are gzipped).
# What it installs is generated from the program itself: the manual pages by
# swift-argument-parser's generate-manual (the tool its manual plugin runs),
# made clean for groff by packaging/manpages.py; the bash, zsh and fish
# completions by `harmonia-play --generate-completion-script`; the commented
# config file by packaging/config_template.py from serve's parser. The units
# are packaging/systemd/*/harmonia-play.service.in with the paths written in.
#
# uninstall removes exactly what install writes: the binary, the pages
# (harmonia-play.1 and harmonia-play-*.1), the completions and units, and the
# config file only while it is the one install wrote (an edited one is kept).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
: "${SWIFT:=$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)}"
: "${PREFIX:=/usr/local}" "${SYSCONFDIR:=/etc}" "${DESTDIR:=}" "${GZIP_MAN:=0}"
: "${ZSH_COMPLETIONS:=$PREFIX/share/zsh/site-functions}"
: "${SYSTEM_UNITS:=$PREFIX/lib/systemd/system}" "${USER_UNITS:=$PREFIX/lib/systemd/user}"
BIN=$PREFIX/bin
MAN1=$PREFIX/share/man/man1
BASH_COMPLETIONS=$PREFIX/share/bash-completion/completions
FISH_COMPLETIONS=$PREFIX/share/fish/vendor_completions.d
CONF=$SYSCONFDIR/harmonia-play.conf
say() { echo "install.sh: $*" >&2; }

# The generated files for `binary`, in `out`: man/*.1, the completions, the
# units and the config file.
generate() {
  local binary=$1 out=$2
  rm -rf "$out" && mkdir -p "$out/man"
  # generate-manual, built from the checkout of the swift-argument-parser
  # this package resolves (the same version as the binary's parser).
  [ -d .build/checkouts/swift-argument-parser ] || "$SWIFT" package resolve >&2
  "$SWIFT" build --package-path .build/checkouts/swift-argument-parser --scratch-path .build/generate-manual \
    --product generate-manual >&2
  local date
  date=$(git log -1 --format=%cs 2>/dev/null || date -u +%F)
  mkdir -p "$out/generated"
  .build/generate-manual/debug/generate-manual "$binary" --multi-page --date "$date" \
    --authors "The HarmoniaCore for Linux authors" --output-directory "$out/generated" >&2
  python3 packaging/manpages.py "$out/generated" "$out/man"
  rm -rf "$out/generated"
  for shell in bash zsh fish; do
    # Sourced, not run: no #! line.
    "$binary" --generate-completion-script "$shell" | sed '1{/^#!/d}' > "$out/completion.$shell"
  done
  for kind in system user; do
    sed -e "s|@BINDIR@|$BIN|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" \
      "packaging/systemd/$kind/harmonia-play.service.in" > "$out/$kind.service"
  done
  python3 packaging/config_template.py "$binary" > "$out/harmonia-play.conf"
}

# BINARY, or the release build (made or brought up to date first).
binary() {
  if [ -n "${BINARY:-}" ]; then
    [ -x "$BINARY" ] || { say "BINARY=$BINARY is not an executable"; exit 1; }
    readlink -f "$BINARY"
  else
    SWIFT="$SWIFT" bash benchmarks/release-build.sh harmonia-play
  fi
}

install_files() {
  local binary generated=$ROOT/.build/install-files
  binary=$(binary)
  generate "$binary" "$generated"
  install -D -m 0755 "$binary" "$DESTDIR$BIN/harmonia-play"
  install -d "$DESTDIR$MAN1"
  for page in "$generated"/man/*.1; do
    install -m 0644 "$page" "$DESTDIR$MAN1/"
    if [ "$GZIP_MAN" = 1 ]; then gzip -9nf "$DESTDIR$MAN1/$(basename "$page")"; fi
  done
  install -D -m 0644 "$generated/completion.bash" "$DESTDIR$BASH_COMPLETIONS/harmonia-play"
  install -D -m 0644 "$generated/completion.zsh" "$DESTDIR$ZSH_COMPLETIONS/_harmonia-play"
  install -D -m 0644 "$generated/completion.fish" "$DESTDIR$FISH_COMPLETIONS/harmonia-play.fish"
  install -D -m 0644 "$generated/system.service" "$DESTDIR$SYSTEM_UNITS/harmonia-play.service"
  install -D -m 0644 "$generated/user.service" "$DESTDIR$USER_UNITS/harmonia-play.service"
  # Readable by its owner alone: it may come to hold a password.
  if [ -e "$DESTDIR$CONF" ]; then
    say "$DESTDIR$CONF exists: kept as it is"
  else
    install -D -m 0600 "$generated/harmonia-play.conf" "$DESTDIR$CONF"
  fi
  say "installed into ${DESTDIR:-/} (PREFIX=$PREFIX)"
}

uninstall_files() {
  local installed=$DESTDIR$BIN/harmonia-play
  # The config file goes only while it is the one install wrote.
  if [ -e "$DESTDIR$CONF" ]; then
    if [ -x "$installed" ] && python3 packaging/config_template.py "$installed" | cmp -s - "$DESTDIR$CONF"; then
      rm -f "$DESTDIR$CONF"
    else
      say "$DESTDIR$CONF was changed since install: kept"
    fi
  fi
  rm -f "$installed" "$DESTDIR$MAN1"/harmonia-play.1{,.gz} "$DESTDIR$MAN1"/harmonia-play-*.1{,.gz} \
    "$DESTDIR$BASH_COMPLETIONS/harmonia-play" "$DESTDIR$ZSH_COMPLETIONS/_harmonia-play" \
    "$DESTDIR$FISH_COMPLETIONS/harmonia-play.fish" \
    "$DESTDIR$SYSTEM_UNITS/harmonia-play.service" "$DESTDIR$USER_UNITS/harmonia-play.service"
  say "removed from ${DESTDIR:-/} (PREFIX=$PREFIX)"
}

case "${1:-}" in
  install) install_files ;;
  uninstall) uninstall_files ;;
  *) echo "usage: packaging/install.sh install|uninstall" >&2; exit 2 ;;
esac
