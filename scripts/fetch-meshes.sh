#!/usr/bin/env bash
# Fetches real 3D meshes for the shapes package's tests and the 3D renders in
# docs/: the OFF/PLY data of Debian's libcgal-demo (downloaded with
# apt-get download and unpacked with dpkg -x, nothing is installed) and the
# npm packages bunny@1.0.1 and teapot@1.0.0 (npm pack; their JavaScript arrays
# are converted to OFF with node). Everything lands in data/meshes/ (ignored by
# git; override with GMCN_MESHES=DIR):
#
#	data/meshes/cgal/*.off, *.ply   CGAL's data/meshes folder
#	data/meshes/npm/bunny.off       Stanford bunny (npm bunny)
#	data/meshes/npm/teapot.off      Utah teapot (npm teapot)
#
# Running it again refetches. Needs apt-get (Debian), dpkg, tar, npm and node.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${GMCN_MESHES:-data/meshes}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# apt-get download writes into the current directory; the _apt sandbox user
# may not be able to, which only produces a warning.
apt-get download libcgal-demo
dpkg -x libcgal-demo_*.deb cgal
mkdir cgaldata
tar xzf cgal/usr/share/doc/libcgal-dev/data.tar.gz -C cgaldata data/meshes
rm -rf "$dest/cgal"
mkdir -p "$dest/cgal"
cp cgaldata/data/meshes/*.off cgaldata/data/meshes/*.ply "$dest/cgal/"

npm pack --silent bunny@1.0.1 teapot@1.0.0 >/dev/null
mkdir -p "$dest/npm"
for spec in bunny-1.0.1:index.js:bunny teapot-1.0.0:teapot.js:teapot; do
	IFS=: read -r tgz js name <<<"$spec"
	mkdir -p "$name"
	tar xzf "$tgz.tgz" -C "$name"
	# Both packages export {positions: [[x,y,z],…], cells: [[i,j,k],…]}.
	node -e '
const m = require(process.argv[1]);
const lines = ["OFF", m.positions.length + " " + m.cells.length + " 0"];
for (const p of m.positions) lines.push(p.join(" "));
for (const c of m.cells) lines.push(c.length + " " + c.join(" "));
process.stdout.write(lines.join("\n") + "\n");
' "$work/$name/package/$js" >"$dest/npm/$name.off"
done

echo "fetch-meshes: $(ls "$dest/cgal" | wc -l) CGAL files and $(ls "$dest/npm" | wc -l) npm meshes in $dest"
