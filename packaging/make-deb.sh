#!/usr/bin/env bash
# `make deb`: harmonia-play_VERSION_ARCH.deb in the current folder, its path
# printed last. The tree is packaging/install.sh's with PREFIX=/usr (units
# where this Debian keeps them, zsh's completion in vendor-completions,
# pages gzipped), the binary stripped (its symbols kept beside the package
# in .build/deb/harmonia-play.debug), /etc/harmonia-play.conf a conffile,
# copyright and changelog.Debian.gz in /usr/share/doc/harmonia-play, Depends
# from dpkg-shlibdeps (the libraries the binary links: the Swift runtime is
# in it, so no toolchain), and maintainer scripts that stop and disable the
# system service on removal and delete its state on purge.
# Settings: BINARY (empty: the release build), DEBFULLNAME and DEBEMAIL (the
# Maintainer; default: the last commit's author), DEB_DIR (the package's folder,
# default: here), SHLIBDEPS_FLAGS (make test-install's debug binary links the
# toolchain's Swift libraries, which no package provides: --ignore-missing-info).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
: "${DEB_DIR:=$ROOT}" "${SHLIBDEPS_FLAGS:=}"
base=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/HarmoniaCore/Support/Version.swift)
# A build of a commit after the release is newer than the release (+git DATE.HASH).
# -1: the Debian revision (the packaging is not upstream's source package).
if commit=$(git rev-parse --short=7 HEAD 2>/dev/null); then
  VERSION="$base+git$(git log -1 --format=%cd --date=format:%Y%m%d).$commit-1"
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
else
  VERSION=$base-1
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
fi
ARCH=$(dpkg --print-architecture)
# Who builds it, as Debian's tools take it (DEBFULLNAME, DEBEMAIL), else the last commit's author.
MAINTAINER="${DEBFULLNAME:-$(git log -1 --format=%an 2>/dev/null || echo harmonia-play)} <${DEBEMAIL:-$(git log -1 --format=%ae 2>/dev/null || echo root@localhost)}>"
NAME=harmonia-play_${VERSION}_$ARCH
WORK=$ROOT/.build/deb
TREE=$WORK/$NAME
rm -rf "$TREE" && mkdir -p "$TREE"

unitdir() { pkg-config --variable="$1" systemd 2>/dev/null || echo "$2"; }
DESTDIR=$TREE PREFIX=/usr SYSCONFDIR=/etc GZIP_MAN=1 ZSH_COMPLETIONS=/usr/share/zsh/vendor-completions \
  SYSTEM_UNITS=$(unitdir systemdsystemunitdir /lib/systemd/system) \
  USER_UNITS=$(unitdir systemduserunitdir /usr/lib/systemd/user) \
  bash packaging/install.sh install
# A conffile is replaced only when unchanged, so the package's is readable by
# root alone from the start: the system service reads it as a credential.
chmod 0600 "$TREE/etc/harmonia-play.conf"

# Stripped as Debian ships binaries; the symbols beside the package.
objcopy --only-keep-debug "$TREE/usr/bin/harmonia-play" "$WORK/harmonia-play.debug"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$TREE/usr/bin/harmonia-play"

DOC=$TREE/usr/share/doc/harmonia-play
install -d -m 0755 "$DOC"
{
  echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
  echo "Upstream-Name: HarmoniaCore for Linux"
  echo
  echo "Files: *"
  echo "Copyright: $(sed -n 's/^Copyright (c) //p' LICENSE)"
  echo "License: Expat"
  echo
  echo "License: Expat"
  sed -n '/^Permission is hereby granted/,$p' LICENSE | sed -e 's/^$/./' -e 's/^/ /'
} > "$DOC/copyright"
{
  echo "harmonia-play ($VERSION) unstable; urgency=medium"
  echo
  echo "  * Built from the HarmoniaCore for Linux source tree ($(git log -1 --format=%h 2>/dev/null || echo unknown));"
  echo "    the project's changes are in its CHANGELOG.md."
  echo
  echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$DOC/changelog.Debian.gz"
gzip -9n < CHANGELOG.md > "$DOC/changelog.gz"
chmod 0644 "$DOC"/*

# Depends: what the binary's libraries come from, by dpkg-shlibdeps (it reads
# debian/control of a scratch source folder).
mkdir -p "$WORK/shlibs/debian"
printf 'Source: harmonia-play\n\nPackage: harmonia-play\nArchitecture: any\n' > "$WORK/shlibs/debian/control"
# shellcheck disable=SC2086
depends=$(cd "$WORK/shlibs" && dpkg-shlibdeps $SHLIBDEPS_FLAGS -O "$TREE/usr/bin/harmonia-play" 2>"$WORK/shlibdeps.log" \
  | sed -n 's/^shlibs:Depends=//p') || { cat "$WORK/shlibdeps.log" >&2; exit 1; }

install -d -m 0755 "$TREE/DEBIAN"
cat > "$TREE/DEBIAN/control" <<EOF
Package: harmonia-play
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$TREE" | cut -f1)
Depends: $depends
Section: sound
Priority: optional
Description: headless music player and music server (MPD protocol)
 harmonia-play plays files, streams and playlists gapless from the command
 line, and 'harmonia-play serve' is a music server on a library of a music
 folder: MPD's clients (mpc, ncmpcpp, phone apps), a web remote and UPnP/DLNA
 control points drive it.
 .
 The package has the program, its manual pages and shell completions, a
 system service (harmonia-play.service, options in /etc/harmonia-play.conf)
 and a user service (systemctl --user enable --now harmonia-play).
EOF
echo /etc/harmonia-play.conf > "$TREE/DEBIAN/conffiles"
install -m 0755 packaging/debian/prerm packaging/debian/postrm "$TREE/DEBIAN/"
(cd "$TREE" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\n' | LC_ALL=C sort \
  | xargs -d '\n' md5sum) > "$TREE/DEBIAN/md5sums"
chmod 0644 "$TREE/DEBIAN/md5sums" "$TREE/DEBIAN/control" "$TREE/DEBIAN/conffiles"

mkdir -p "$DEB_DIR"
dpkg-deb --root-owner-group -Zxz --build "$TREE" "$DEB_DIR/$NAME.deb" >&2
echo "$DEB_DIR/$NAME.deb"
