#!/usr/bin/env bash
# Refreshes the vendored uPlot of the gateway page (web/static/vendor/uplot)
# from the npm registry at the pinned version, after checking the package
# against the pinned npm integrity (sha512), and writes SHA256SUMS of the
# vendored files (web's TestVendoredHashes checks them offline).
#
#   scripts/vendor-uplot.sh           # fetch, verify, copy, write SHA256SUMS
#   scripts/vendor-uplot.sh --check   # fetch, verify, fail if the copy differs
#
# A new version: change VERSION and INTEGRITY (npm view uplot@X dist.integrity)
# after reading its changelog, run the script, run the browser test.
# Needs npm (the package is fetched with "npm pack"), openssl, tar, sha256sum.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=1.6.32
INTEGRITY=sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
FILES=(dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE)
DEST=web/static/vendor/uplot

check=false
case "${1:-}" in
	--check) check=true ;;
	"") ;;
	*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null)
tgz="$tmp/uplot-$VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	echo "uplot@$VERSION: integrity $got, pinned $INTEGRITY" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp"

status=0
for f in "${FILES[@]}"; do
	name=$(basename "$f")
	if $check; then
		if ! cmp -s "$tmp/package/$f" "$DEST/$name"; then
			echo "$DEST/$name differs from uplot@$VERSION's $f" >&2
			status=1
		fi
	else
		mkdir -p "$DEST"
		cp "$tmp/package/$f" "$DEST/$name"
	fi
done
if $check; then
	(cd "$DEST" && sha256sum -c --quiet SHA256SUMS) || status=1
	[ $status -eq 0 ] && echo "$DEST matches uplot@$VERSION"
	exit $status
fi
{
	echo "# uplot@$VERSION from the npm registry, $INTEGRITY; written by scripts/vendor-uplot.sh"
	(cd "$DEST" && sha256sum "${FILES[@]##*/}")
} > "$DEST/SHA256SUMS"
go generate ./web # the embedded gzipped copies (web/gz)
echo "vendored uplot@$VERSION into $DEST"
