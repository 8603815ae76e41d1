#!/bin/sh
# Seeds the fuzz corpora from the golden frames in ../tests/golden, so the
# fuzzers start from valid messages instead of rediscovering the format:
# decode_message gets each payload, frame_stream each frame behind three
# control bytes (maximum frame 4096, chunk seed 7; see fuzzing.rs).
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/decode_message corpus/frame_stream
for hex in ../tests/golden/*.hex; do
    name=$(basename "$hex" .hex)
    frame=$(grep -v '^#' "$hex" | tr -d ' \n')
    printf '%s' "$frame" | cut -c9- | xxd -r -p > "corpus/decode_message/$name"
    printf 'ff0f07%s' "$frame" | xxd -r -p > "corpus/frame_stream/$name"
done
echo "seeded $(ls corpus/decode_message | wc -l) payloads and frames"
