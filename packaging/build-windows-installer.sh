#!/usr/bin/env bash
# The Windows release files, from the Windows build (build-windows.sh, run first):
#   build-windows/ddp-launch-<version>-win64.zip   CPack's ZIP: ddp-launch.exe, README.md, LICENSE, windows.md
#   build-windows/ddp-launch-<version>-setup.exe   the NSIS installer (windows/ddp-launch.nsi; Debian's nsis)
#   build-windows/manifests/{winget,scoop}/…       winget and Scoop manifests (windows/gen-manifests.py)
# <version> is project(VERSION). The installer holds the same staged files as the ZIP. Prints the paths.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-windows}
command -v makensis >/dev/null || { echo "build-windows-installer: makensis is missing (package nsis): run ./packaging/install-deps.sh" >&2; exit 1; }
./packaging/build-windows.sh
version=$(cat "$BUILD_DIR/packaging/version.txt")
pkg="$BUILD_DIR/packaging"

# The staged install tree (stripped), what both the ZIP and the installer hold.
stage="$pkg/stage"
rm -rf "$stage"
cmake --install "$BUILD_DIR" --prefix "$stage" --strip >/dev/null
(cd "$BUILD_DIR" && cpack -G ZIP --config CPackConfig.cmake >/dev/null)
zip="$BUILD_DIR/ddp-launch-$version-win64.zip"
[ -f "$zip" ] || { echo "build-windows-installer: cpack made no $zip" >&2; exit 1; }

# The installer's File lines and the uninstaller's Delete lines: exactly the staged files.
files="$pkg/files.nsh"
{
  echo "!macro FILE_LIST"
  (cd "$stage" && find . -type f | LC_ALL=C sort) | while read -r f; do
    f=${f#./}
    dir=$(dirname "$f")
    if [ "$dir" = . ]; then echo "  SetOutPath \"\$INSTDIR\""; else echo "  SetOutPath \"\$INSTDIR\\${dir//\//\\}\""; fi
    echo "  File \"$(realpath "$stage/$f")\""
  done
  echo "  SetOutPath \"\$INSTDIR\""
  echo "!macroend"
  echo "!macro UNFILE_LIST"
  (cd "$stage" && find . -type f | LC_ALL=C sort) | while read -r f; do
    f=${f#./}
    echo "  Delete \"\$INSTDIR\\${f//\//\\}\""
  done
  (cd "$stage" && find . -mindepth 1 -type d | LC_ALL=C sort -r) | while read -r d; do
    d=${d#./}
    echo "  RMDir \"\$INSTDIR\\${d//\//\\}\""
  done
  echo "!macroend"
} >"$files"
setup="$BUILD_DIR/ddp-launch-$version-setup.exe"
makensis -V2 -NOCD -DVERSION="$version" -DSTAGE="$(realpath "$stage")" -DOUTFILE="$(realpath "$BUILD_DIR")/ddp-launch-$version-setup.exe" \
  -DFILES="$(realpath "$files")" packaging/windows/ddp-launch.nsi >"$pkg/makensis.log" 2>&1 ||
  { cat "$pkg/makensis.log" >&2; echo "build-windows-installer: makensis failed" >&2; exit 1; }

/usr/bin/python3 packaging/windows/gen-manifests.py --build-dir "$BUILD_DIR" >"$pkg/manifests.txt"
echo "$zip"
echo "$setup"
cat "$pkg/manifests.txt"
