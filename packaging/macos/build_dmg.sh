#!/usr/bin/env bash
# Package dist/Duplens.app into Duplens-<version>.dmg, then sign and notarise it if the
# secrets are set (skipped, with a note, when they are not: an unsigned dmg still opens after
# right-click > Open).
#
#   packaging/macos/build_dmg.sh 0.1.0
#
# Environment (all optional; CI maps them from repository secrets):
#   DUPLENS_CODESIGN_IDENTITY  "Developer ID Application: Name (TEAMID)", in the keychain
#                              (the spec already signed the app with it, hardened runtime)
#   APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD   an app-specific password for notarytool
set -euo pipefail

VERSION="${1:?usage: build_dmg.sh VERSION}"
HERE="$(cd "$(dirname "$0")" && pwd)"
DIST="$HERE/../dist"
APP="$DIST/Duplens.app"
DMG="$DIST/Duplens-$VERSION.dmg"
IDENTITY="${DUPLENS_CODESIGN_IDENTITY:-}"

[[ -d "$APP" ]] || { echo "no $APP: run pyinstaller packaging/duplens.spec first" >&2; exit 2; }
plutil -lint "$APP/Contents/Info.plist"

if [[ -n "$IDENTITY" ]]; then
    # PyInstaller signed each binary and the bundle; check it before shipping it.
    codesign --verify --deep --strict --verbose=2 "$APP"
else
    echo "DUPLENS_CODESIGN_IDENTITY not set: the app keeps PyInstaller's ad-hoc signature"
fi

# The dmg holds the app and a link to /Applications, so installing is one drag.
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
rm -f "$DMG"
hdiutil create -volname "Duplens $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO \
    -ov "$DMG"

if [[ -n "$IDENTITY" ]]; then
    codesign --force --sign "$IDENTITY" --timestamp "$DMG"
fi
if [[ -n "$IDENTITY" && -n "${APPLE_ID:-}" && -n "${APPLE_TEAM_ID:-}" && \
      -n "${APPLE_APP_PASSWORD:-}" ]]; then
    xcrun notarytool submit "$DMG" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
        --password "$APPLE_APP_PASSWORD" --wait
    xcrun stapler staple "$DMG"
    xcrun stapler validate "$DMG"
else
    echo "notarisation skipped: needs DUPLENS_CODESIGN_IDENTITY, APPLE_ID, APPLE_TEAM_ID and" \
         "APPLE_APP_PASSWORD"
fi
echo "built $DMG ($(du -h "$DMG" | cut -f1))"
